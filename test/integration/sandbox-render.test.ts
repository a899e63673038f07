import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fontFile, isRecentFfmpegVersion, resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { imageDimensions, videoDimensions } from '../../src/jobs/providers/sandbox/dimensions.ts';
import {
  createSandboxRenderer,
  RenderError,
  type SandboxRenderer,
} from '../../src/jobs/providers/sandbox/render.ts';
import { probeMedia, type ProbedMedia } from '../helpers/ffprobe.ts';

const { ffmpeg } = resolveFfmpeg({
  ffmpegPath: process.env.FFMPEG_PATH,
  ffprobePath: process.env.FFPROBE_PATH,
});
/**
 * CPU time of this process's reaped children so far, in seconds: an ffmpeg's own, read before it starts and after
 * it ended (the tests of this file run one at a time).
 */
function childrenCpuS(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100; // cutime + cstime, in clock ticks of 10 ms
}

const TRICKY_PROMPT = `He said "it's 50% off": C:\\temp\\new %{pts} %{unknown:x} [a];b,c\nline two\\n 'quoted' \\'`;

let dir: string;
let renderer: SandboxRenderer;

/** Files the renderer left in `dir` (outputs the caller owns, and any scratch directory it forgot). */
async function leftovers(): Promise<string[]> {
  return (await readdir(dir)).sort();
}

/** The niceness of each ffmpeg child of this process, read from /proc (what really runs). */
function ffmpegNiceness(): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [, comm, rest] = /^\d+ \((.*)\) (.*)$/s.exec(stat) ?? [];
      // After the command name: state, ppid, … and the niceness 17 fields on (proc(5)).
      const fields = rest?.split(' ') ?? [];
      if (comm === 'ffmpeg' && Number(fields[1]) === process.pid) found.push(Number(fields[16]));
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}

/** ffmpeg children of this process (not what the renderer reports). */
const ffmpegChildren = () => ffmpegNiceness().length;

function videoStreams(media: ProbedMedia) {
  return media.streams.filter((s) => s.codecType === 'video');
}

function audioStreams(media: ProbedMedia) {
  return media.streams.filter((s) => s.codecType === 'audio');
}

async function assertVideo(
  path: string,
  expected: { durationSeconds: number; width: number; height: number; audio: boolean },
): Promise<void> {
  const media = await probeMedia(path);
  assert.match(media.format, /mp4/);
  assert.ok(
    Math.abs(media.durationSeconds - expected.durationSeconds) <= 0.1,
    `duration ${media.durationSeconds}, expected ${expected.durationSeconds}`,
  );
  const [video, ...more] = videoStreams(media);
  assert.equal(more.length, 0);
  assert.deepEqual(video, {
    codecType: 'video',
    codecName: 'h264',
    width: expected.width,
    height: expected.height,
  });
  if (expected.audio) assert.deepEqual(audioStreams(media), [{ codecType: 'audio', codecName: 'aac' }]);
  else assert.deepEqual(audioStreams(media), [], 'a video without audio has no audio stream');
}

