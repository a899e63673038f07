// The picture builders against a real ffmpeg: small lavfi sources, two exports (9:16 fit, 4:5 fill), checked
// with ffprobe and on decoded frames. The sound is a trivial silent graph: sound-graph.ts has its own tests.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  clipFrames,
  exportCommand,
  outputSize,
  pictureTimeline,
  type ExportPlan,
  type ExportSource,
} from '../../workers/export/index.ts';
import { renderWithProgress } from '../helpers/ffmpeg-run.ts';
import {
  column,
  ffmpeg,
  greyFrames,
  isBlack,
  pixelStats,
  probeFile,
  row,
} from '../helpers/media-analysis.ts';

const run = promisify(execFile);
const FPS = 30;

/** Clearly picture: the sources' mean brightness is around 120. */
const isPicture = (pixels: Iterable<number>) => pixelStats(pixels).mean >= 40;

let dir: string;
let video: ExportSource;
let image: ExportSource;

/** A plan over the sources, with the output size of `ratio`. */
function plan(
  ratio: '9:16' | '4:5',
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

/** Renders a plan with a silent sound graph; returns what ffprobe says and the progress seen. */
async function exportPlan(p: ExportPlan) {
  const { totalSec } = pictureTimeline(p);
  const silence = `anullsrc=r=48000:cl=stereo,atrim=0:${totalSec}[aout]`;
  const { updates } = await renderWithProgress(ffmpeg, exportCommand(p, silence), 8);
  return { updates, probed: await probeFile(p.output.path), totalSec };
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
});
