// Measuring real media files in tests with ffprobe and ffmpeg's own analysis filters: streams and frame rates,
// decoded grey or RGB frames (bars or picture, bar widths), frames decoded and CPU time from ffmpeg's log, sound
// onsets (`silencedetect`), the level of one frequency band (`lowpass`/`highpass` + `volumedetect`),
// integrated loudness (`ebur128`), per-packet hashes of a video stream (`framemd5` on a stream copy) and the
// order of an mp4's top-level atoms (read from the file's bytes), and per-frame PSNR of one file against another.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { open, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';

const run = promisify(execFile);
export const { ffmpeg, ffprobe } = resolveFfmpeg({
  ffmpegPath: process.env.FFMPEG_PATH,
  ffprobePath: process.env.FFPROBE_PATH,
});

/** Runs ffmpeg (no prompt, overwrite) and answers its log (stderr), where the analysis filters print. */
export async function ffmpegRun(args: string[], timeoutMs = 60_000): Promise<string> {
  const { stderr } = await run(ffmpeg, ['-hide_banner', '-nostdin', '-y', ...args], {
    encoding: 'utf8',
    timeout: timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stderr;
}

/** One stream as ffprobe describes it (the fields the tests read). */
export interface ProbedStream {
  codec_type: string;
  codec_name: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  r_frame_rate?: string;
  avg_frame_rate?: string;
  nb_frames?: string;
  duration?: string;
  sample_rate?: string;
  channels?: number;
}

/** ffprobe's streams and the container's duration. */
export async function probeFile(path: string): Promise<{ streams: ProbedStream[]; durationSec: number }> {
  const { stdout } = await run(
    ffprobe,
    ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', `file:${path}`],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const parsed = JSON.parse(stdout) as { streams: ProbedStream[]; format: { duration: string } };
  return { streams: parsed.streams, durationSec: Number(parsed.format.duration) };
}

/** The presentation time of every decoded video frame, in seconds (to check a constant frame rate). */
export async function frameTimes(path: string): Promise<number[]> {
  const { stdout } = await run(
    ffprobe,
    [
      ...['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'frame=pts_time'],
      ...['-of', 'csv=p=0', `file:${path}`],
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  return stdout
    .split('\n')
    .map((line) => line.trim().replace(/,$/, ''))
    .filter(Boolean)
    .map(Number);
}

/** Decoded frames `numbers` of a video as raw pictures of `pixFmt` (`bytesPerPixel` each, rows of `width`). */
async function rawFrames(
  path: string,
  numbers: number[],
  width: number,
  height: number,
  pixFmt: 'gray' | 'rgb24',
  bytesPerPixel: number,
): Promise<Buffer[]> {
  const select = numbers.map((n) => `eq(n\\,${n})`).join('+');
  const { stdout } = await run(
    ffmpeg,
    [
      ...['-v', 'error', '-i', `file:${path}`, '-vf', `select=${select}`, '-vsync', '0'],
      ...['-f', 'rawvideo', '-pix_fmt', pixFmt, 'pipe:1'],
    ],
    { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 },
  );
  const size = width * height * bytesPerPixel;
  assert.equal(stdout.length, size * numbers.length, `one ${width}x${height} picture per selected frame`);
  return numbers.map((_n, i) => stdout.subarray(i * size, (i + 1) * size));
}

/** Decoded frames `numbers` of a video as 8-bit grey pictures (rows of `width` bytes). */
export const greyFrames = (path: string, numbers: number[], width: number, height: number) =>
  rawFrames(path, numbers, width, height, 'gray', 1);

/** Decoded frames `numbers` of a video as RGB pictures (rows of `width` × 3 bytes). */
export const rgbFrames = (path: string, numbers: number[], width: number, height: number) =>
  rawFrames(path, numbers, width, height, 'rgb24', 3);

/** The red, green and blue of one pixel of an `rgbFrames` picture. */
export function rgbAt(frame: Buffer, width: number, x: number, y: number): [number, number, number] {
  const at = (y * width + x) * 3;
  return [frame[at]!, frame[at + 1]!, frame[at + 2]!];
}

/** Mean and maximum brightness of a run of pixels. */
export function pixelStats(pixels: Iterable<number>): { mean: number; max: number } {
  let sum = 0;
  let count = 0;
  let max = 0;
  for (const value of pixels) {
    sum += value;
    count += 1;
    max = Math.max(max, value);
  }
  return { mean: sum / count, max };
}

export const row = (frame: Buffer, width: number, y: number): Buffer =>
  frame.subarray(y * width, (y + 1) * width);
export function* column(frame: Buffer, width: number, height: number, x: number): Generator<number> {
  for (let y = 0; y < height; y += 1) yield frame[y * width + x]!;
}
/** Black as pad writes it (Y=16, grey 0..16 after conversion) with a margin for the encoder's noise. */
export const isBlack = (pixels: Iterable<number>) => pixelStats(pixels).max <= 32;
/** Clearly picture: the test sources' mean brightness is around 120. */
export const isPicture = (pixels: Iterable<number>) => pixelStats(pixels).mean >= 40;

/**
 * The black bars of a grey frame, in pixels from each edge: the rows (top, bottom) and columns (left, right)
 * that are black (`isBlack`), counted inwards until the first that is not.
 */
export function barWidths(
  frame: Buffer,
  width: number,
  height: number,
): { top: number; bottom: number; left: number; right: number } {
  const count = (size: number, line: (i: number) => Iterable<number>) => {
    let n = 0;
    while (n < size && isBlack(line(n))) n += 1;
    return n;
  };
  return {
    top: count(height, (y) => row(frame, width, y)),
    bottom: count(height, (y) => row(frame, width, height - 1 - y)),
    left: count(width, (x) => column(frame, width, height, x)),
    right: count(width, (x) => column(frame, width, height, width - 1 - x)),
  };
}

/** How many frames ffmpeg decoded from input `input`'s first stream, from its log at `-v verbose`. */
export function framesDecoded(log: string, input: number): number {
  const match = new RegExp(
    `Input stream #${input}:0 \\(video\\): \\d+ packets read \\(\\d+ bytes\\); (\\d+) frames decoded`,
  ).exec(log);
  assert.ok(
    match,
    `the log counts input ${input}'s decoded frames (run with -v verbose):\n${log.slice(-1500)}`,
  );
  return Number(match[1]);
}

/** The CPU time (user + system, seconds) of an ffmpeg run with `-benchmark`, from its log. */
export function benchmarkCpuSec(log: string): number {
  const match = /bench: utime=([\d.]+)s stime=([\d.]+)s/.exec(log);
  assert.ok(match, `the log has -benchmark's times:\n${log.slice(-1500)}`);
  return Number(match[1]) + Number(match[2]);
}

/** Runs an audio analysis chain over a file and answers ffmpeg's log. */
export const analyseAudio = (path: string, filters: string) =>
  ffmpegRun(['-i', `file:${path}`, '-map', '0:a:0', '-af', filters, '-f', 'null', '-']);

/** A stretch of sound between silences (`silencedetect`), in seconds; `end` undefined when it runs to the end. */
export interface SoundSpan {
  start: number;
  end: number | undefined;
}

/**
 * The stretches of sound of a file's audio after `prefilter` (`silencedetect` at −40 dB, silences of 50 ms or
 * more). At the end of a stream that ends in silence, `silencedetect` reports that silence's end too: that is
 * not a sound, and is left out (an end mark within 50 ms of `durationSec`, with no silence after it).
 */
export async function soundSpans(path: string, durationSec: number, prefilter = ''): Promise<SoundSpan[]> {
  const log = await analyseAudio(path, `${prefilter ? `${prefilter},` : ''}silencedetect=n=-40dB:d=0.05`);
  const marks = [...log.matchAll(/silence_(start|end): (-?[\d.]+)/g)].map((m) => ({
    kind: m[1]!,
    at: Number(m[2]),
  }));
  const spans: SoundSpan[] = [];
  for (const [i, mark] of marks.entries()) {
    if (mark.kind !== 'end') continue;
    const next = marks.slice(i + 1).find((m) => m.kind === 'start');
    if (!next && mark.at >= durationSec - 0.05) continue;
    spans.push({ start: mark.at, end: next?.at });
  }
  return spans;
}

/** Mean level (dBFS, `volumedetect`) between two times after a band filter chain; -Infinity when silent. */
export async function bandLevel(path: string, band: string, from: number, to: number): Promise<number> {
  const log = await analyseAudio(path, `atrim=start=${from}:end=${to},${band},volumedetect`);
  const match = /mean_volume: (-?[\d.]+|-inf) dB/.exec(log);
  assert.ok(match, `volumedetect printed a mean volume:\n${log.slice(-1500)}`);
  return match[1] === '-inf' ? -Infinity : Number(match[1]);
}

/** Below 300 Hz, steeply (three 2-pole lowpasses): a 150 Hz tone passes, 600 Hz and up are ~-36 dB and less. */
export const LOW_BAND = 'lowpass=f=300,lowpass=f=300,lowpass=f=300';
/** Above 2.5 kHz, steeply: a 4 kHz tone passes, 1 kHz and below are ~-48 dB and less. */
export const HIGH_BAND = 'highpass=f=2500,highpass=f=2500,highpass=f=2500';
/** Around 600 Hz: a 600 Hz tone passes, 150 Hz and 4 kHz are far down. */
export const MID_BAND = 'highpass=f=400,highpass=f=400,lowpass=f=900,lowpass=f=900';

/** Integrated loudness (LUFS) from `ebur128`'s summary. */
export async function integratedLoudness(path: string): Promise<number> {
  const log = await analyseAudio(path, 'ebur128');
  const match = /Integrated loudness:\s+I:\s+(-?[\d.]+) LUFS/.exec(log);
  assert.ok(match, `ebur128 printed an integrated loudness:\n${log.slice(-1500)}`);
  return Number(match[1]);
}

/**
 * The size and MD5 of every packet of the first video stream, copied without decoding (`framemd5`), in order.
 * H.264 parameter sets (SPS, PPS: NAL types 7 and 8) are taken out first: ffmpeg's concat demuxer repeats them
 * in the first key frame of each file it joins (35 bytes here), while every slice and SEI stays byte for byte.
 */
export async function videoPacketHashes(path: string): Promise<string[]> {
  const { stdout } = await run(
    ffmpeg,
    [
      ...['-v', 'error', '-i', `file:${path}`, '-map', '0:v:0', '-c', 'copy'],
      ...['-bsf:v', 'filter_units=remove_types=7|8', '-f', 'framemd5', 'pipe:1'],
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  // Lines: `stream, dts, pts, duration, size, hash`; timestamps differ after a concat, size and hash must not.
  return stdout
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const fields = line.split(',').map((f) => f.trim());
      return `${fields[4]}:${fields[5]}`;
    });
}

/** The type and size of every top-level box of an mp4, read from the file's bytes, in file order. */
export async function topLevelAtoms(path: string): Promise<{ type: string; offset: number; size: number }[]> {
  const file = await open(path, 'r');
  try {
    const { size: fileSize } = await file.stat();
    const atoms: { type: string; offset: number; size: number }[] = [];
    const header = Buffer.alloc(16);
    let offset = 0;
    while (offset + 8 <= fileSize) {
      await file.read(header, 0, 16, offset);
      let size = header.readUInt32BE(0);
      const type = header.toString('latin1', 4, 8);
      if (size === 1) size = Number(header.readBigUInt64BE(8));
      else if (size === 0) size = fileSize - offset;
      assert.ok(size >= 8, `a box of size ${size} at ${offset}`);
      atoms.push({ type, offset, size });
      offset += size;
    }
    assert.equal(offset, fileSize, 'the boxes cover the file exactly');
    return atoms;
  } finally {
    await file.close();
  }
}

/** The same mp4 with its mdat size set to 0 ("to the end of the file"), so only its packets tell its length. */
export function openEndedMdat(data: Buffer): Buffer {
  const copy = Buffer.from(data);
  for (let offset = 0; offset + 8 <= copy.length; offset += copy.readUInt32BE(offset)) {
    if (copy.toString('latin1', offset + 4, offset + 8) === 'mdat') {
      copy.writeUInt32BE(0, offset);
      return copy;
    }
  }
  throw new Error('no mdat box');
}

/** Per-frame PSNR (the `psnr` filter's stats file, `psnr_avg` of each frame; `inf` for identical frames). */
export async function framePsnr(path: string, reference: string): Promise<number[]> {
  const stats = `${path}.psnr.log`;
  const log = await ffmpegRun([
    ...['-v', 'error', '-i', `file:${path}`, '-i', `file:${reference}`],
    ...['-lavfi', `[0:v][1:v]psnr=stats_file=${stats}`, '-f', 'null', '-'],
  ]);
  assert.equal(log.trim(), '', 'both files decode without an error');
  const lines = (await readFile(stats, 'utf8')).split('\n').filter(Boolean);
  return lines.map((line) => {
    const value = /psnr_avg:(\S+)/.exec(line)![1]!;
    return value === 'inf' ? Infinity : Number(value);
  });
}
