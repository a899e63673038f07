// The one place an ffmpeg child lives, for the export's encodes and the sandbox provider's renders alike
// (docs/operator.md, Export workers): spawned niced with no stdin, `-progress` on stdout turned into
// fractions, the log on stderr kept as a bounded tail, and SIGKILLed on time-out or abort. It resolves only
// once the child has exited, so no ffmpeg outlives the call, and it never rejects: an ffmpeg failure is a
// result, for the caller to turn into its own error.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { setPriority } from 'node:os';
import {
  diedUnborn,
  niceAutogroup,
  restartingUnborn,
  tiedToThisThread,
} from '../../src/platform/core/index.ts';
import { ProgressParser } from './progress.ts';

/**
 * How one ffmpeg run ended. `code`/`signal` are the child's; `stderrTail` is for the log, never for users.
 * `stderr`: the log of a successful run, when asked for (`keepStderr`).
 */
export type RunResult =
  | { ok: true; stderr?: string }
  | {
      ok: false;
      reason: 'exit' | 'timeout' | 'aborted' | 'spawn';
      code: number | null;
      signal: string | null;
      stderrTail: string;
    };

export interface RunFfmpegOptions {
  ffmpegPath: string;
  /** ffmpeg's arguments (without the binary); must include `-progress pipe:1` for progress. */
  args: string[];
  /** Length of the output in seconds, what progress is measured against; without it, none is reported. */
  totalSec?: number;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Share of the output written, 0..1, only ever increasing. */
  onProgress?(fraction: number): void;
  /** The ffmpeg process id, as soon as it runs (`nice` execs ffmpeg in place, so it is ffmpeg's own pid). */
  onSpawn?(pid: number): void;
  /** Added niceness (default 10); 0 spawns ffmpeg as it is. */
  niceness?: number;
  /**
   * Keep the log (stderr, its last STDERR_KEPT_BYTES) and give it with a success, for a run whose result is
   * printed there (a measurement). Otherwise only a failure's tail is kept.
   */
  keepStderr?: boolean;
}

/** The bytes of stderr kept for the log. */
export const STDERR_TAIL_BYTES = 8 * 1024;
/** The bytes of stderr kept for a run with `keepStderr` (its result is at the end of the log). */
export const STDERR_KEPT_BYTES = 256 * 1024;
export const DEFAULT_NICENESS = 10;
/** After the child's exit, how long its pipes may stay open before the result is given anyway. */
const CLOSE_GRACE_MS = 1_000;

let niceBinary: string | null | undefined;

/** Where `nice` is installed (coreutils and busybox alike); none in a distroless image. */
const NICE_PATHS = ['/usr/bin/nice', '/bin/nice'];

/** `nice`, looked up once per process; null when there is none. */
function findNice(): string | null {
  if (niceBinary === undefined) {
    niceBinary =
      NICE_PATHS.find((path) => {
        try {
          accessSync(path, constants.X_OK);
          return true;
        } catch {
          return false;
        }
      }) ?? null;
  }
  return niceBinary;
}

/**
 * Runs ffmpeg to the end, a time-out or an abort. Niceness comes from `nice -n` when it exists: Linux keeps a
 * nice value per thread, so `os.setPriority(pid)` after the spawn would miss the encoder threads ffmpeg has
 * already started, while under `nice` every thread inherits it from the first instruction. Without `nice`,
 * `setPriority` right after the spawn is the fallback.
 */
export function runFfmpeg(options: RunFfmpegOptions): Promise<RunResult> {
  // A child that a stop signal killed before it ran ffmpeg starts again, within the same deadline.
  const deadline = Date.now() + options.timeoutMs;
  return restartingUnborn(() => runOnce({ ...options, timeoutMs: Math.max(1, deadline - Date.now()) }));
}

