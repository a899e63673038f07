// The fast path against a real ffmpeg: three whole 1280×720 30 fps h264/AAC clips (one with a quote and a
// colon in its name) copied into a 16:9 export, checked with ffprobe and on the file's boxes, and timed against
// re-encoding the same plan (the ratio is reported, not asserted: the budget is test/bench/export.ts's).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { probeMedia } from '../helpers/ffprobe.ts';
import { exportCommand } from '../../workers/export/command.ts';
import { fastPathBlockers, fastPathCommands } from '../../workers/export/fast-path.ts';
import { mixdownCommand, soundFromMixdownCommand } from '../../workers/export/mixdown.ts';
import { muxCommand } from '../../workers/export/parallel-render.ts';
import { pictureDurationSec } from '../../workers/export/picture-graph.ts';
import { type ExportPlan, type ExportSource } from '../../workers/export/work-order.ts';
import { type ProgressUpdate } from '../../workers/ffmpeg/progress.ts';
import { renderWithProgress } from '../helpers/ffmpeg-run.ts';

const run = promisify(execFile);
const { ffmpeg, ffprobe } = resolveFfmpeg({
  ffmpegPath: process.env.FFMPEG_PATH,
  ffprobePath: process.env.FFPROBE_PATH,
});
const FPS = 30;
const CLIP_SEC = 2;
const NAMES = ['one.mp4', "it's a:clip.mp4", 'three.mp4'];

interface Stream {
  codec_type: string;
  codec_name: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  r_frame_rate?: string;
  nb_frames?: string;
  duration?: string;
  start_time?: string;
  sample_rate?: string;
  channels?: number;
}

async function ffprobeJson<T>(path: string, options: string[]): Promise<T> {
  const { stdout } = await run(
    ffprobe,
    ['-v', 'error', '-print_format', 'json', ...options, `file:${path}`],
    {
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return JSON.parse(stdout) as T;
}

/** Sizes of the video packets of a file, in decoding order. */
async function videoPacketSizes(path: string): Promise<number[]> {
  const { packets } = await ffprobeJson<{ packets: { size: string }[] }>(path, [
    '-select_streams',
    'v:0',
    '-show_entries',
    'packet=size',
  ]);
  return packets.map((packet) => Number(packet.size));
}

/** The types of the top-level boxes of an mp4, in file order. */
async function topLevelBoxes(path: string): Promise<string[]> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const types: string[] = [];
    const header = Buffer.alloc(16);
    for (let at = 0; at + 8 <= size;) {
      await file.read(header, 0, 16, at);
      const type = header.toString('latin1', 4, 8);
      let boxSize = header.readUInt32BE(0);
      if (boxSize === 1) boxSize = Number(header.readBigUInt64BE(8));
      else if (boxSize === 0) boxSize = size - at;
      types.push(type);
      assert.ok(boxSize >= 8, `box ${type} has a size`);
      at += boxSize;
    }
    return types;
  } finally {
    await file.close();
  }
}

let dir: string;
let sources: ExportSource[];

function plan(name: string): ExportPlan {
  return {
    picture: sources.map((source) => ({
      source,
      trimStartSec: 0,
      durationSec: source.durationSec!,
      volume: 1,
    })),
    sounds: [],
    output: { width: 1280, height: 720, fps: FPS, fit: 'fit', path: join(dir, name) },
    filters: { loudnorm: true, sidechaincompress: true },
  };
}

/**
 * Writes the list and runs the fast path's steps one after the other (the worker runs the copy and the sound
 * side by side): the copy, the sound's mixdown and encode, their mux. Returns the wall time of the whole.
 */
async function fastExport(p: ExportPlan): Promise<{ updates: ProgressUpdate[]; ms: number }> {
  const started = performance.now();
  const concatListPath = `${p.output.path}.ffconcat`;
  const [videoOnlyPath, mixdownPath, soundPath] = ['video', 'mixdown.wav', 'sound.mp4'].map(
    (name) => `${p.output.path}.${name}`,
  ) as [string, string, string];
  const { concatList, copy } = fastPathCommands(p, { concatListPath, videoOnlyPath });
  await writeFile(concatListPath, concatList);
  const steps = [
    copy,
    mixdownCommand(p, mixdownPath, false),
    soundFromMixdownCommand(p, mixdownPath, soundPath),
    muxCommand(videoOnlyPath, soundPath, p.output.path),
  ];
  const updates: ProgressUpdate[] = [];
  for (const step of steps)
    updates.push(...(await renderWithProgress(ffmpeg, step, pictureDurationSec(p))).updates);
  return { updates, ms: performance.now() - started };
}

