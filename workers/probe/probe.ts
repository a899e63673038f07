import { spawn } from 'node:child_process';
import { open } from 'node:fs/promises';
import { setPriority } from 'node:os';
import {
  AppError,
  diedUnborn,
  niceAutogroup,
  restartingUnborn,
  tiedToThisThread,
} from '../../src/platform/core/index.ts';
import { imageLimitBreach, MediaOverLimit, probeMaxPixels, type MediaLimits } from './media-limits.ts';
import type { AssetKind } from '../../schemas/editor-terms.ts';
import { checkCompleteness } from './completeness.ts';
import type { ProbeJson, ProbeStream } from './probe-json.ts';
import { hasUndecodedVideo, readImageFileSize, videoBreach } from './header-limits.ts';
import { SNIFF_BYTES, sniffContainer, type MediaContainer, type SniffedContainer } from './sniff.ts';

/** What the probe found. */
export interface ProbedMedia {
  kind: AssetKind;
  /** From the probe: `image/png`, `image/jpeg`, `image/webp`, `video/mp4`, `video/quicktime`, `audio/mpeg`, `audio/wav`, `audio/aac`, `audio/mp4`. */
  contentType: string;
  /** The demuxer that read it (`mov`, `mp3`, `wav`, `aac`, `png_pipe`, `jpeg_pipe`, `webp_pipe`, ...). */
  format: string;
  duration_sec?: number;
  width?: number;
  height?: number;
}

/** The binaries (from `resolveFfmpeg`) and the time each child may take. */
export interface MediaProbeOptions {
  ffmpegPath: string;
  ffprobePath: string;
  /** Per child process (ffprobe, and ffmpeg when packets must be read); default 30 s. */
  timeoutMs?: number;
  /**
   * The limits of media from users (docs/editor.md "Media limits"): when given, a file past them is refused
   * with `MediaOverLimit` from its header, and ffprobe decodes no picture larger than `probeMaxPixels`.
   */
  limits?: MediaLimits;
}

/** The one message a client sees for every refused file: what exactly was wrong stays in the logs. */
export const UNSUPPORTED_MEDIA_MESSAGE = 'The file is not a supported image, video or audio file';

/** The 415 answer (`{ error: 'unsupported_media', message }`); `reason` is kept as the cause, for logs only. */
export function unsupportedMedia(reason: string): AppError {
  const error = new AppError('unsupported_media', 'unsupported_media', {
    message: UNSUPPORTED_MEDIA_MESSAGE,
  });
  error.cause = reason;
  return error;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** Probes and checks yield the CPU to the API, like renders. */
const PROBE_NICENESS = 10;
/** ffprobe's JSON for a real file is a few KB; a file with thousands of streams is not one we want. */
const MAX_PROBE_OUTPUT = 1024 * 1024;
const KEEP_STDERR = 2048;
const IMAGE_TYPES: Readonly<Record<string, string>> = {
  png_pipe: 'image/png',
  jpeg_pipe: 'image/jpeg',
  webp_pipe: 'image/webp',
};
const IMAGE_CONTAINERS: ReadonlySet<MediaContainer> = new Set(['png', 'jpeg', 'webp']);
const AUDIO_TYPES: Readonly<Record<string, string>> = {
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  aac: 'audio/aac',
};

/** Reads the container from the file's first bytes (never its name or a header), or null. */
export async function sniffFile(path: string): Promise<SniffedContainer | null> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await file.read(head, 0, SNIFF_BYTES, 0);
    return sniffContainer(head.subarray(0, bytesRead));
  } finally {
    await file.close();
  }
}

/**
 * What the local file at `path` is, or a 415 `AppError`: sniffed by magic bytes, checked whole by its
 * declared sizes, then read by ffprobe forced onto the sniffed demuxer with only the file and pipe protocols,
 * so neither a playlist nor a reference inside the file can make it open anything else.
 */
export async function probeFile(path: string, options: MediaProbeOptions): Promise<ProbedMedia> {
  return probeChecked(path, options, interpretProbe);
}

/**
 * The checks and the one ffprobe run behind every probe of user media (`probeFile`, `probeExportSource`):
 * sniff, completeness, ffprobe on the sniffed demuxer, then `interpret` on its JSON, and last, for an mp4 whose
 * extent only its packets tell, a packet read. `interpret` runs before that read so a file it refuses costs no
 * second child. With `limits`, an image's header is judged before completeness, ffprobe decodes under
 * `-max_pixels`, and a video's values are judged before `interpret`. Every refusal is a 415 `AppError`
 * (`MediaOverLimit` past a limit); a binary that cannot start rejects with a plain `Error`.
 */
