// The picture builders against a real ffmpeg: small lavfi sources, exports in 9:16, 4:5 and 16:9 with fit and
// fill, checked with ffprobe and on decoded frames (bars measured to the pixel); a large image clip rendered
// from one decode. The sound is a trivial silent graph: sound-graph.ts has its own tests.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { clipFrames } from '../../workers/export/picture-graph.ts';
import { exportCommand } from '../../workers/export/command.ts';
import { outputSize } from '../../workers/export/output-size.ts';
import { pictureTimeline } from '../../workers/export/plan.ts';
import { type ExportPlan, type ExportSource } from '../../workers/export/work-order.ts';
import { renderWithProgress } from '../helpers/ffmpeg-run.ts';
import {
  barWidths,
  benchmarkCpuSec,
  column,
  ffmpeg,
  ffmpegRun,
  framesDecoded,
  greyFrames,
  isBlack,
  isPicture,
  probeFile,
  rgbAt,
  rgbFrames,
  row,
} from '../helpers/media-analysis.ts';

const run = promisify(execFile);
const FPS = 30;

let dir: string;
let video: ExportSource;
let image: ExportSource;

/** A plan over the sources, with the output size of `ratio`. */
function plan(
  ratio: '9:16' | '4:5' | '16:9' | '1:1',
  fit: 'fit' | 'fill',
  picture: ExportPlan['picture'],
  name: string,
): ExportPlan {
  return {
    picture,
    sounds: [],
    output: { ...outputSize(ratio), fps: FPS, fit, path: join(dir, name) },
    filters: { loudnorm: false, sidechaincompress: false },
  };
}

/**
 * Renders a plan with a silent sound graph; returns what ffprobe says, the progress seen and ffmpeg's log
 * (`-v verbose -benchmark`: frames decoded per input, CPU time).
 */
async function exportPlan(p: ExportPlan) {
  const { totalSec } = pictureTimeline(p);
  const silence = `anullsrc=r=48000:cl=stereo,atrim=0:${totalSec}[aout]`;
  const args = ['-v', 'verbose', '-benchmark', ...exportCommand(p, silence)];
  const { updates, log } = await renderWithProgress(ffmpeg, args, totalSec);
  return { updates, log, probed: await probeFile(p.output.path), totalSec };
}

/** A one-frame PNG of `size` (`WxH`) in `colour`, at `path`. */
async function still(path: string, colour: string, size: string): Promise<ExportSource> {
  await ffmpegRun([
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    `color=c=${colour}:s=${size}`,
    '-frames:v',
    '1',
    path,
  ]);
  return { path, demuxer: 'png_pipe', kind: 'image', durationSec: null };
}

/** The checks every export must pass: codecs, size, 30 fps, duration = Σ ± 1 frame, AAC 48 kHz stereo. */
function assertOutput(p: ExportPlan, { probed, totalSec }: Awaited<ReturnType<typeof exportPlan>>) {
  const v = probed.streams.find((s) => s.codec_type === 'video');
  const a = probed.streams.find((s) => s.codec_type === 'audio');
  assert.ok(v && a, 'a video and an audio stream');
  assert.equal(probed.streams.length, 2);
  assert.deepEqual(
    [v.codec_name, v.pix_fmt, v.width, v.height, v.r_frame_rate, v.avg_frame_rate],
    ['h264', 'yuv420p', p.output.width, p.output.height, '30/1', '30/1'],
  );
  const frames = Number(v.nb_frames);
  assert.equal(
    frames,
    clipFrames(p).reduce((s, n) => s + n, 0),
    'every clip got its frames',
  );
  assert.ok(Math.abs(frames / FPS - totalSec) <= 1 / FPS, `${frames} frames for ${totalSec} s`);
  assert.ok(Math.abs(probed.durationSec - totalSec) <= 1 / FPS, `container ${probed.durationSec} s`);
  assert.deepEqual([a.codec_name, a.sample_rate, a.channels], ['aac', '48000', 2]);
}

