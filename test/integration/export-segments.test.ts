// An export rendered in segments against the whole-timeline render of the same plan, both by real ffmpeg
// and judged on the decoded files: the same frame count and duration, every frame within 40 dB PSNR of the
// reference (the minimum over frames, not the average), and the sound present, as long and starting where it
// does in the reference. Encoded losslessly both ways, the two are identical frame for frame: the segments'
// graphs make the whole render's very frames, and what PSNR measures above is only the encoder's noise. The plan is small (640×360, 6 s) but has every kind of segment: cuts, a transition,
// a text over a cut, a moving still and a video at speed 1.5 with sound of its own.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { exportCommand, exportFiles } from '../../workers/export/command.ts';
import { segmentGraph, segmentedCommands } from '../../workers/export/segment-command.ts';
import { canSegment, planSegments } from '../../workers/export/segments.ts';
import type { ExportPlan, ExportSource } from '../../workers/export/work-order.ts';
import { runFfmpeg } from '../../workers/ffmpeg/runner.ts';
import { makeStill, makeTestVideo, pictureClip, stillSource, videoSource } from '../helpers/export-media.ts';
import {
  ffmpeg,
  ffmpegRun,
  ffprobe,
  framePsnr,
  frameTimes,
  probeFile,
  soundSpans,
  topLevelAtoms,
  type ProbedStream,
} from '../helpers/media-analysis.ts';

const FPS = 30;
let dir: string;
let card: ExportSource;
let blue: ExportSource;
let moving: ExportSource;
let music: ExportSource;

/** Runs one command through the export's runner (not niced: the test waits for it). */
async function ffmpegStep(args: string[]): Promise<void> {
  const result = await runFfmpeg({ ffmpegPath: ffmpeg, args, timeoutMs: 60_000, niceness: 0 });
  assert.ok(result.ok, `ffmpeg failed: ${JSON.stringify(result)}`);
}

/**
 * 0–1.5 s a zooming still; 1.0–3.0 s the test video at speed 1.5 coming in by a 0.5 s cross-fade; 3.0–4.5 s a
 * blue card by a cut; 4.5–6.0 s the video again by a cut; a title from 4.0 to 5.2 s over the last cut; music
 * from 0.5 s.
 */
function timeline(path: string): ExportPlan {
  return {
    picture: [
      pictureClip(card, 1.5, { motion: 'zoom_in' }),
      pictureClip(moving, 2, {
        speed: 1.5,
        trimStartSec: 0.5,
        transitionIn: { type: 'fade', durationSec: 0.5 },
      }),
      pictureClip(blue, 1.5),
      pictureClip(moving, 1.5, { trimStartSec: 3 }),
    ],
    sounds: [{ source: music, track: 'music', startSec: 0.5, trimStartSec: 0, durationSec: 4, volume: 0.5 }],
    texts: [
      {
        text: 'SEGMENTS',
        style: 'title',
        position: 'center',
        color: '#FFFFFF',
        background: 'none',
        startSec: 4,
        durationSec: 1.2,
        fadeInSec: 0.3,
        fadeOutSec: 0.3,
      },
    ],
    output: { width: 640, height: 360, fps: FPS, fit: 'fit', quality: 'final', path },
    // No measuring pass: the loudness stage is the same in both renders and not what is compared here.
    filters: { loudnorm: false, sidechaincompress: false },
  };
}

/**
 * Cuts only (the whole render joins them with one `concat`, whose clock is in microseconds), on fractional
 * durations (30, 31 and 30 frames), the first clip fading in from black, a video at half speed, and two texts
 * over the cuts.
 */
