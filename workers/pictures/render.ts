// Makes the pictures of one local media file (docs/editor.md, Pictures of assets): probe, then the poster,
// the filmstrip and the waveform's peaks, from one read of the file where they can be and one child each
// otherwise, every ffmpeg run by the one runner (workers/ffmpeg/runner.ts: niced, killed on time-out or abort).
// A picture that fails is left out and said why; the others still come.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { runFfmpeg, spawnFailure, type RunResult } from '../ffmpeg/runner.ts';
import {
  FILMSTRIP_ONE_PASS_MAX_SEC,
  filmstripArgs,
  filmstripFrameCount,
  onePassArgs,
  PLAIN_PATH,
  posterArgs,
  waveformArgs,
  waveformSlicing,
  type OnePassSpec,
} from './picture-args.ts';
import { astatsMeasuresPeakAlone } from './astats-options.ts';
import { parsePeaks, type Waveform } from './peaks.ts';
import { probePictureSource, type PictureSource } from './picture-probe.ts';

/** The binaries, where the outputs go, and how long each child may take. */
export interface RenderPicturesOptions {
  ffmpegPath: string;
  ffprobePath: string;
  /** A private scratch folder of the caller's: the JPEGs and the peaks file are written there. */
  workDir: string;
  /** Per child (the probe and each picture). */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Added niceness of every ffmpeg child (runner's default when absent). */
  niceness?: number;
}

/** What was made; a picture that does not apply or failed is absent. */
export interface RenderedPictures {
  hasSound: boolean;
  /** The poster's JPEG file (images and videos). */
  poster?: string;
  /** The filmstrip's JPEG file and how many frames it shows (videos). */
  filmstrip?: { path: string; frames: number };
  /** The waveform (files with sound). */
  waveform?: Waveform;
  /** Why a picture that applies was not made, one line each, for the log (never for users). */
  failures: string[];
  /**
   * Whether a missing picture may come on another try: its ffmpeg ran out of time, was stopped or could not
   * start. A file that ffmpeg reads and refuses gives the same answer every time.
   */
  retryable: boolean;
}

/**
 * Makes every picture that applies to the file at `path`. Rejects only when the file cannot be probed (a 415
 * `AppError`, or an `Error` when ffprobe cannot start): then nothing applies.
 */
export async function renderPictures(
  path: string,
  options: RenderPicturesOptions,
): Promise<RenderedPictures> {
  const source = await probePictureSource(path, {
    ffmpegPath: options.ffmpegPath,
    ffprobePath: options.ffprobePath,
    timeoutMs: options.timeoutMs,
  });
  const rendered: RenderedPictures = { hasSound: source.hasSound, failures: [], retryable: false };
  /** Runs one child; false when it failed (noted, with whether another try may do better). */
  const run = async (what: string, args: string[]): Promise<boolean> => {
    const result = await runFfmpeg({
      ffmpegPath: options.ffmpegPath,
      args,
      timeoutMs: options.timeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.niceness !== undefined ? { niceness: options.niceness } : {}),
    });
    if (!result.ok) {
      rendered.failures.push(`${what}: ${describe(result, options.ffmpegPath)}`);
      if (result.reason !== 'exit') rendered.retryable = true;
    }
    return result.ok;
  };

  const plan = await planPictures(source, options);
  rendered.failures.push(...plan.failures);
  const { poster, filmstrip, waveform } = plan;
  const made = { poster: false, filmstrip: false, waveform: false };
  const oneRead = !filmstrip || filmstrip.durationSec <= FILMSTRIP_ONE_PASS_MAX_SEC;
  if (oneRead && [poster, filmstrip, waveform].filter(Boolean).length >= 2) {
    // One child for all of them; should it fail, each is tried on its own, so that one stream ffmpeg cannot
    // read costs only its own picture (unless time ran out: then another child would fare no better).
    const args = onePassArgs(
      { path, sniffed: source.sniffed },
      { ...(poster && { poster }), ...(filmstrip && { filmstrip }), ...(waveform && { waveform }) },
    );
    if (await run('pictures', args)) made.poster = made.filmstrip = made.waveform = true;
    else if (rendered.retryable) return rendered;
  }
  const input = { path, sniffed: source.sniffed };
  if (poster && !made.poster) {
    made.poster = await run('poster', posterArgs({ ...input, stream: poster.stream }, poster.output));
  }
  if (filmstrip && !made.filmstrip) {
    const args = filmstripArgs({ ...input, stream: filmstrip.stream }, filmstrip, filmstrip.output);
    made.filmstrip = await run('filmstrip', args);
  }
  if (waveform && !made.waveform) {
    await rm(waveform.peaksFile, { force: true }); // what a failed pass may have begun
    made.waveform = await run('waveform', waveformArgs({ ...input, stream: waveform.stream }, waveform));
  }

  if (poster && made.poster) rendered.poster = poster.output;
  if (filmstrip && made.filmstrip) rendered.filmstrip = { path: filmstrip.output, frames: filmstrip.frames };
  if (waveform && made.waveform) {
    const peaks = parsePeaks(await readFile(waveform.peaksFile, 'utf8').catch(() => ''));
    if (peaks.length > 0) rendered.waveform = { peaks_per_second: waveform.slicing.peaksPerSecond, peaks };
    else rendered.failures.push('waveform: no peaks were written');
  }
  return rendered;
}

/** Which pictures apply to the probed file, with their streams and outputs; why one that applies cannot be. */
async function planPictures(
  source: PictureSource,
  options: RenderPicturesOptions,
): Promise<OnePassSpec & { failures: string[] }> {
  const plan: OnePassSpec & { failures: string[] } = { failures: [] };
  const { picture, sound } = source;
  if (picture) {
    plan.poster = { stream: picture.stream, output: join(options.workDir, 'poster.jpg') };
    if (source.kind === 'video' && picture.durationSec === null) {
      plan.failures.push('filmstrip: the video has no duration');
    } else if (source.kind === 'video' && picture.durationSec !== null) {
      plan.filmstrip = {
        stream: picture.stream,
        durationSec: picture.durationSec,
        frames: filmstripFrameCount(picture.durationSec, picture.fps),
        output: join(options.workDir, 'filmstrip.jpg'),
      };
    }
  }
  if (source.hasSound && !sound) plan.failures.push('waveform: the sound has no sample rate or length');
  if (sound) {
    const peaksFile = join(options.workDir, 'peaks.txt');
    if (!PLAIN_PATH.test(peaksFile))
      plan.failures.push('waveform: a scratch path ffmpeg filters cannot name');
    else {
      plan.waveform = {
        stream: sound.stream,
        slicing: waveformSlicing(sound.durationSec, sound.sampleRate),
        peaksFile,
        peakAlone: await astatsMeasuresPeakAlone(options.ffmpegPath),
      };
    }
  }
  return plan;
}

function describe(result: Extract<RunResult, { ok: false }>, ffmpegPath: string): string {
  const tail = spawnFailure(result, ffmpegPath).trim().split('\n').slice(-3).join(' | ');
  return `${result.reason} (code ${result.code}, signal ${result.signal}) ${tail}`.trim();
}