describe('export fast path (real ffmpeg)', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'export-fast-path-'));
    sources = [];
    for (const [i, name] of NAMES.entries()) {
      const path = join(dir, name);
      // libx264's default GOP with B-frames (veryfast has 3), as a camera or an editor would write it.
      await run(ffmpeg, [
        ...['-v', 'error', '-f', 'lavfi', '-i', `testsrc2=s=1280x720:r=${FPS}:d=${CLIP_SEC}`],
        ...['-f', 'lavfi', '-i', `sine=f=${440 + 220 * i}:sample_rate=48000:d=${CLIP_SEC}`],
        ...['-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p'],
        ...['-c:a', 'aac', '-ac', '2', '-ar', '48000', '-f', 'mp4', `file:${path}`],
      ]);
      const probed = await probeMedia(path);
      sources.push({
        path,
        demuxer: 'mov',
        kind: 'video',
        durationSec: probed.durationSeconds,
        video: { codec: 'h264', width: 1280, height: 720, fps: FPS, pixFmt: 'yuv420p' },
        audio: { codec: 'aac', sampleRate: 48_000, channels: 2 },
      });
    }
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('copies three whole clips into a 16:9 export with the sound re-rendered, faster than re-encoding', async (t) => {
    const fast = plan('fast.mp4');
    assert.deepEqual(fastPathBlockers(fast), []);
    // Σ clips as the plan has them: the sources' container durations, which the AAC track may make a little
    // longer than the 2 s of video (the 2018 build writes 2.022 s), on the frame grid.
    const totalSec = pictureDurationSec(fast);

    // Alternating rounds; the best of each path is compared (the first round also warms the page cache).
    const fastMs: number[] = [];
    const slowMs: number[] = [];
    let updates: ProgressUpdate[] = [];
    for (let round = 0; round < 2; round += 1) {
      const result = await fastExport(fast);
      fastMs.push(result.ms);
      updates = result.updates;
      const slow = plan('reencoded.mp4');
      slowMs.push((await renderWithProgress(ffmpeg, exportCommand(slow), totalSec)).ms);
    }
    const [bestFast, bestSlow] = [Math.min(...fastMs), Math.min(...slowMs)];
    t.diagnostic(
      `fast path ${bestFast.toFixed(0)} ms, re-encode ${bestSlow.toFixed(0)} ms: ` +
        `${(bestSlow / bestFast).toFixed(1)}× faster (${totalSec.toFixed(3)} s of 720p30)`,
    );
    assert.deepEqual(updates.at(-1), { fraction: 1, done: true });

    const { streams, format } = await ffprobeJson<{ streams: Stream[]; format: { duration: string } }>(
      fast.output.path,
      ['-show_format', '-show_streams'],
    );
    assert.equal(streams.length, 2);
    const v = streams.find((s) => s.codec_type === 'video');
    const a = streams.find((s) => s.codec_type === 'audio');
    assert.ok(v && a, 'a video and an audio stream');
    assert.deepEqual(
      [v.codec_name, v.pix_fmt, v.width, v.height, v.r_frame_rate],
      ['h264', 'yuv420p', 1280, 720, '30/1'],
    );
    assert.deepEqual([a.codec_name, a.sample_rate, a.channels], ['aac', '48000', 2]);
    // One frame, and a microsecond for the decimal durations ffprobe prints.
    const frame = 1 / FPS + 1e-6;
    assert.equal(Number(v.nb_frames), CLIP_SEC * FPS * NAMES.length, 'every frame of every source');
    for (const [what, seconds] of [
      ['container', format.duration],
      ['video', v.duration],
      ['audio', a.duration],
    ] as const) {
      assert.ok(Math.abs(Number(seconds) - totalSec) <= frame, `${what}: ${seconds} s for ${totalSec} s`);
    }

    // In sync: the copied picture starts with its sound, not late by the first clip's AAC priming (fast-path.ts).
    assert.ok(
      Math.abs(Number(v.start_time) - Number(a.start_time)) < 0.001,
      `${v.start_time} / ${a.start_time}`,
    );

    // Copied, not re-encoded: the output's video packets are the sources' packets, byte counts in order. The
    // first of each clip may carry that clip's parameter sets (SPS + PPS, a few dozen bytes) in-band in front
    // of its keyframe: the concat demuxer of ffmpeg 5 repeats them at every file it opens.
    const perSource = await Promise.all(sources.map((s) => videoPacketSizes(s.path)));
    const firsts = new Set(perSource.map((_sizes, i) => perSource.slice(0, i).flat().length));
    const expected = perSource.flat();
    const actual = await videoPacketSizes(fast.output.path);
    assert.equal(actual.length, expected.length, 'as many video packets as the sources have');
    actual.forEach((size, i) => {
      const extra = size - expected[i]!;
      if (firsts.has(i)) assert.ok(extra >= 0 && extra <= 64, `packet ${i}: ${size} for ${expected[i]}`);
      else assert.equal(extra, 0, `packet ${i}: ${size} for ${expected[i]}`);
    });

    // +faststart: the index (moov) comes before the media data.
    const boxes = await topLevelBoxes(fast.output.path);
    assert.equal(boxes[0], 'ftyp');
    assert.ok(boxes.includes('moov') && boxes.indexOf('moov') < boxes.indexOf('mdat'), boxes.join(' '));

    // The whole file decodes without an error (the cuts between copied clips included).
    const { stderr } = await run(ffmpeg, [
      '-v',
      'error',
      '-i',
      `file:${fast.output.path}`,
      '-f',
      'null',
      '-',
    ]);
    assert.equal(stderr, '');
  });

  it('refuses a listed "mp4" that is really a playlist instead of probing it as one', async () => {
    // The concat demuxer probes every file it opens; -format_whitelist keeps that to mov (source media is hostile input).
    const playlist = join(dir, 'playlist.mp4');
    await writeFile(
      playlist,
      '#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nhttp://127.0.0.1:9/x.ts\n#EXT-X-ENDLIST\n',
    );
    const p = plan('hostile.mp4');
    p.picture[0] = { ...p.picture[0]!, source: { ...p.picture[0]!.source, path: playlist } };
    await assert.rejects(fastExport(p), /not on whitelist/);
  });
});