async function assertPng(path: string, width: number, height: number): Promise<void> {
  const media = await probeMedia(path);
  assert.deepEqual(media.streams, [{ codecType: 'video', codecName: 'png', width, height }]);
  assert.deepEqual(
    [...(await readFile(path)).subarray(0, 8)],
    [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
  );
}

describe('sandbox renderer (real ffmpeg)', () => {
  before(async () => {
    // Quotes, brackets, commas, semicolons and colons in the directory exercise the filter-graph escaping of
    // every path ffmpeg is given (caption text file, inputs, outputs).
    dir = await mkdtemp(join(tmpdir(), "mf render's [dir], a;b:c "));
    renderer = createSandboxRenderer({ ffmpegPath: ffmpeg, concurrency: 2, tmpDir: dir });
  });

  after(async () => {
    await renderer.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('renders a 15 s 720p 16:9 H.264 video with an AAC track, quickly', async () => {
    const size = videoDimensions('720p', '16:9');
    const started = Date.now();
    const cpuBefore = childrenCpuS();
    const path = await renderer.video({
      prompt: 'a lighthouse at dawn',
      durationSeconds: 15,
      ...size,
      audio: true,
      seed: 1,
    });
    const cpu = childrenCpuS() - cpuBefore;
    const elapsed = Date.now() - started;
    await assertVideo(path, { durationSeconds: 15, ...size, audio: true });
    assert.deepEqual(await leftovers(), [path.slice(dir.length + 1)], 'only the output is left behind');
    await rm(path);
    // Judged on the render's CPU time, not the wall clock: renders run niced, and on a shared machine a niced
    // ffmpeg waits behind every other process (38 s of wall seen for 2.5 s of CPU). On an idle machine 20 s of
    // wall is at least 20 s of CPU, so this is no looser than a 20 s wall-clock budget there.
    assert.ok(cpu < 20, `took ${cpu.toFixed(2)} s of CPU (${elapsed} ms of wall)`);
  });

  it('runs ffmpeg below the service’s CPU priority', async () => {
    const rendering = renderer.video({
      prompt: 'nice',
      durationSeconds: 6,
      width: 1280,
      height: 720,
      audio: true,
      seed: 3,
    });
    let seen: number[] = [];
    while (seen.length === 0) {
      seen = ffmpegNiceness();
      await sleep(5);
    }
    await rm(await rendering);
    assert.deepEqual(seen, [10]);
  });

  it('renders a video without audio with no audio stream at all', async () => {
    const size = videoDimensions('480p', '9:16');
    const path = await renderer.video({
      prompt: 'vertical',
      durationSeconds: 4,
      ...size,
      audio: false,
      seed: 2,
    });
    await assertVideo(path, { durationSeconds: 4, width: 480, height: 854, audio: false });
    await rm(path);
  });

  it('zooms over a real PNG for image-to-video', async () => {
    const [still] = await renderer.images({
      prompt: 'the first frame',
      width: 1024,
      height: 768,
      count: 1,
      seed: 5,
      references: [],
    });
    const size = videoDimensions('720p', '9:16');
    const path = await renderer.video({
      prompt: 'make it move',
      durationSeconds: 5,
      ...size,
      audio: true,
      seed: 5,
      image: await readFile(still!),
    });
    await assertVideo(path, { durationSeconds: 5, ...size, audio: true });
    await rm(path);
    await rm(still!);
  });

  it('renders count PNGs of the requested size, each different', async () => {
    const size = imageDimensions('16:9');
    const paths = await renderer.images({ prompt: 'a red fox', ...size, count: 3, seed: 9, references: [] });
    assert.equal(paths.length, 3);
    assert.equal(new Set(paths).size, 3);
    for (const path of paths) await assertPng(path, 1024, 576);
    const contents = await Promise.all(paths.map((path) => readFile(path, 'base64')));
    assert.equal(new Set(contents).size, 3, 'each image has its own seeded background');
    await Promise.all(paths.map((path) => rm(path)));
  });

  it('composites two reference images in edit mode', async () => {
    const references = await renderer.images({
      prompt: 'reference',
      width: 640,
      height: 480,
      count: 2,
      seed: 3,
      references: [],
    });
    const [a, b] = await Promise.all(references.map((path) => readFile(path)));
    const size = imageDimensions('3:4');
    const edit = { prompt: 'put them together', ...size, count: 1, seed: 4 };
    const [edited, ...rest] = await renderer.images({ ...edit, references: [a!, b!] });
    assert.equal(rest.length, 0);
    await assertPng(edited!, 768, 1024);
    // Same layout, prompt and seed: only the second reference differs, so only compositing can tell them apart.
    const [twice] = await renderer.images({ ...edit, references: [a!, a!] });
    assert.notDeepEqual(
      await readFile(edited!),
      await readFile(twice!),
      'the second reference is not in the picture',
    );
    await Promise.all([...references, edited!, twice!].map((path) => rm(path)));
  });

  it('rejects a corrupt input image with a short message and ffmpeg details, leaving no files', async () => {
    const png = await renderer.images({
      prompt: 'x',
      width: 320,
      height: 240,
      count: 1,
      seed: 1,
      references: [],
    });
    const truncated = (await readFile(png[0]!)).subarray(0, 200);
    await rm(png[0]!);
    const size = videoDimensions('480p', '1:1');
    for (const image of [truncated, Buffer.from('not an image at all'), Buffer.alloc(0)]) {
      const error = await renderer
        .video({ prompt: 'broken', durationSeconds: 4, ...size, audio: false, seed: 1, image })
        .then(
          () => assert.fail('a corrupt image rendered'),
          (e: unknown) => e,
        );
      assert.ok(error instanceof RenderError);
      assert.equal(error.message, 'video render failed: the input image could not be decoded');
      assert.ok(error.details.length > 0 && !error.message.includes('\n'));
    }
    await assert.rejects(
      renderer.images({
        prompt: 'edit',
        width: 512,
        height: 512,
        count: 2,
        seed: 1,
        references: [truncated],
      }),
      { name: 'RenderError', message: 'image render failed: a reference image could not be decoded' },
    );
    assert.deepEqual(await leftovers(), []);
  });

  it('renders a prompt with quotes, colons, backslashes, %{...} and newlines', async () => {
    const size = videoDimensions('480p', '16:9');
    const video = await renderer.video({
      prompt: TRICKY_PROMPT,
      durationSeconds: 4,
      ...size,
      audio: false,
      seed: 6,
    });
    await assertVideo(video, { durationSeconds: 4, ...size, audio: false });
    const [image] = await renderer.images({
      prompt: TRICKY_PROMPT,
      width: 512,
      height: 512,
      count: 1,
      seed: 6,
      references: [],
    });
    await assertPng(image!, 512, 512);
    await Promise.all([rm(video), rm(image!)]);
  });

  it('draws %{...} and backslashes as typed instead of expanding them', async () => {
    const draw = async (prompt: string) => {
      const [path] = await renderer.images({
        prompt,
        width: 320,
        height: 240,
        count: 1,
        seed: 8,
        references: [],
      });
      const bytes = await readFile(path!);
      await rm(path!);
      return bytes;
    };
    // With expansion, `%{n}` (the frame number) would draw exactly what `0` draws, and `\\` what `\` draws.
    assert.notDeepEqual(await draw('%{n}'), await draw('0'));
    assert.notDeepEqual(await draw('a\\\\b'), await draw('a\\b'));
    assert.deepEqual(await draw('same'), await draw('same'), 'renders are deterministic');
  });

  it('refuses an odd frame size before starting ffmpeg', async () => {
    await assert.rejects(
      renderer.video({ prompt: 'x', durationSeconds: 4, width: 853, height: 480, audio: false, seed: 1 }),
      { name: 'RenderError', message: /width must be an even integer/ },
    );
    assert.equal(renderer.running, 0);
  });

  it('runs at most `concurrency` ffmpeg processes, queueing the rest in order', async () => {
    const serial = createSandboxRenderer({ ffmpegPath: ffmpeg, concurrency: 1, tmpDir: dir });
    const spec = {
      prompt: 'one at a time',
      durationSeconds: 6,
      width: 1280,
      height: 720,
      audio: true,
      seed: 1,
    };
    const finished: string[] = [];
    const first = serial.video(spec).then((path) => (finished.push('first'), path));
    const second = serial.video({ ...spec, seed: 2 }).then((path) => (finished.push('second'), path));
    assert.equal(serial.running, 1);
    assert.equal(serial.queued, 1);
    let most = 0;
    let sawQueued = false;
    let done = false;
    const watching = (async () => {
      while (!done) {
        most = Math.max(most, ffmpegChildren());
        if (serial.queued === 1 && ffmpegChildren() === 1) sawQueued = true;
        await sleep(5);
      }
    })();
    const paths = await Promise.all([first, second]);
    done = true;
    await watching;
    assert.equal(most, 1, 'two ffmpeg processes ran at once');
    assert.ok(sawQueued, 'the second render waited while the first ffmpeg ran');
    assert.deepEqual(finished, ['first', 'second']);
    assert.equal(serial.running, 0);
    assert.equal(serial.queued, 0);
    await serial.close();
    await Promise.all(paths.map((path) => rm(path)));
  });

  it('close() kills the running ffmpeg and rejects queued renders', async () => {
    const closing = createSandboxRenderer({ ffmpegPath: ffmpeg, concurrency: 1, tmpDir: dir });
    const long = { prompt: 'long', durationSeconds: 300, width: 1280, height: 720, audio: true, seed: 1 };
    const running = closing.video(long);
    const waiting = closing.images({
      prompt: 'later',
      width: 512,
      height: 512,
      count: 1,
      seed: 1,
      references: [],
    });
    while (ffmpegChildren() === 0) await sleep(5);
    const started = Date.now();
    await closing.close();
    assert.ok(Date.now() - started < 3000, 'close() waited for a long render instead of killing it');
    await assert.rejects(running, { name: 'RenderError', message: /closed/ });
    await assert.rejects(waiting, { name: 'RenderError', message: /closed/ });
    assert.equal(ffmpegChildren(), 0);
    assert.equal(closing.running, 0);
    assert.equal(closing.queued, 0);
    await assert.rejects(closing.video({ ...long, durationSeconds: 4 }), /closed/);
    assert.deepEqual(await leftovers(), [], 'the killed render left no partial output');
  });

  it('stops a cancelled render: a running ffmpeg is killed, a queued one leaves the queue without running', async () => {
    const cancelling = createSandboxRenderer({ ffmpegPath: ffmpeg, concurrency: 1, tmpDir: dir });
    const long = { prompt: 'long', durationSeconds: 300, width: 1280, height: 720, audio: true, seed: 1 };
    const runningControl = new AbortController();
    const queuedControl = new AbortController();
    const running = cancelling.video(long, runningControl.signal);
    const queued = cancelling.video({ ...long, seed: 2 }, queuedControl.signal);
    const after = cancelling.images({
      prompt: 'after',
      width: 64,
      height: 64,
      count: 1,
      seed: 1,
      references: [],
    });
    while (ffmpegChildren() === 0) await sleep(5);
    assert.equal(cancelling.queued, 2);
    queuedControl.abort();
    await assert.rejects(queued, { name: 'RenderError', message: /cancelled/ });
    assert.equal(cancelling.queued, 1, 'the cancelled render left the queue at once');
    const started = Date.now();
    runningControl.abort();
    await assert.rejects(running, { name: 'RenderError', message: /cancelled/ });
    assert.ok(Date.now() - started < 3000, 'the running ffmpeg was not killed');
    const [png] = await after; // the slot went to the next render in line
    assert.ok(png);
    await rm(png);
    assert.equal(cancelling.running, 0);
    assert.equal(cancelling.queued, 0);
    await assert.rejects(cancelling.video(long, AbortSignal.abort()), /cancelled/);
    await cancelling.close();
    assert.deepEqual(await leftovers(), [], 'the cancelled renders left no files');
  });

  it('kills an ffmpeg that runs past its time limit', async () => {
    const limited = createSandboxRenderer({
      ffmpegPath: ffmpeg,
      concurrency: 1,
      tmpDir: dir,
      timeoutMs: 300,
    });
    const spec = { prompt: 'slow', durationSeconds: 300, width: 1280, height: 720, audio: false, seed: 1 };
    const error = await limited.video(spec).then(
      () => assert.fail('a 300 s render finished within 300 ms'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof RenderError);
    assert.equal(error.message, 'video render timed out after 300 ms');
    assert.equal(ffmpegChildren(), 0);
    assert.deepEqual(await leftovers(), []);
    await limited.close();
  });

  it('rejects readably when the ffmpeg binary does not exist', async () => {
    const missing = createSandboxRenderer({
      ffmpegPath: join(dir, 'no-such-ffmpeg'),
      concurrency: 1,
      tmpDir: dir,
    });
    await assert.rejects(
      missing.images({ prompt: 'x', width: 64, height: 64, count: 1, seed: 1, references: [] }),
      {
        name: 'RenderError',
        message: 'image render failed: ffmpeg could not be started',
        details: /ENOENT/,
      },
    );
    assert.equal(missing.running, 0);
    assert.deepEqual(await leftovers(), []);
    await missing.close();
  });

  it('renders the same media with the 2018 @ffmpeg-installer build', async () => {
    const installer = createRequire(import.meta.url)('@ffmpeg-installer/ffmpeg') as { path: string };
    const old = createSandboxRenderer({ ffmpegPath: installer.path, concurrency: 1, tmpDir: dir });
    try {
      const [reference] = await old.images({
        prompt: TRICKY_PROMPT,
        width: 640,
        height: 480,
        count: 1,
        seed: 2,
        references: [],
      });
      await assertPng(reference!, 640, 480);
      const [edited] = await old.images({
        prompt: 'edit',
        width: 576,
        height: 1024,
        count: 1,
        seed: 2,
        references: [await readFile(reference!)],
      });
      await assertPng(edited!, 576, 1024);
      const video = await old.video({
        prompt: TRICKY_PROMPT,
        durationSeconds: 4,
        width: 854,
        height: 480,
        audio: true,
        seed: 2,
        image: await readFile(reference!),
      });
      await assertVideo(video, { durationSeconds: 4, width: 854, height: 480, audio: true });
      await Promise.all([reference!, edited!, video].map((path) => rm(path)));
    } finally {
      await old.close();
    }
  });
});

describe('resolveFfmpeg and fontFile', () => {
  it('uses explicit paths first', () => {
    assert.deepEqual(resolveFfmpeg({ ffmpegPath: '/opt/a/ffmpeg', ffprobePath: '/opt/b/ffprobe' }), {
      ffmpeg: '/opt/a/ffmpeg',
      ffprobe: '/opt/b/ffprobe',
    });
  });

  it('takes the ffprobe that sits next to an explicit ffmpeg', async () => {
    const bin = await mkdtemp(join(tmpdir(), 'mf-bin-'));
    try {
      await symlink(
        createRequire(import.meta.url)('@ffmpeg-installer/ffmpeg').path as string,
        join(bin, 'ffmpeg'),
      );
      await symlink(
        createRequire(import.meta.url)('@ffprobe-installer/ffprobe').path as string,
        join(bin, 'ffprobe'),
      );
      assert.deepEqual(resolveFfmpeg({ ffmpegPath: join(bin, 'ffmpeg') }), {
        ffmpeg: join(bin, 'ffmpeg'),
        ffprobe: join(bin, 'ffprobe'),
      });
    } finally {
      await rm(bin, { recursive: true, force: true });
    }
  });

  it('resolves binaries that run, an ffmpeg 5 or newer when one is on PATH', () => {
    const found = resolveFfmpeg();
    const banner = execFileSync(found.ffmpeg, ['-version'], { encoding: 'utf8' });
    assert.match(execFileSync(found.ffprobe, ['-version'], { encoding: 'utf8' }), /^ffprobe version/);
    let onPath = '';
    try {
      onPath = execFileSync('ffmpeg', ['-version'], { encoding: 'utf8' });
    } catch {
      // no system ffmpeg: the packaged one is the answer
    }
    if (isRecentFfmpegVersion(onPath)) assert.equal(found.ffmpeg, 'ffmpeg');
    assert.match(banner, /^ffmpeg version/);
  });

  it('tells ffmpeg 5+ releases and snapshots from older builds', () => {
    assert.equal(isRecentFfmpegVersion('ffmpeg version 5.1.9-0+deb12u1 Copyright'), true);
    assert.equal(isRecentFfmpegVersion('ffmpeg version n6.0 Copyright'), true);
    assert.equal(isRecentFfmpegVersion('ffmpeg version 7.1-static https://johnvansickle.com'), true);
    assert.equal(isRecentFfmpegVersion('ffmpeg version 4.4.2-0ubuntu0.22.04.1'), false);
    const snapshot = (count: number, year: number) =>
      `ffmpeg version N-${count}-g0e8eb07980-static https://johnvansickle.com/ffmpeg/  Copyright (c) 2000-${year} the FFmpeg developers`;
    assert.equal(isRecentFfmpegVersion(snapshot(47683, 2018)), false);
    assert.equal(isRecentFfmpegVersion(snapshot(66595, 2023)), true);
    assert.equal(isRecentFfmpegVersion('ffmpeg version N-112233-gabc'), false);
    assert.equal(isRecentFfmpegVersion('something else'), false);
  });

  it('finds the packaged DejaVu Sans TrueType font', () => {
    const path = fontFile();
    assert.match(path, /dejavu-fonts-ttf\/ttf\/DejaVuSans\.ttf$/);
    assert.deepEqual([...readFileSync(path).subarray(0, 4)], [0, 1, 0, 0]);
  });
});