/** One ffmpeg child; `unborn` when a signal killed it before it could run ffmpeg (`diedUnborn`). */
function runOnce(options: RunFfmpegOptions): Promise<{ result: RunResult; unborn: boolean }> {
  const { ffmpegPath, args, totalSec, timeoutMs, signal, onProgress, onSpawn, keepStderr } = options;
  const keptBytes = keepStderr ? STDERR_KEPT_BYTES : STDERR_TAIL_BYTES;
  const niceness = options.niceness ?? DEFAULT_NICENESS;
  if (signal?.aborted) {
    const result: RunResult = { ok: false, reason: 'aborted', code: null, signal: null, stderrTail: '' };
    return Promise.resolve({ result, unborn: false });
  }
  const nice = niceness > 0 ? findNice() : null;
  // Tied to this thread, so in a process group of its own: a signal to the service's whole group must not end
  // an export that the drain lets finish; the service, or the kernel when it dies, ends it.
  const tied = nice
    ? tiedToThisThread(nice, ['-n', String(niceness), ffmpegPath, ...args])
    : tiedToThisThread(ffmpegPath, args);

  return new Promise((resolve) => {
    const child = spawn(tied.command, tied.args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: tied.detached,
    });
    const unborn = diedUnborn(child.pid, tied.command);
    const parser = totalSec === undefined ? undefined : new ProgressParser(totalSec);
    let fraction = 0;
    let stderr = '';
    let killedFor: 'timeout' | 'aborted' | undefined;
    let spawned = false;
    let settled = false;
    let closeTimer: NodeJS.Timeout | undefined;

    const report = (value: number) => {
      if (value <= fraction) return;
      fraction = value;
      try {
        onProgress?.(value);
      } catch {
        // a listener's failure must not leave the child unsupervised
      }
    };
    const kill = (why: 'timeout' | 'aborted') => {
      killedFor ??= why;
      child.kill('SIGKILL');
    };
    const onAbort = () => kill('aborted');
    const timer = setTimeout(() => kill('timeout'), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });

    const finish = (result: RunResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(closeTimer);
      signal?.removeEventListener('abort', onAbort);
      resolve({ result, unborn: unborn && !killedFor });
    };
    const tail = () => stderr.slice(-STDERR_TAIL_BYTES);

    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      for (const update of parser?.push(chunk) ?? []) report(update.fraction);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      // Cut back only now and then, so a chatty ffmpeg costs O(its output), not O(output × tail).
      if (stderr.length > 4 * keptBytes) stderr = stderr.slice(-keptBytes);
    });

    child.once('spawn', () => {
      spawned = true;
      const pid = child.pid;
      if (pid === undefined || unborn) return; // an unborn child never ran ffmpeg: nothing to nice or report
      if (tied.detached && niceness > 0) niceAutogroup(pid, niceness);
      if (!nice && niceness > 0) {
        try {
          setPriority(pid, niceness);
        } catch {
          // it may already have exited; an unniced export is still an export
        }
      }
      try {
        onSpawn?.(pid);
      } catch {
        // as for onProgress
      }
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      // Before 'spawn' there is no child to wait for; later errors (a failed kill) change nothing.
      if (!spawned) {
        finish({ ok: false, reason: 'spawn', code: null, signal: null, stderrTail: error.message });
      }
    });

    const done = (code: number | null, exitSignal: NodeJS.Signals | null) => {
      if (killedFor) {
        finish({ ok: false, reason: killedFor, code, signal: exitSignal, stderrTail: tail() });
      } else if (code === 0) {
        report(1);
        finish(keepStderr ? { ok: true, stderr: stderr.slice(-keptBytes) } : { ok: true });
      } else {
        // `nice` itself answers 126/127 when it cannot run ffmpeg (not executable, not found).
        const reason = nice && (code === 126 || code === 127) ? 'spawn' : 'exit';
        finish({ ok: false, reason, code, signal: exitSignal, stderrTail: tail() });
      }
    };
    // 'close' also waits for the last progress block; should something else hold the pipes open after the
    // exit, the result is given anyway a moment later.
    child.once('exit', (code, exitSignal) => {
      closeTimer = setTimeout(() => done(code, exitSignal), CLOSE_GRACE_MS);
    });
    child.once('close', done);
  });
}

/**
 * Why a run with reason `spawn` could not start ffmpeg, in Node's words (`spawn <path> ENOENT`), whether
 * `nice` stood in between or not: `nice` tells it by its exit code, 127 for an ffmpeg it cannot find and 126
 * for one it cannot execute.
 */
export function spawnFailure(result: Extract<RunResult, { ok: false }>, ffmpegPath: string): string {
  if (result.reason === 'spawn' && result.code === 127) return `spawn ${ffmpegPath} ENOENT`;
  if (result.reason === 'spawn' && result.code === 126) return `spawn ${ffmpegPath} EACCES`;
  return result.stderrTail;
}