describe('export picture (real ffmpeg)', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'export-picture-'));
    const videoPath = join(dir, 'source.mp4');
    const imagePath = join(dir, 'still.png');
    await run(ffmpeg, [
      ...['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=s=640x360:r=25:d=2'],
      ...['-f', 'lavfi', '-i', 'sine=f=440:d=2', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac'],
      videoPath,
    ]);
    // A square still, so that it too is letterboxed in 9:16 and cropped in 4:5.
    await run(ffmpeg, [
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      'color=c=0x3080ff:s=400x400',
      '-frames:v',
      '1',
      imagePath,
    ]);
    // A "to its end" clip uses the container's duration, which the AAC track makes longer than the video.
    const { durationSec } = await probeFile(videoPath);
    video = {
      path: videoPath,
      demuxer: 'mov',
      kind: 'video',
      durationSec,
      video: { codec: 'h264', width: 640, height: 360, fps: 25, pixFmt: 'yuv420p' },
      audio: { codec: 'aac', sampleRate: 44_100, channels: 1 },
    };
    image = { path: imagePath, demuxer: 'png_pipe', kind: 'image', durationSec: null };
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('letterboxes a 16:9 video and a square image into 9:16 with fit, to the frame', async () => {
    const p = plan(
      '9:16',
      'fit',
      [
        { source: image, trimStartSec: 0, durationSec: 0.75, volume: 1 },
        { source: video, trimStartSec: 0.5, durationSec: 1.1, volume: 1 },
      ],
      'fit.mp4',
    );
    const result = await exportPlan(p);
    assertOutput(p, result);
    assert.deepEqual(result.updates.at(-1), { fraction: 1, done: true });

    const { width, height } = p.output;
    // Frame 10 shows the image (720×720 in the middle), frame 40 the video (720×405 in the middle).
    const [still, moving] = await greyFrames(p.output.path, [10, 40], width, height);
    for (const frame of [still!, moving!]) {
      for (const y of [0, 100, 270, 1010, 1200, height - 1])
        assert.ok(isBlack(row(frame, width, y)), `row ${y}`);
      assert.ok(isPicture(row(frame, width, height / 2)), 'the picture is in the middle');
    }
    // The video's band: the 405 rows around the middle are picture, the rows just outside are bar.
    assert.ok(isPicture(row(moving!, width, 640 - 195)) && isPicture(row(moving!, width, 640 + 195)));
    assert.ok(isBlack(row(moving!, width, 640 - 215)) && isBlack(row(moving!, width, 640 + 215)));
  });

  it('fills 4:5 with no bars from a trimmed video, an image and a video shorter than its clip', async () => {
    const p = plan(
      '4:5',
      'fill',
      [
        { source: video, trimStartSec: 0.3, durationSec: 1.25, volume: 1 },
        { source: image, trimStartSec: 0, durationSec: 0.6, volume: 1 },
        // Asked 0.2 s longer than the source holds: the last frame stays up, the frame count is still exact.
        { source: video, trimStartSec: 0, durationSec: video.durationSec! + 0.2, volume: 1 },
      ],
      'fill.mp4',
    );
    const result = await exportPlan(p);
    assertOutput(p, result);

    const { width, height } = p.output;
    const frames = await greyFrames(p.output.path, [10, 45, 100], width, height);
    for (const [i, frame] of frames.entries()) {
      for (const y of [0, 1, height - 2, height - 1])
        assert.ok(isPicture(row(frame, width, y)), `${i}: row ${y}`);
      for (const x of [0, 1, width - 2, width - 1]) {
        assert.ok(isPicture(column(frame, width, height, x)), `${i}: column ${x}`);
      }
    }
  });
  it('fits exactly in 16:9: a near-16:9 video fills the frame, 4:3 and 9:16 get equal side bars; fill has none', async () => {
    // 854×480 is 16:9 to 0.08%: scaled to 1280 wide it is 719.4 rows, which fill the 720 (no strip of black).
    const nearPath = join(dir, 'near-16x9.mp4');
    await ffmpegRun([
      ...['-v', 'error', '-f', 'lavfi', '-i', 'color=c=0x3080ff:s=854x480:r=25:d=1'],
      ...['-c:v', 'libx264', '-pix_fmt', 'yuv420p', nearPath],
    ]);
    const near: ExportSource = {
      path: nearPath,
      demuxer: 'mov',
      kind: 'video',
      durationSec: (await probeFile(nearPath)).durationSec,
      video: { codec: 'h264', width: 854, height: 480, fps: 25, pixFmt: 'yuv420p' },
    };
    const fourThree = await still(join(dir, '4x3.png'), '0x3080ff', '640x480');
    const portrait = await still(join(dir, '9x16.png'), '0x3080ff', '360x640');
    const clips = [near, fourThree, portrait].map((source) => ({
      source,
      trimStartSec: 0,
      durationSec: 0.5,
      volume: 1,
    }));
    const middles = [7, 22, 37]; // 15 frames per clip

    const fit = plan('16:9', 'fit', clips, 'fit-16x9.mp4');
    const fitted = await exportPlan(fit);
    assertOutput(fit, fitted);
    const { width, height } = fit.output;
    const [nearFrame, fourThreeFrame, portraitFrame] = await greyFrames(
      fit.output.path,
      middles,
      width,
      height,
    );
    for (const y of [0, 1, height - 2, height - 1])
      assert.ok(isPicture(row(nearFrame!, width, y)), `854×480: row ${y} is picture`);
    assert.deepEqual(barWidths(nearFrame!, width, height), { top: 0, bottom: 0, left: 0, right: 0 });
    // Pillarboxed: full height, equal bars left and right, the picture its exact width within 2 px.
    for (const [name, frame, exactWidth] of [
      ['4:3', fourThreeFrame!, 960],
      ['9:16', portraitFrame!, 405],
    ] as const) {
      const bars = barWidths(frame, width, height);
      assert.deepEqual([bars.top, bars.bottom], [0, 0], `${name}: no bar above or below`);
      assert.ok(Math.abs(bars.left - bars.right) <= 1, `${name}: equal bars ${JSON.stringify(bars)}`);
      const pictureWidth = width - bars.left - bars.right;
      assert.ok(
        Math.abs(pictureWidth - exactWidth) <= 2,
        `${name}: ${pictureWidth} px wide, ${exactWidth} exact`,
      );
    }

    const fill = plan('16:9', 'fill', clips, 'fill-16x9.mp4');
    assertOutput(fill, await exportPlan(fill));
    const filled = await greyFrames(fill.output.path, middles, width, height);
    for (const [i, frame] of filled.entries()) {
      assert.deepEqual(
        barWidths(frame, width, height),
        { top: 0, bottom: 0, left: 0, right: 0 },
        `clip ${i}`,
      );
    }
  });

  it('renders a 20 s clip of a 6000×6000 image from one decode, in a fraction of a decode per frame', async () => {
    const big = await still(join(dir, 'big-red.png'), 'red', '6000x6000');
    // What decoding the image once costs: looping the input, as exports did, paid it for every one of the
    // 600 frames (about 240 s of CPU here, where this export takes about 4 s).
    const oneDecodeSec = benchmarkCpuSec(
      await ffmpegRun(['-benchmark', '-f', 'png_pipe', '-i', `file:${big.path}`, '-f', 'null', '-']),
    );
    const p = plan('16:9', 'fit', [{ source: big, trimStartSec: 0, durationSec: 20, volume: 1 }], 'big.mp4');
    const result = await exportPlan(p);
    assertOutput(p, result);
    assert.equal(Number(result.probed.streams.find((s) => s.codec_type === 'video')!.nb_frames), 600);

    assert.equal(framesDecoded(result.log, 0), 1, 'the image is decoded once');
    const cpuSec = benchmarkCpuSec(result.log);
    const perFrameDecodes = oneDecodeSec * 600;
    assert.ok(
      cpuSec < perFrameDecodes / 10,
      `${cpuSec} s of CPU, a decode per frame alone would be ${perFrameDecodes.toFixed(1)} s`,
    );

    // Red in the middle (the square, 720×720) from the first frame to the last, black bars at the sides.
    const { width, height } = p.output;
    for (const [i, frame] of (await rgbFrames(p.output.path, [0, 300, 599], width, height)).entries()) {
      const [r, g, b] = rgbAt(frame, width, width / 2, height / 2);
      assert.ok(r >= 220 && g <= 30 && b <= 30, `frame ${i}: red in the middle, got ${[r, g, b]}`);
      for (const x of [0, 270, width - 271, width - 1]) {
        assert.ok(Math.max(...rgbAt(frame, width, x, height / 2)) <= 32, `frame ${i}: black at x=${x}`);
      }
      for (const x of [290, width - 291]) {
        assert.ok(rgbAt(frame, width, x, height / 2)[0] >= 220, `frame ${i}: red at x=${x}`);
      }
    }
  });
  it('shows the first picture of an image file that holds several, still, and reads no further', async () => {
    // PNG streams one after another: the image demuxer reads them as frames of a video.
    const [red, blue] = await Promise.all([
      still(join(dir, 'part-red.png'), 'red', '64x64'),
      still(join(dir, 'part-blue.png'), 'blue', '64x64'),
    ]);
    const parts = await Promise.all(
      [red, ...Array<ExportSource>(50).fill(blue)].map((s) => readFile(s.path)),
    );
    const path = join(dir, 'several.png');
    await writeFile(path, Buffer.concat(parts));
    const source: ExportSource = { path, demuxer: 'png_pipe', kind: 'image', durationSec: null };
    const p = plan('1:1', 'fit', [{ source, trimStartSec: 0, durationSec: 2, volume: 1 }], 'several.mp4');
    const result = await exportPlan(p);
    assertOutput(p, result);
    assert.ok(framesDecoded(result.log, 0) < 51, 'ffmpeg stopped reading after the first picture');
    const { width, height } = p.output;
    for (const [i, frame] of (await rgbFrames(p.output.path, [0, 30, 59], width, height)).entries()) {
      const [r, g, b] = rgbAt(frame, width, width / 2, height / 2);
      assert.ok(r >= 220 && g <= 30 && b <= 30, `frame ${i}: the first picture (red), got ${[r, g, b]}`);
    }
  });
});
