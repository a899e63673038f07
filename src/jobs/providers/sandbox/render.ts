import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runFfmpeg, spawnFailure, type RunResult } from '../../../../workers/index.ts';
import { fontFile as packagedFontFile } from '../../../platform/index.ts';
import { imageRenderPlan, videoRenderPlan, type RenderPlan, type VideoPlanSpec } from './render-args.ts';
import { createRenderSlots } from './render-slots.ts';

/** A video to render (sizes from `videoDimensions`): the plan's spec, with the input image's bytes. */
export interface VideoRender extends VideoPlanSpec {
  image?: Buffer;
}

/** Images to render (sizes from `imageDimensions`); non-empty `references` is edit mode. */
export interface ImageRender {
  prompt: string;
  width: number;
  height: number;
  count: number;
  seed: number;
  references: Buffer[];
}

/** Renders sandbox media with ffmpeg, at most `concurrency` processes at once, the rest in FIFO order. */
export interface SandboxRenderer {
  /** Renders an H.264 mp4 (+ AAC audio only when `audio`) of exactly durationSeconds (±0.1 s) at width x height showing the prompt; with `image`, a slow zoom over that image. Resolves with the path of a temp file the caller owns (and deletes). */
  video(spec: VideoRender, signal?: AbortSignal): Promise<string>;
  /** Renders `count` PNG files of width x height showing the prompt; with references, composites them (edit mode). Resolves with temp file paths the caller owns. */
  images(spec: ImageRender, signal?: AbortSignal): Promise<string[]>;
  /** How many renders are running / waiting (for tests and metrics). */
  readonly running: number;
  readonly queued: number;
  /** Kills running ffmpeg children (SIGKILL) and rejects queued renders. */
  close(): Promise<void>;
}

/** Options of {@link createSandboxRenderer}. */
export interface SandboxRendererOptions {
  ffmpegPath: string;
  concurrency: number;
  /** Where outputs (and per-render scratch directories) go; default the OS temp directory. */
  tmpDir?: string;
  /** TTF for captions; default DejaVu Sans from `dejavu-fonts-ttf`. */
  fontFile?: string;
  /** One ffmpeg run's limit before it is killed (default 120 s): a stuck decoder must not hold a slot forever. */
  timeoutMs?: number;
}

/** A failed render: a short readable message; ffmpeg's last stderr lines are in `details`. */
export class RenderError extends Error {
  constructor(
    message: string,
    readonly details = '',
  ) {
    super(message);
    this.name = 'RenderError';
  }
}

const DETAIL_LINES = 12;
/** Niceness of render processes (0 normal, 19 lowest): below the service, so renders use spare CPU. */
const RENDER_NICENESS = 10;
// Messages ffmpeg prints when an input file is not a picture it can decode.
const DECODE_FAILURE =
  /invalid data found|error while decoding|could not find codec|cannot determine format|decod/i;

const closedError = () => new RenderError('render cancelled: the renderer is closed');
const cancelledError = () => new RenderError('render cancelled: the request was cancelled');

function lastLines(text: string): string {
  return text.trim().split('\n').slice(-DETAIL_LINES).join('\n');
}

function checkSize(kind: string, width: number, height: number): void {
  for (const [name, value] of [
    ['width', width],
    ['height', height],
  ] as const) {
    if (!Number.isInteger(value) || value < 16 || value > 4096 || value % 2 !== 0) {
      throw new RenderError(`invalid ${kind} render: ${name} must be an even integer from 16 to 4096`);
    }
  }
}

function checkVideo(spec: VideoRender): void {
  checkSize('video', spec.width, spec.height);
  if (!(Number.isFinite(spec.durationSeconds) && spec.durationSeconds > 0 && spec.durationSeconds <= 600)) {
    throw new RenderError('invalid video render: durationSeconds must be from 0 to 600');
  }
}

function checkImages(spec: ImageRender): void {
  checkSize('image', spec.width, spec.height);
  if (!Number.isInteger(spec.count) || spec.count < 1 || spec.count > 16) {
    throw new RenderError('invalid image render: count must be an integer from 1 to 16');
  }
}