function cutsOnly(path: string): ExportPlan {
  const title = (startSec: number, durationSec: number, style: 'title' | 'caption') => ({
    text: style === 'title' ? 'CUTS' : 'a caption',
    style,
    position: 'center' as const,
    color: '#FFEE00',
    background: style === 'title' ? ('none' as const) : ('box' as const),
    startSec,
    durationSec,
    // The caption appears at once: its first frame shows it fully, or not at all.
    fadeInSec: style === 'title' ? 0.3 : 0,
    fadeOutSec: 0.3,
  });
  return {
    ...timeline(path),
    picture: [
      pictureClip(card, 1.01, { transitionIn: { type: 'fadeblack', durationSec: 0.4 } }),
      pictureClip(moving, 1.01, { speed: 0.5, trimStartSec: 1 }),
      pictureClip(blue, 1.01),
    ],
    sounds: [],
    // The caption starts on frame 32, whose time the concat's clock rounds up (1066667 µs): drawn from that
    // frame in the whole render only if the segment's clock is the same.
    texts: [title(0.9, 1.2, 'title'), title(32 / FPS, 0.5, 'caption')],
  };
}

const videoOf = (streams: ProbedStream[]) => streams.find((s) => s.codec_type === 'video')!;
const audioOf = (streams: ProbedStream[]) => streams.find((s) => s.codec_type === 'audio');