export async function probeChecked<T>(
  path: string,
  options: MediaProbeOptions,
  interpret: (json: ProbeJson, sniffed: SniffedContainer) => T,
): Promise<T> {
  const { limits } = options;
  const sniffed = await sniffFile(path);
  if (!sniffed) throw unsupportedMedia('no accepted container signature');
  if (limits && IMAGE_CONTAINERS.has(sniffed.container)) await checkImageHeader(path, limits);
  const completeness = await checkCompleteness(path, sniffed.container);
  if (completeness === 'truncated') throw unsupportedMedia(`truncated ${sniffed.container}`);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const decodeBound = limits ? ['-max_pixels', String(probeMaxPixels(limits))] : [];
  const run = await runLimited(options.ffprobePath, ffprobeArgs(path, sniffed, decodeBound), timeoutMs);
  if (run.outcome !== 'exited' || run.code !== 0) {
    if (limits) await checkVideoHeader(path, sniffed, { ...options, limits }, timeoutMs);
    throw unsupportedMedia(`ffprobe ${describeRun(run)}: ${run.stderr.trim()}`);
  }
  const json = parseProbe(run.stdout);
  if (limits) {
    const breach = videoBreach(json, limits);
    if (breach) throw new MediaOverLimit('video', breach);
    if (hasUndecodedVideo(json)) {
      await checkVideoHeader(path, sniffed, { ...options, limits }, timeoutMs);
      throw unsupportedMedia('a video whose first frame did not decode within max_pixels');
    }
  }
  const interpreted = interpret(json, sniffed);
  // Only an mp4 with an open-ended box leaves the question open, and only reading its packets answers it.
  if (completeness === 'unknown' && sniffed.container === 'mov') {
    const read = await runLimited(options.ffmpegPath, packetReadArgs(path), timeoutMs);
    if (read.outcome !== 'exited' || read.code !== 0)
      throw unsupportedMedia(`packet read ${describeRun(read)}: ${read.stderr.trim()}`);
  }
  return interpreted;
}

/** Refuses an image whose header declares more than the limits, or no size at all, before any child reads it. */
async function checkImageHeader(path: string, limits: MediaLimits): Promise<void> {
  const size = await readImageFileSize(path);
  if (size.status !== 'size') throw unsupportedMedia('an image header without a readable size');
  const breach = imageLimitBreach(size, limits);
  if (breach) throw new MediaOverLimit('image', breach);
}

/**
 * Why a video's probe failed, when it was the limits: `-max_pixels` fails the decode of a frame past them, and
 * a second ffprobe that decodes nothing (`-skip_frame all`) reads what the container declares, so a file
 * that is merely too large is refused naming the limit. Returns when the container is within the limits.
 */
async function checkVideoHeader(
  path: string,
  sniffed: SniffedContainer,
  options: MediaProbeOptions & { limits: MediaLimits },
  timeoutMs: number,
): Promise<void> {
  if (sniffed.container !== 'mov') return;
  const headerOnly = ['-skip_frame', 'all'];
  const run = await runLimited(options.ffprobePath, ffprobeArgs(path, sniffed, headerOnly), timeoutMs);
  if (run.outcome !== 'exited' || run.code !== 0) return;
  const breach = videoBreach(parseProbe(run.stdout), options.limits);
  if (breach) throw new MediaOverLimit('video', breach);
}

/** Input options shared by every child that opens user media. */
export function hostileInputArgs(sniffed: SniffedContainer): string[] {
  // `enable_drefs` (off by default, said anyway) would follow a QuickTime file's references to other files.
  const demuxerOptions = sniffed.demuxer === 'mov' ? ['-enable_drefs', '0'] : [];
  return ['-protocol_whitelist', 'file,pipe', '-f', sniffed.demuxer, ...demuxerOptions];
}

/** `decoding`: options that bound or skip the decoding ffprobe does to fill in what a header leaves out. */
function ffprobeArgs(path: string, sniffed: SniffedContainer, decoding: string[] = []): string[] {
  const output = ['-print_format', 'json', '-show_format', '-show_streams'];
  const input = [...decoding, ...hostileInputArgs(sniffed)];
  return ['-hide_banner', '-v', 'error', ...input, ...output, `file:${path}`];
}

/**
 * Demuxes every audio and video packet without decoding: the demuxer flags a packet that the file ends
 * inside of as corrupt, and `-xerror` makes that fatal.
 */
function packetReadArgs(path: string): string[] {
  const input = hostileInputArgs({ container: 'mov', demuxer: 'mov' });
  const output = ['-map', '0:v?', '-map', '0:a?', '-c', 'copy', '-f', 'null', '-'];
  return ['-hide_banner', '-nostdin', '-v', 'error', '-xerror', ...input, '-i', `file:${path}`, ...output];
}

