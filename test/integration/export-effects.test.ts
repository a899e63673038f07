// The timeline's effects against a real ffmpeg, judged on the decoded output (docs/editor.md, Export): text
// read back by OCR (the `tesseract` CLI) at its time and absent outside it, hostile text drawn literally,
// transitions that blend or pass through black and shorten the video by their length, a zoom that moves
// evenly every frame where `zoompan` jitters, speed read from a source whose frames encode their own time,
// previews at 360 px, and a build without xfade refused. The sound is a trivial silent graph here.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { exportCommand, exportFiles } from '../../workers/export/command.ts';
import {
  listFilters,
  missingFeatureFilters,
  unsupportedFeatures,
} from '../../workers/export/filter-support.ts';
import { outputSize } from '../../workers/export/output-size.ts';
import { pictureDurationSec } from '../../workers/export/picture-graph.ts';
import type { ExportPlan, ExportSource, PictureClip, TextOverlay } from '../../workers/export/work-order.ts';
import type { ExportQuality as Quality } from '../../schemas/timeline-terms.ts';
import { renderWithProgress } from '../helpers/ffmpeg-run.ts';
import { ffmpeg, ffmpegRun, greyFrames, probeFile, rgbAt, rgbFrames } from '../helpers/media-analysis.ts';

const run = promisify(execFile);

let dir: string;
let red: ExportSource;
let blue: ExportSource;
let dark: ExportSource;
let detailed: ExportSource;
let clock: ExportSource;
let renders = 0;

/** A plan of `picture` (and `texts`) for `ratio`, written to a new file of the test folder. */
function plan(
  picture: PictureClip[],
  options: { ratio?: '16:9' | '1:1' | '9:16'; texts?: TextOverlay[]; quality?: Quality } = {},
): ExportPlan {
  const quality = options.quality ?? 'final';
  return {
    picture,
    sounds: [],
    ...(options.texts ? { texts: options.texts } : {}),
    output: {
      ...outputSize(options.ratio ?? '16:9', quality),
      fps: 30,
      fit: 'fit',
      quality,
      path: join(dir, `out-${++renders}.mp4`),
    },
    filters: { loudnorm: false, sidechaincompress: false },
  };
}

const still = (source: ExportSource, durationSec: number, extra: Partial<PictureClip> = {}): PictureClip => ({
  source,
  trimStartSec: 0,
  durationSec,
  volume: 1,
  ...extra,
});

/** Writes the plan's files (its text lines), renders it with a silent sound graph, answers ffprobe's view. */
async function render(p: ExportPlan) {
  for (const file of exportFiles(p)) await writeFile(file.path, file.contents, { flag: 'wx' });
  const totalSec = pictureDurationSec(p);
  const silence = `anullsrc=r=48000:cl=stereo,atrim=0:${totalSec}[aout]`;
  const { ms, log } = await renderWithProgress(
    ffmpeg,
    ['-benchmark', ...exportCommand(p, silence)],
    totalSec,
  );
  const probed = await probeFile(p.output.path);
  const video = probed.streams.find((s) => s.codec_type === 'video')!;
  return { ms, log, frames: Number(video.nb_frames), width: video.width!, height: video.height!, probed };
}

/** A one-frame PNG made by a lavfi source. */
async function png(name: string, source: string): Promise<ExportSource> {
  const path = join(dir, name);
  await ffmpegRun(['-v', 'error', '-f', 'lavfi', '-i', source, '-frames:v', '1', path]);
  return { path, demuxer: 'png_pipe', kind: 'image', durationSec: null };
}

/** Frame `n` of a video as a PNG, read by tesseract: the words it finds. */
async function ocr(path: string, n: number): Promise<string> {
  const image = join(dir, `ocr-${renders}-${n}.png`);
  await ffmpegRun([
    '-v',
    'error',
    '-i',
    `file:${path}`,
    '-vf',
    `select=eq(n\\,${n})`,
    '-vsync',
    '0',
    '-frames:v',
    '1',
    image,
  ]);
  const { stdout } = await run('tesseract', [image, 'stdout', '--psm', '6'], { encoding: 'utf8' });
  return stdout.replace(/\s+/g, ' ').trim();
}

/** How many pixels of an RGB frame are bright (text drawn in white on a dark picture). */
function brightPixels(frame: Buffer): number {
  let count = 0;
  for (let i = 0; i < frame.length; i += 3)
    if (frame[i]! > 200 && frame[i + 1]! > 200 && frame[i + 2]! > 200) count++;
  return count;
}