/** The numbers of the key frames of a file's video, in presentation order. */
async function keyFrames(path: string): Promise<number[]> {
  const { stdout } = await promisify(execFile)(
    ffprobe,
    [
      '-v',
      'error',
      '-select_streams',
      'v:0',
      '-show_entries',
      'frame=key_frame',
      '-of',
      'csv=p=0',
      `file:${path}`,
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const flags = stdout
    .split('\n')
    .map((line) => line.trim().replace(/,$/, ''))
    .filter(Boolean);
  return flags.flatMap((flag, i) => (flag === '1' ? [i] : []));
}

/** The audio stream's start and duration as ffprobe reads them. */
const soundTimes = (stream: ProbedStream & { start_time?: string }) => ({
  start: Number(stream.start_time ?? 0),
  duration: Number(stream.duration),
});

/**
 * Encoder arguments made lossless (x264 at QP 0; lossless needs x264's High 4:4:4 Predictive profile, so the
 * fixed profile and level go), to compare the frames the graphs make, without the encoder's noise.
 */
function lossless(args: string[]): string[] {
  const replaced: Record<string, string[]> = {
    '-crf': ['-qp', '0'],
    '-preset': ['-preset', 'ultrafast'],
    '-profile:v': [],
    '-level:v': [],
  };
  const out: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const replacement = replaced[args[i]!];
    if (replacement) {
      out.push(...replacement);
      i += 1; // the option's value
    } else out.push(args[i]!);
  }
  return out;
}

/**
 * The plan rendered the whole-timeline way (the one re-encoding command) and in segments (each picture
 * segment, the sound once, then the join), into `<tag>-whole.mp4` and `<tag>-segmented.mp4`.
 */
async function renderBoth(
  tag: string,
  encoder: (args: string[]) => string[] = (args) => args,
  planAt: (path: string) => ExportPlan = timeline,
) {
  const whole = planAt(join(dir, `${tag}-whole.mp4`));
  for (const file of exportFiles(whole)) await writeFile(file.path, file.contents, { flag: 'wx' });
  await ffmpegStep(encoder(exportCommand(whole)));

  const segmented = planAt(join(dir, `${tag}-segmented.mp4`));
  assert.ok(canSegment(segmented));
  const cache = join(dir, `${tag}-cache`);
  await mkdir(cache);
  const files = {
    segmentPath: (s: { key: string }) => join(cache, `${s.key}.mp4`),
    listPath: join(dir, `${tag}-segments.ffconcat`),
    soundPath: join(dir, `${tag}-sound.mp4`),
  };
  const commands = segmentedCommands(segmented, files);
  for (const encode of commands.encodes) {
    for (const file of encode.files) await writeFile(file.path, file.contents, { flag: 'wx' });
    await ffmpegStep(encoder(encode.args));
  }
  await ffmpegStep(commands.sound);
  await writeFile(files.listPath, commands.concatList, { flag: 'wx' });
  await ffmpegStep(commands.join);
  return { whole, segmented };
}

describe('export in segments (real ffmpeg, decoded output)', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'export-segments-'));
    const path = (name: string) => join(dir, name);
    await Promise.all([
      makeStill('testsrc2=s=640x360', path('card.png')),
      makeStill('color=c=0x2050a0:s=640x360', path('blue.png')),
      // A moving picture with sound of its own (a 440 Hz tone), 6 s.
      makeTestVideo(path('moving.mov'), 6, ['-c:a', 'pcm_s16le', '-ac', '2']),
      ffmpegRun([
        ...['-v', 'error', '-f', 'lavfi', '-i', 'sine=frequency=300:sample_rate=48000:duration=4'],
        ...['-ac', '2', path('music.wav')],
      ]),
    ]);
    card = stillSource(path('card.png'), 'card');
    blue = stillSource(path('blue.png'), 'blue');
    moving = videoSource(path('moving.mov'), 'moving', 6, { codec: 'pcm_s16le', channels: 2 });
    music = {
      path: path('music.wav'),
      contentId: 'music',
      demuxer: 'wav',
      kind: 'audio',
      durationSec: 4,
      audio: { codec: 'pcm_s16le', sampleRate: 48_000, channels: 2 },
    };
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('matches the whole-timeline render: same frames and duration, every frame ≥ 40 dB, sound in sync', async () => {
    const { whole, segmented } = await renderBoth('coded');
    const reference = await probeFile(whole.output.path);
    const result = await probeFile(segmented.output.path);
    const frames = Number(videoOf(result.streams).nb_frames);
    assert.equal(frames, 180, '6 s at 30 fps');
    assert.equal(frames, Number(videoOf(reference.streams).nb_frames));
    const frame = 1 / FPS;
    const videoDuration = (probed: typeof result) => Number(videoOf(probed.streams).duration);
    assert.ok(
      Math.abs(videoDuration(result) - videoDuration(reference)) <= frame,
      `video ${videoDuration(result)} s, reference ${videoDuration(reference)} s`,
    );
    assert.ok(
      Math.abs(result.durationSec - reference.durationSec) <= frame,
      `file ${result.durationSec} s, reference ${reference.durationSec} s`,
    );

    const psnr = await framePsnr(segmented.output.path, whole.output.path);
    assert.equal(psnr.length, 180, 'every frame compared');
    const worst = Math.min(...psnr);
    const at = psnr.indexOf(worst);
    console.log(`segmented vs whole: ${frames} frames, min PSNR ${worst.toFixed(2)} dB (frame ${at})`);
    assert.ok(worst >= 40, `frame ${at}: ${worst} dB`);

    const sound = audioOf(result.streams);
    const referenceSound = audioOf(reference.streams);
    assert.ok(sound && referenceSound, 'both have sound');
    const [ours, theirs] = [soundTimes(sound), soundTimes(referenceSound)];
    assert.ok(
      Math.abs(ours.duration - theirs.duration) <= frame,
      `${ours.duration} s vs ${theirs.duration} s`,
    );
    assert.ok(Math.abs(ours.start - theirs.start) <= frame, `${ours.start} s vs ${theirs.start} s`);
    // The music comes in at 0.5 s in both.
    const [heard] = await soundSpans(segmented.output.path, result.durationSec);
    const [referenceHeard] = await soundSpans(whole.output.path, reference.durationSec);
    assert.ok(heard && referenceHeard);
    assert.ok(
      Math.abs(heard.start - referenceHeard.start) <= frame,
      `${heard.start} vs ${referenceHeard.start}`,
    );

    // Each segment opens on a key frame of its own, joined as it was encoded.
    const starts = planSegments(segmented).map((s) => s.startFrame);
    const keys = await keyFrames(segmented.output.path);
    assert.ok(
      starts.every((start) => keys.includes(start)),
      `segments start at ${starts}, key frames at ${keys}`,
    );

    // +faststart: the index before the media.
    const atoms = (await topLevelAtoms(segmented.output.path)).map((a) => a.type);
    assert.ok(atoms.indexOf('moov') < atoms.indexOf('mdat'), atoms.join(' '));
  });

  it('cuts the plan into its clips’ bodies and its transition, the text on the two segments it spans', () => {
    const segments = planSegments(timeline(join(dir, 'unused.mp4')));
    assert.deepEqual(
      segments.map((s) => `${s.kind} ${s.startFrame}-${s.endFrame} texts ${s.texts.length}`),
      [
        'body 0-30 texts 0',
        'transition 30-45 texts 0',
        'body 45-90 texts 0',
        'body 90-135 texts 1',
        'body 135-180 texts 1',
      ],
    );
  });

  it('makes exactly the whole render’s frames: encoded losslessly both ways, every frame is identical', async () => {
    const { whole, segmented } = await renderBoth('lossless', lossless);
    const psnr = await framePsnr(segmented.output.path, whole.output.path);
    assert.equal(psnr.length, 180);
    const differing = psnr.flatMap((value, i) => (value === Infinity ? [] : [`${i}: ${value} dB`]));
    assert.deepEqual(differing, [], 'frames that differ');
  });

  // The case that found a lost frame in the whole render (transitions.ts, joinSegments): its second xfade emitted
  // no frame at the transition's last time, and every later frame came one late.
  it('makes exactly the whole render’s frames when a transition follows a run of cuts', async () => {
    const wipeAfterCuts = (path: string): ExportPlan => {
      const plan = timeline(path);
      const picture = [...plan.picture];
      picture[3] = { ...picture[3]!, transitionIn: { type: 'wipeleft', durationSec: 0.5 } };
      return { ...plan, picture, texts: [] };
    };
    const { whole, segmented } = await renderBoth('wipe-after-cuts', lossless, wipeAfterCuts);
    const psnr = await framePsnr(segmented.output.path, whole.output.path);
    const differing = psnr.flatMap((value, i) => (value === Infinity ? [] : [`${i}: ${value} dB`]));
    assert.deepEqual(differing, [], 'frames that differ');
  });

  it('makes exactly the whole render’s frames when videos go out under transitions (their start dropped before scaling)', async () => {
    const videosOut = (path: string): ExportPlan => ({
      ...timeline(path),
      picture: [
        pictureClip(moving, 2, { speed: 1.5, trimStartSec: 0.5 }),
        pictureClip(moving, 2, { trimStartSec: 1, transitionIn: { type: 'fade', durationSec: 0.5 } }),
        pictureClip(moving, 2, { speed: 0.5, transitionIn: { type: 'wipeleft', durationSec: 0.4 } }),
        pictureClip(card, 1.5, { transitionIn: { type: 'slideleft', durationSec: 0.5 } }),
      ],
      texts: [],
    });
    const plan = videosOut('/unused.mp4');
    const tails = planSegments(plan).filter((segment) => segment.kind === 'transition');
    // Each outgoing video's tail starts late enough in its clip for the chain to drop its earlier frames.
    for (const tail of tails) assert.match(segmentGraph(plan, tail, '/unused.mp4'), /trim=start=[0-9.]+,/);
    const { whole, segmented } = await renderBoth('videos-out', lossless, videosOut);
    const psnr = await framePsnr(segmented.output.path, whole.output.path);
    const differing = psnr.flatMap((value, i) => (value === Infinity ? [] : [`${i}: ${value} dB`]));
    assert.deepEqual(differing, [], 'frames that differ');
  });

  it('makes exactly the whole render’s frames for a timeline of cuts with text on the concat’s clock', async () => {
    assert.deepEqual(
      planSegments(cutsOnly(join(dir, 'unused.mp4'))).map((s) => `${s.startFrame}-${s.endFrame} ${s.texts}`),
      ['0-30 0', '30-61 0,1', '61-91 0'],
    );
    const { whole, segmented } = await renderBoth('cuts', lossless, cutsOnly);
    const psnr = await framePsnr(segmented.output.path, whole.output.path);
    assert.equal(psnr.length, 91);
    // Joined on segments of 30, 31 and 30 frames (1.033333 s is no whole number of µs), still every frame
    // on the 30 fps grid.
    const times = await frameTimes(segmented.output.path);
    assert.equal(times.length, 91);
    const offGrid = times.flatMap((t, n) => (Math.abs(t - n / FPS) > 0.001 ? [`${n}: ${t}`] : []));
    assert.deepEqual(offGrid, []);
    const differing = psnr.flatMap((value, i) => (value === Infinity ? [] : [`${i}: ${value} dB`]));
    assert.deepEqual(differing, [], 'frames that differ');
  });
});