/** What the caller of one ffmpeg run knows beyond its result, to say why it failed. */
interface FailedRunContext {
  kind: 'video' | 'image';
  ffmpegPath: string;
  /** Whether the user gave input files (their bytes are the likely culprit of a decoding error). */
  inputs: boolean;
  closed: boolean;
  cancelled: boolean;
  /** The time limit, as the message says it. */
  limitText: string;
}

/** The RenderError of a failed ffmpeg run: the first reason that applies, ffmpeg's last lines as details. */
function failedRender(result: Extract<RunResult, { ok: false }>, run: FailedRunContext): RenderError {
  const { kind } = run;
  if (result.reason === 'spawn') {
    return new RenderError(
      `${kind} render failed: ffmpeg could not be started`,
      spawnFailure(result, run.ffmpegPath),
    );
  }
  if (run.closed) return closedError();
  if (run.cancelled) return cancelledError();
  const details = lastLines(result.stderrTail);
  if (result.reason === 'timeout')
    return new RenderError(`${kind} render timed out after ${run.limitText}`, details);
  if (run.inputs && DECODE_FAILURE.test(result.stderrTail)) {
    const what = kind === 'video' ? 'the input image' : 'a reference image';
    return new RenderError(`${kind} render failed: ${what} could not be decoded`, details);
  }
  const how = result.code === null ? `was killed by ${result.signal}` : `exited with code ${result.code}`;
  return new RenderError(`${kind} render failed: ffmpeg ${how}`, details);
}

/**
 * A signal that aborts when either source does (a render stops on its request's cancel and on the renderer's
 * close), and `unlink` to forget it afterwards. Not `AbortSignal.any`: Node 20 keeps what it made reachable
 * from a source for as long as that source lives, and the renderer's close signal lives as long as the
 * renderer.
 */
function eitherAborts(a: AbortSignal, b: AbortSignal | undefined): { signal: AbortSignal; unlink(): void } {
  const controller = new AbortController();
  const abort = () => controller.abort();
  if (a.aborted || b?.aborted) abort();
  for (const source of [a, b]) source?.addEventListener('abort', abort, { once: true });
  return {
    signal: controller.signal,
    unlink: () => {
      for (const source of [a, b]) source?.removeEventListener('abort', abort);
    },
  };
}

/** Makes a render's ffmpeg arguments from the paths of its scratch files. */
type PlanFor = (scratch: { textFile: string; inputFiles: string[] }) => RenderPlan;

/** One render: the files ffmpeg reads and writes, and what its caller gets back. */
interface RenderJob<T> {
  kind: 'video' | 'image';
  /** The user's bytes (the input image, the references), written to scratch files for ffmpeg. */
  inputs: Buffer[];
  plan: PlanFor;
  /** Files ffmpeg writes; deleted unless the render succeeds. */
  outputs: string[];
  result: T;
}

function videoJob(spec: VideoRender, fontFile: string, output: string): RenderJob<string> {
  return {
    kind: 'video',
    inputs: spec.image ? [spec.image] : [],
    plan: ({ textFile, inputFiles }) =>
      videoRenderPlan(spec, { textFile, fontFile, imageFile: inputFiles[0], output }),
    outputs: [output],
    result: output,
  };
}

function imagesJob(spec: ImageRender, fontFile: string, outputs: string[]): RenderJob<string[]> {
  return {
    kind: 'image',
    inputs: spec.references,
    plan: ({ textFile, inputFiles }) =>
      imageRenderPlan(spec, { textFile, fontFile, referenceFiles: inputFiles, outputs }),
    outputs,
    result: outputs,
  };
}

/** Writes a render's files (the user's bytes, the caption) into `dir`; returns ffmpeg's arguments. */
async function writeScratch(dir: string, inputs: Buffer[], plan: PlanFor): Promise<string[]> {
  // User bytes go to plain files with no extension: ffmpeg picks the decoder from their content.
  const inputFiles = inputs.map((_, index) => join(dir, `input-${index}`));
  await Promise.all(inputs.map((bytes, index) => writeFile(inputFiles[index]!, bytes)));
  const textFile = join(dir, 'caption.txt');
  const { args, captionText } = plan({ textFile, inputFiles });
  await writeFile(textFile, captionText, 'utf8');
  return args;
}