/** The leftmost and rightmost columns holding bright pixels. */
function brightSpan(frame: Buffer, width: number): { left: number; right: number } {
  let left = width;
  let right = -1;
  for (let i = 0; i < frame.length; i += 3) {
    if (frame[i]! > 200 && frame[i + 1]! > 200 && frame[i + 2]! > 200) {
      const x = (i / 3) % width;
      left = Math.min(left, x);
      right = Math.max(right, x);
    }
  }
  return { left, right };
}

/** Mean absolute difference between consecutive grey frames. */
function consecutiveDifferences(frames: Buffer[]): number[] {
  return frames.slice(1).map((frame, i) => {
    const previous = frames[i]!;
    let sum = 0;
    for (let p = 0; p < frame.length; p++) sum += Math.abs(frame[p]! - previous[p]!);
    return sum / frame.length;
  });
}

const mean = (values: number[]) => values.reduce((s, v) => s + v, 0) / values.length;

describe('export effects (real ffmpeg, decoded output)', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'export-effects-'));
    [red, blue, dark, detailed] = await Promise.all([
      png('red.png', 'color=c=0xff0000:s=640x360'),
      png('blue.png', 'color=c=0x0000ff:s=640x360'),
      png('dark.png', 'color=c=0x102040:s=640x360'),
      // Fine detail everywhere, so that any movement changes the frame.
      png('detailed.png', 'testsrc2=s=1280x1280'),
    ]);
    // A video whose frames encode their own time: luma 16 + 30 × t (t in seconds, 0 to 6).
    const clockPath = join(dir, 'clock.mp4');
    await ffmpegRun([
      ...['-v', 'error', '-f', 'lavfi', '-i', 'nullsrc=s=320x240:r=30:d=6', '-vf'],
      ...["geq=lum='16+30*T':cb=128:cr=128,format=yuv420p", '-c:v', 'libx264', '-crf', '10', clockPath],
    ]);
    clock = {
      path: clockPath,
      demuxer: 'mov',
      kind: 'video',
      durationSec: (await probeFile(clockPath)).durationSec,
      video: { codec: 'h264', width: 320, height: 240, fps: 30, pixFmt: 'yuv420p' },
    };
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('draws a title that OCR reads at its time, absent before and after, within 90 % of the width', async () => {
    const p = plan([still(dark, 5)], {
      texts: [
        {
          text: 'HELLO WORLD',
          style: 'title',
          position: 'center',
          color: '#FFFFFF',
          background: 'none',
          startSec: 1.5,
          durationSec: 2,
          fadeInSec: 0.3,
          fadeOutSec: 0.3,
        },
      ],
    });
    const out = await render(p);
    assert.equal(out.frames, 150);
    assert.match(await ocr(p.output.path, 75), /HELLO WORLD/);
    for (const n of [30, 120]) assert.doesNotMatch(await ocr(p.output.path, n), /HELLO|WORLD/, `frame ${n}`);
    const { width, height } = p.output;
    const [before, fadingIn, shown, after] = await rgbFrames(p.output.path, [40, 47, 75, 110], width, height);
    assert.equal(brightPixels(before!), 0, 'nothing before its start');
    assert.equal(brightPixels(after!), 0, 'nothing after its end');
    const full = brightPixels(shown!);
    assert.ok(full > 2000, `the title is drawn (${full} bright pixels)`);
    assert.ok(brightPixels(fadingIn!) < full / 2, 'half-way into its fade it is not yet fully opaque');
    const span = brightSpan(shown!, width);
    assert.ok(Math.abs((span.left + span.right) / 2 - width / 2) <= 4, `centred: ${JSON.stringify(span)}`);
  });

  it('wraps a long title to 90 % of the width', async () => {
    const words = 'THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG AND RUNS AWAY';
    const p = plan([still(dark, 1)], {
      ratio: '9:16',
      texts: [
        {
          text: words,
          style: 'title',
          position: 'center',
          color: '#FFFFFF',
          background: 'none',
          startSec: 0,
          durationSec: 1,
          fadeInSec: 0,
          fadeOutSec: 0,
        },
      ],
    });
    await render(p);
    const { width, height } = p.output;
    const [frame] = await rgbFrames(p.output.path, [15], width, height);
    const span = brightSpan(frame!, width);
    assert.ok(span.left >= 0.05 * width - 1 && span.right <= 0.95 * width + 1, JSON.stringify(span));
    assert.equal((await ocr(p.output.path, 15)).replace(/\s+/g, ' '), words);
  });

  it('renders filter syntax, expansions, quotes, backslashes and colons in text literally', async () => {
    const hostile = `'; drawbox=c=red:t=fill :text=%{pts} \\ "quoted" C:\\end`;
    const p = plan([still(dark, 2)], {
      texts: [
        {
          text: hostile,
          style: 'caption',
          position: 'center',
          color: '#FFFFFF',
          background: 'box',
          startSec: 0,
          durationSec: 2,
          fadeInSec: 0,
          fadeOutSec: 0,
        },
      ],
    });
    await render(p);
    const read = await ocr(p.output.path, 30);
    for (const literal of ['drawbox=c=red:t=fill', '%{pts}', '"quoted"']) {
      assert.ok(read.includes(literal), `OCR reads ${literal} in: ${read}`);
    }
    const { width, height } = p.output;
    const [frame] = await rgbFrames(p.output.path, [30], width, height);
    const [r, g, b] = rgbAt(frame!, width, 20, 20);
    assert.ok(r < 60 && g < 60 && b < 90, `no drawbox filled the frame: ${[r, g, b]}`);
  });

  it('cross-fades red into blue over 1 s: a blended middle frame, 1 s shorter', async () => {
    const p = plan([still(red, 2), still(blue, 2, { transitionIn: { type: 'fade', durationSec: 1 } })]);
    const out = await render(p);
    assert.equal(out.frames, 90, '2 + 2 − 1 s');
    assert.ok(Math.abs(out.probed.durationSec - 3) <= 1 / 30, `${out.probed.durationSec} s`);
    const { width, height } = p.output;
    const [start, middle, end] = await rgbFrames(p.output.path, [10, 45, 80], width, height);
    const at = (frame: Buffer) => rgbAt(frame, width, width / 2, height / 2);
    assert.ok(at(start!)[0] > 220 && at(start!)[2] < 40, `red first: ${at(start!)}`);
    assert.ok(at(end!)[2] > 220 && at(end!)[0] < 40, `blue last: ${at(end!)}`);
    const [r, , b] = at(middle!);
    assert.ok(r > 80 && r < 180 && b > 80 && b < 180, `blended in the middle: ${at(middle!)}`);
  });

  it('passes through black with fadeblack, and fades the first clip in from black without shortening', async () => {
    const p = plan(
      [
        still(red, 2, { transitionIn: { type: 'fade', durationSec: 0.5 } }),
        still(blue, 2, { transitionIn: { type: 'fadeblack', durationSec: 1 } }),
      ],
      { ratio: '1:1' },
    );
    const out = await render(p);
    assert.equal(out.frames, 90);
    const { width, height } = p.output;
    const [first, fadedIn] = await rgbFrames(p.output.path, [0, 20], width, height);
    const at = (frame: Buffer) => rgbAt(frame, width, width / 2, height / 2);
    assert.ok(Math.max(...at(first!)) < 40, `the first frame is black: ${at(first!)}`);
    assert.ok(at(fadedIn!)[0] > 220, `red once faded in: ${at(fadedIn!)}`);
    // The transition's frames (30 to 59): red darkens to black, then blue comes up from it.
    const numbers = Array.from({ length: 30 }, (_, i) => 30 + i);
    const during = (await rgbFrames(p.output.path, numbers, width, height)).map(at);
    const darkest = Math.min(...during.map((rgb) => Math.max(...rgb)));
    assert.ok(darkest < 24, `black on the way: ${during.map((rgb) => rgb.join('/')).join(' ')}`);
    const darkAt = during.findIndex((rgb) => Math.max(...rgb) === darkest);
    assert.ok(
      during.slice(0, darkAt).every(([, , b]) => b < 40),
      'no blue before the black',
    );
    assert.ok(
      during.slice(darkAt + 1).every(([r]) => r < 40),
      'no red after the black',
    );
  });

  it('zooms a still smoothly — every frame moves by about as much — where none is still and zoompan jitters', async () => {
    const zoom = plan([still(detailed, 2, { motion: 'zoom_in' })], { ratio: '1:1' });
    const none = plan([still(detailed, 2, { motion: 'none' })], { ratio: '1:1' });
    await render(zoom);
    await render(none);
    const { width, height } = zoom.output;
    const numbers = Array.from({ length: 60 }, (_, i) => i);
    const moving = consecutiveDifferences(await greyFrames(zoom.output.path, numbers, width, height));
    const resting = consecutiveDifferences(await greyFrames(none.output.path, numbers, width, height));
    assert.ok(Math.max(...resting) < 0.5, `none does not move: ${Math.max(...resting)}`);
    const m = mean(moving);
    assert.ok(m > 0.2 && m < 12, `small steps: mean ${m.toFixed(2)}`);
    // Even: every step within 25 % of the mean (here they are within about 15 %; zoompan's are 40 % to 160 %).
    const even = (steps: number[], average: number) =>
      steps.every((d) => d > 0.75 * average && d < 1.25 * average);
    assert.ok(even(moving, m), `even steps: ${moving.map((d) => d.toFixed(2)).join(' ')}`);

    // A pan moves as evenly.
    const pan = plan([still(detailed, 2, { motion: 'pan_left' })], { ratio: '1:1' });
    await render(pan);
    const panning = consecutiveDifferences(await greyFrames(pan.output.path, numbers, width, height));
    const pm = mean(panning);
    assert.ok(pm > 0.2 && even(panning, pm), `even pan: ${panning.map((d) => d.toFixed(2)).join(' ')}`);

    // The same zoom by zoompan (whole-pixel windows), judged the same way, fails the test above: the check
    // can tell a jittering zoom from a smooth one.
    const jitter = join(dir, 'zoompan.mp4');
    await ffmpegRun([
      ...['-v', 'error', '-f', 'png_pipe', '-i', `file:${detailed.path}`, '-vf'],
      ...[
        `scale=${width}:${height},zoompan=z='1+0.15*on/59':x='iw/2-(iw/zoom/2)':y='ih/2-(ih/zoom/2)':d=60:s=${width}x${height}:fps=30`,
        '-c:v',
        'libx264',
        '-preset',
        'veryfast',
        '-crf',
        '20',
        '-pix_fmt',
        'yuv420p',
        jitter,
      ],
    ]);
    const jittering = consecutiveDifferences(await greyFrames(jitter, numbers, width, height));
    const jm = mean(jittering);
    assert.ok(
      !even(jittering, jm),
      `zoompan moves unevenly: ${jittering.map((d) => d.toFixed(2)).join(' ')}`,
    );
  });

  it('plays speed 2 as source time 2 s at timeline time 1 s, and speed 0.5 at half the pace', async () => {
    const p = plan([still(clock, 3, { speed: 2 }), still(clock, 2, { speed: 0.5, trimStartSec: 1 })], {
      ratio: '16:9',
    });
    const out = await render(p);
    assert.equal(out.frames, 150, 'the timeline counts the clips’ own durations');
    const { width, height } = p.output;
    const numbers = [0, 15, 30, 45, 75, 90, 120];
    const frames = await greyFrames(p.output.path, numbers, width, height);
    // Luma 16 + 30 t is grey (30 t) × 255 / 219 after decoding to full range.
    const grey = (sourceSec: number) => (30 * sourceSec * 255) / 219;
    // Speed 2 from 0 for 3 s (frames 0 to 89), then speed 0.5 from the source's 1 s.
    const expected = [0, 1, 2, 3, 5, 1, 1.5].map(grey);
    frames.forEach((frame, i) => {
      const value = frame[(height / 2) * width + width / 2]!;
      assert.ok(
        Math.abs(value - expected[i]!) <= 4,
        `frame ${numbers[i]}: ${value}, expected ${expected[i]!.toFixed(1)}`,
      );
    });
  });

  it('makes a preview 360 px on its short side, faster than the final of the same timeline', async () => {
    const timeline = (quality: Quality) =>
      plan(
        [
          still(clock, 3),
          still(detailed, 3, { motion: 'zoom_in', transitionIn: { type: 'fade', durationSec: 0.5 } }),
          still(clock, 3, { trimStartSec: 2, transitionIn: { type: 'wipeleft', durationSec: 0.5 } }),
        ],
        { ratio: '9:16', quality },
      );
    const preview = await render(timeline('preview'));
    const final = await render(timeline('final'));
    assert.deepEqual([preview.width, preview.height], [360, 640]);
    assert.deepEqual([final.width, final.height], [720, 1280]);
    assert.equal(preview.frames, final.frames);
    assert.ok(preview.ms < final.ms, `preview ${preview.ms.toFixed(0)} ms, final ${final.ms.toFixed(0)} ms`);
  });

  it('finds that a build without xfade cannot render transitions (detected from its filter list)', async () => {
    // An ffmpeg that is the real one, except that its filter list has no xfade (as the 2018 build's).
    const fake = join(dir, 'ffmpeg-without-xfade');
    await writeFile(fake, `#!/bin/sh\n"${ffmpeg}" "$@" | grep -v ' xfade '\n`);
    await chmod(fake, 0o755);
    const available = await listFilters(fake);
    assert.deepEqual(missingFeatureFilters(available), ['xfade']);
    assert.ok(available.has('drawtext') && available.has('perspective'));
    const p = plan([still(red, 2), still(blue, 2, { transitionIn: { type: 'fade', durationSec: 1 } })]);
    assert.deepEqual(unsupportedFeatures(p, available), [{ feature: 'transitions', filter: 'xfade' }]);
    const real = await listFilters(ffmpeg);
    assert.deepEqual(missingFeatureFilters(real), [], 'the resolved ffmpeg has every filter');
    assert.deepEqual(unsupportedFeatures(p, real), []);
  });
});
