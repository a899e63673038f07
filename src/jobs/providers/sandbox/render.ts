import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { setPriority, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fontFile as packagedFontFile, niceAutogroup, tiedToThisThread } from '../../../platform/index.ts';
import { imageRenderPlan, videoRenderPlan, type RenderPlan, type VideoPlanSpec } from './render-args.ts';

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

const STDERR_KEEP_BYTES = 8192;
const DETAIL_LINES = 12;
/** Niceness of render processes (0 normal, 19 lowest): below the service, so renders use spare CPU. */
const RENDER_NICENESS = 10;
// Messages ffmpeg prints when an input file is not a picture it can decode.
const DECODE_FAILURE =
  /invalid data found|error while decoding|could not find codec|cannot determine format|decod/i;

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

/** The sandbox provider's renderer: real ffmpeg children behind a FIFO of `concurrency` slots. */
export function createSandboxRenderer(options: SandboxRendererOptions): SandboxRenderer {
  const concurrency = Math.max(1, Math.floor(options.concurrency));
  const tmpRoot = resolve(options.tmpDir ?? tmpdir());
  const font = options.fontFile ?? packagedFontFile();
  const timeoutMs = options.timeoutMs ?? 120_000;
  const limitText = timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`;
  const waiting: Array<{ start: () => void; cancel: (error: Error) => void }> = [];
  const children = new Set<ChildProcess>();
  const inFlight = new Set<Promise<unknown>>();
  let active = 0;
  let closed = false;

  const closedError = () => new RenderError('render cancelled: the renderer is closed');
  const abortedError = () => new RenderError('render cancelled: the request was cancelled');

  /** A slot; an aborted render leaves the queue at once (a cancelled request must not wait for, or hold, one). */
  function acquire(signal: AbortSignal | undefined): Promise<void> {
    if (closed) return Promise.reject(closedError());
    if (signal?.aborted) return Promise.reject(abortedError());
    if (active < concurrency) {
      active += 1;
      return Promise.resolve();
    }
    return new Promise((start, cancel) => {
      const waiter = {
        start: () => {
          signal?.removeEventListener('abort', leave);
          start();
        },
        cancel,
      };
      const leave = () => {
        const index = waiting.indexOf(waiter);
        if (index !== -1) waiting.splice(index, 1);
        cancel(abortedError());
      };
      signal?.addEventListener('abort', leave, { once: true });
      waiting.push(waiter);
    });
  }

  function release(): void {
    // The slot passes straight to the next waiter, so `running` never dips between two renders.
    const next = waiting.shift();
    if (next) next.start();
    else active -= 1;
  }

  /** Runs one ffmpeg; rejects with a readable RenderError. `inputs` says whether user files were given. */
  function runFfmpeg(
    args: string[],
    kind: 'video' | 'image',
    inputs: boolean,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    if (closed) return Promise.reject(closedError());
    if (signal?.aborted) return Promise.reject(abortedError());
    return new Promise((resolvePromise, reject) => {
      // Arguments go straight to execve: no shell ever sees the prompt or a path. Tied, so in a process group
      // of its own: a signal to the service's group leaves a render in flight to finish during the drain.
      const tied = tiedToThisThread(options.ffmpegPath, args);
      const child = spawn(tied.command, tied.args, {
        stdio: ['ignore', 'ignore', 'pipe'],
        detached: tied.detached,
      });
      children.add(child);
      // Renders yield the CPU to the API: a queue of renders must never slow down submits and reads.
      if (child.pid !== undefined) {
        try {
          setPriority(child.pid, RENDER_NICENESS);
        } catch {
          // The child may already have exited; it then needs no priority.
        }
        if (tied.detached) niceAutogroup(child.pid, RENDER_NICENESS);
      }
      let stderr = '';
      let timedOut = false;
      let spawnError: Error | undefined;
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, timeoutMs);
      const abort = () => child.kill('SIGKILL');
      signal?.addEventListener('abort', abort, { once: true });
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (chunk: string) => {
        stderr = (stderr + chunk).slice(-STDERR_KEEP_BYTES);
      });
      child.once('error', (error) => {
        spawnError = error;
      });
      child.once('close', (code, exitSignal) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', abort);
        children.delete(child);
        const details = lastLines(stderr);
        if (spawnError)
          reject(new RenderError(`${kind} render failed: ffmpeg could not be started`, spawnError.message));
        else if (code === 0) resolvePromise();
        else if (closed) reject(closedError());
        else if (signal?.aborted) reject(abortedError());
        else if (timedOut) reject(new RenderError(`${kind} render timed out after ${limitText}`, details));
        else if (inputs && DECODE_FAILURE.test(stderr)) {
          const what = kind === 'video' ? 'the input image' : 'a reference image';
          reject(new RenderError(`${kind} render failed: ${what} could not be decoded`, details));
        } else {
          const how = code === null ? `was killed by ${exitSignal}` : `exited with code ${code}`;
          reject(new RenderError(`${kind} render failed: ffmpeg ${how}`, details));
        }
      });
    });
  }

  /** Holds a slot and a scratch directory for one render; outputs are deleted unless the render succeeds. */
  async function render<T>(
    kind: 'video' | 'image',
    outputs: string[],
    inputs: Buffer[],
    plan: (scratch: { textFile: string; inputFiles: string[] }) => RenderPlan,
    result: T,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    await acquire(signal);
    let scratch: string | undefined;
    try {
      await mkdir(tmpRoot, { recursive: true });
      scratch = await mkdtemp(join(tmpRoot, 'mf-render-'));
      const dir = scratch;
      // User bytes go to plain files with no extension: ffmpeg picks the decoder from their content.
      const inputFiles = inputs.map((_, index) => join(dir, `input-${index}`));
      await Promise.all(inputs.map((bytes, index) => writeFile(inputFiles[index]!, bytes)));
      const textFile = join(dir, 'caption.txt');
      const { args, captionText } = plan({ textFile, inputFiles });
      await writeFile(textFile, captionText, 'utf8');
      await runFfmpeg(args, kind, inputs.length > 0, signal);
      for (const output of outputs) {
        const size = await stat(output).then(
          (s) => s.size,
          () => 0,
        );
        if (size === 0) throw new RenderError(`${kind} render failed: ffmpeg produced no output`);
      }
      return result;
    } catch (error) {
      await Promise.all(outputs.map((output) => rm(output, { force: true })));
      throw error;
    } finally {
      if (scratch) await rm(scratch, { recursive: true, force: true });
      release();
    }
  }

  function track<T>(promise: Promise<T>): Promise<T> {
    inFlight.add(promise);
    const forget = () => inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  const outputPath = (extension: string) => join(tmpRoot, `mf-sandbox-${randomUUID()}.${extension}`);

  return {
    video(spec, signal) {
      try {
        checkVideo(spec);
      } catch (error) {
        return Promise.reject(error as Error);
      }
      const output = outputPath('mp4');
      return track(
        render(
          'video',
          [output],
          spec.image ? [spec.image] : [],
          ({ textFile, inputFiles }) =>
            videoRenderPlan(spec, { textFile, fontFile: font, imageFile: inputFiles[0], output }),
          output,
          signal,
        ),
      );
    },

    images(spec, signal) {
      try {
        checkImages(spec);
      } catch (error) {
        return Promise.reject(error as Error);
      }
      const outputs = Array.from({ length: spec.count }, () => outputPath('png'));
      return track(
        render(
          'image',
          outputs,
          spec.references,
          ({ textFile, inputFiles }) =>
            imageRenderPlan(spec, { textFile, fontFile: font, referenceFiles: inputFiles, outputs }),
          outputs,
          signal,
        ),
      );
    },

    get running() {
      return active;
    },

    get queued() {
      return waiting.length;
    },

    async close() {
      closed = true;
      for (const waiter of waiting.splice(0)) waiter.cancel(closedError());
      for (const child of children) child.kill('SIGKILL');
      await Promise.allSettled([...inFlight]);
    },
  };
}