/** Rejects when an ffmpeg that exited well left one of its outputs missing or empty. */
async function checkOutputs(kind: 'video' | 'image', outputs: string[]): Promise<void> {
  for (const output of outputs) {
    const size = await stat(output).then(
      (s) => s.size,
      () => 0,
    );
    if (size === 0) throw new RenderError(`${kind} render failed: ffmpeg produced no output`);
  }
}

/** The sandbox provider's renderer: ffmpeg children (through the shared runner) behind a FIFO of slots. */
export function createSandboxRenderer(options: SandboxRendererOptions): SandboxRenderer {
  const { ffmpegPath } = options;
  const tmpRoot = resolve(options.tmpDir ?? tmpdir());
  const font = options.fontFile ?? packagedFontFile();
  const timeoutMs = options.timeoutMs ?? 120_000;
  const limitText = timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`;
  const slots = createRenderSlots(options.concurrency, cancelledError);
  /** Aborted by close(): it kills every running ffmpeg. */
  const closing = new AbortController();
  const inFlight = new Set<Promise<unknown>>();

  /**
   * Runs one ffmpeg to its end (none starts once the render is cancelled or the renderer closed); rejects
   * with a readable RenderError.
   */
  async function runOne(job: RenderJob<unknown>, args: string[], signal?: AbortSignal): Promise<void> {
    const stop = eitherAborts(closing.signal, signal);
    try {
      // Arguments go straight to execve: no shell ever sees the prompt or a path. Niced: a queue of renders
      // must never slow down submits and reads.
      const result = await runFfmpeg({
        ffmpegPath,
        args,
        timeoutMs,
        niceness: RENDER_NICENESS,
        signal: stop.signal,
      });
      if (result.ok) return;
      throw failedRender(result, {
        kind: job.kind,
        ffmpegPath,
        inputs: job.inputs.length > 0,
        closed: closing.signal.aborted,
        cancelled: signal?.aborted === true,
        limitText,
      });
    } finally {
      stop.unlink();
    }
  }

  /** Holds a slot and a scratch directory for one render; outputs are deleted unless the render succeeds. */
  async function render<T>(job: RenderJob<T>, signal: AbortSignal | undefined): Promise<T> {
    if (closing.signal.aborted) throw closedError();
    await slots.acquire(signal);
    let scratch: string | undefined;
    try {
      await mkdir(tmpRoot, { recursive: true });
      scratch = await mkdtemp(join(tmpRoot, 'mf-render-'));
      await runOne(job, await writeScratch(scratch, job.inputs, job.plan), signal);
      await checkOutputs(job.kind, job.outputs);
      return job.result;
    } catch (error) {
      await Promise.all(job.outputs.map((output) => rm(output, { force: true })));
      throw error;
    } finally {
      if (scratch) await rm(scratch, { recursive: true, force: true });
      slots.release();
    }
  }

  /** Checks a render's request, then queues it, tracked so that close() can wait for it. */
  function submit<T>(
    check: () => void,
    job: () => RenderJob<T>,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    try {
      check();
    } catch (error) {
      return Promise.reject(error as Error);
    }
    const promise = render(job(), signal);
    inFlight.add(promise);
    const forget = () => inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  const outputPath = (extension: string) => join(tmpRoot, `mf-sandbox-${randomUUID()}.${extension}`);

  return {
    video: (spec, signal) =>
      submit(
        () => checkVideo(spec),
        () => videoJob(spec, font, outputPath('mp4')),
        signal,
      ),
    images: (spec, signal) =>
      submit(
        () => checkImages(spec),
        () =>
          imagesJob(
            spec,
            font,
            Array.from({ length: spec.count }, () => outputPath('png')),
          ),
        signal,
      ),

    get running() {
      return slots.running;
    },

    get queued() {
      return slots.queued;
    },

    async close() {
      closing.abort();
      slots.rejectWaiting(closedError());
      await Promise.allSettled([...inFlight]);
    },
  };
}