function parseProbe(stdout: string): ProbeJson {
  try {
    const parsed: unknown = JSON.parse(stdout);
    if (typeof parsed === 'object' && parsed !== null) return parsed as ProbeJson;
  } catch {
    // fall through: unreadable output is a refused file, like any other probe failure
  }
  throw unsupportedMedia('ffprobe printed no JSON');
}

/** The picture and sound of a file: cover art in an m4a or mp3 is a one-picture "video" stream, not a video. */
export function mainStreams(json: ProbeJson): {
  video: ProbeStream | undefined;
  audio: ProbeStream | undefined;
} {
  const streams = json.streams ?? [];
  const video = streams.find((s) => s.codec_type === 'video' && s.disposition?.attached_pic !== 1);
  const audio = streams.find((s) => s.codec_type === 'audio');
  return { video, audio };
}

/** The kind, content type and metadata, from the streams ffprobe found (a file without any is refused). */
export function interpretProbe(json: ProbeJson, sniffed: SniffedContainer): ProbedMedia {
  const { video, audio } = mainStreams(json);
  const format = sniffed.demuxer;
  const imageType = IMAGE_TYPES[format];
  if (imageType) {
    if (!video) throw unsupportedMedia(`${format} without a picture`);
    return { kind: 'image', contentType: imageType, format, ...dimensions(video) };
  }
  const duration = Number(json.format?.duration);
  if (!Number.isFinite(duration) || duration <= 0) throw unsupportedMedia(`${format} without a duration`);
  const duration_sec = Math.round(duration * 1000) / 1000;
  if (format === 'mov') {
    if (video) {
      // A file without `ftyp` predates it, so it is QuickTime too.
      const brand = json.format?.tags?.major_brand;
      const contentType = brand === undefined || brand === 'qt  ' ? 'video/quicktime' : 'video/mp4';
      return { kind: 'video', contentType, format, duration_sec, ...dimensions(video) };
    }
    if (audio) return { kind: 'audio', contentType: 'audio/mp4', format, duration_sec };
    throw unsupportedMedia('mov without audio or video');
  }
  if (!audio) throw unsupportedMedia(`${format} without audio`);
  return { kind: 'audio', contentType: AUDIO_TYPES[format]!, format, duration_sec };
}

/** Width and height as shown: a phone video stored landscape with a 90° rotation is portrait. */
function dimensions(stream: ProbeStream): { width: number; height: number } {
  const { width, height } = stream;
  if (!width || !height || width <= 0 || height <= 0) throw unsupportedMedia('a picture without a size');
  const rotation =
    stream.side_data_list?.find((data) => data.rotation !== undefined)?.rotation ??
    Number(stream.tags?.rotate ?? 0);
  return Math.abs(rotation) % 180 === 90 ? { width: height, height: width } : { width, height };
}

interface RunResult {
  outcome: 'exited' | 'timed_out' | 'too_much_output';
  code: number | null;
  stdout: string;
  stderr: string;
}

function describeRun(run: RunResult): string {
  if (run.outcome === 'timed_out') return 'timed out';
  if (run.outcome === 'too_much_output') return 'printed too much';
  return `exited with code ${run.code}`;
}

/**
 * Runs one child, niced, killed (SIGKILL, by its pid) when it outlives `timeoutMs` or prints more than
 * `MAX_PROBE_OUTPUT`; rejects only when it cannot start (a missing binary is a server fault, not a 415).
 */
function runLimited(command: string, args: string[], timeoutMs: number): Promise<RunResult> {
  // A child that a stop signal killed before it ran starts again (tied-child.ts).
  return restartingUnborn(() => runLimitedOnce(command, args, timeoutMs));
}

function runLimitedOnce(
  command: string,
  args: string[],
  timeoutMs: number,
): Promise<{ result: RunResult; unborn: boolean }> {
  return new Promise((resolve, reject) => {
    // Arguments go straight to execve: no shell ever sees a path.
    const tied = tiedToThisThread(command, args); // in its own process group, like every child a drain needs
    const child = spawn(tied.command, tied.args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: tied.detached,
    });
    const unborn = diedUnborn(child.pid, tied.command);
    if (child.pid !== undefined && !unborn) {
      try {
        setPriority(child.pid, PROBE_NICENESS);
      } catch {
        // It may already have exited, and then needs no priority.
      }
      if (tied.detached) niceAutogroup(child.pid, PROBE_NICENESS);
    }
    let outcome: RunResult['outcome'] = 'exited';
    const stop = (why: RunResult['outcome']) => {
      outcome = why;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop('timed_out'), timeoutMs);
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > MAX_PROBE_OUTPUT) stop('too_much_output');
      else stdout.push(chunk);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-KEEP_STDERR);
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`${command} could not be started: ${error.message}`));
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      const result = { outcome, code, stdout: Buffer.concat(stdout).toString('utf8'), stderr };
      resolve({ result, unborn: unborn && outcome === 'exited' });
    });
  });
}
