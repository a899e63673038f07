import type { AppError, Clock } from '../platform/index.ts';
import type { ExportChildren, ExportPool, RunResult } from '../../workers/index.ts';
import { exportError } from './export-errors.ts';
import type { ExportPlanResult } from './export-plan.ts';
import type { ExportQueue } from './export-queue.ts';

/**
 * How one render ended: ffmpeg's result, whether it had started encoding, whether the deadline struck, and how
 * long it held the worker (the queue's wait apart).
 */
export interface Rendered {
  result: RunResult;
  encoding: boolean;
  late: boolean;
  encodeMs: number;
}

/**
 * Waits for the user's turn at a worker, then renders the plan, all within the deadline; answers how ffmpeg
 * ended, and whether it had started. `gone` (the project was deleted) stops either step at once.
 */
export type ExportRenderer = (
  userId: string,
  planned: ExportPlanResult,
  deadline: number,
  gone: AbortSignal,
  onProgress: (fraction: number) => void,
) => Promise<Rendered>;

/** What rendering works with. */
export interface ExportRendererDeps {
  pool: ExportPool;
  queue: ExportQueue;
  children: ExportChildren;
  clock: Clock;
  /** Aborted when the node stops waiting for running exports. */
  stopping: AbortSignal;
}

/** Renders exports on the pool's workers, one user's turn at a time (the fair queue). */
export function createExportRenderer(deps: ExportRendererDeps): ExportRenderer {
  const { stopping } = deps;
  return async (userId, planned, deadline, gone, onProgress) => {
    const remaining = deadline - deps.clock.now();
    if (remaining <= 0) return { result: timedOut, encoding: false, late: true, encodeMs: 0 };
    const abort = new AbortController();
    // Queue wait counts against the deadline too, so the time-out is ours, not only the worker's.
    // Whether it struck is remembered, not read back from the clock: a timer may fire a millisecond
    // before the wall clock reaches the deadline.
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      abort.abort();
    }, remaining);
    const onStop = () => abort.abort();
    stopping.addEventListener('abort', onStop);
    gone.addEventListener('abort', onStop);
    if (gone.aborted) abort.abort();
    let encoding = false;
    let release: (() => void) | undefined;
    try {
      try {
        release = await deps.queue.acquire(userId, abort.signal);
      } catch {
        // Stopped while waiting for a worker: the caller tells why from `late` and its own signals.
        return { result: stoppedWaiting, encoding, late, encodeMs: 0 };
      }
      const encodeFrom = deps.clock.now();
      const result = await deps.pool.run(planned.plan, {
        timeoutMs: Math.max(1, deadline - deps.clock.now()),
        signal: abort.signal,
        onProgress,
        onPid: (pid, alive) => {
          if (alive) {
            encoding = true;
            deps.children.started(pid);
          } else deps.children.ended(pid);
        },
      });
      return { result, encoding, late, encodeMs: deps.clock.now() - encodeFrom };
    } finally {
      release?.();
      clearTimeout(timer);
      stopping.removeEventListener('abort', onStop);
      gone.removeEventListener('abort', onStop);
    }
  };
}

/** The export's error for an ffmpeg run that did not succeed. */
export function runFailure(
  result: Exclude<RunResult, { ok: true }>,
  encoding: boolean,
  late: boolean,
): AppError {
  if (result.reason === 'timeout' || (result.reason === 'aborted' && late)) {
    return encoding
      ? exportError('ffmpeg_timeout', timeoutMessage('while encoding'), result)
      : exportError('export_timeout', timeoutMessage('before encoding started'), result);
  }
  if (result.reason === 'exit') {
    return exportError('ffmpeg_failed', 'The export could not be encoded from these sources', result);
  }
  return exportError('export_failed', 'The export could not be completed', result);
}

const timedOut: RunResult = { ok: false, reason: 'timeout', code: null, signal: null, stderrTail: '' };
const stoppedWaiting: RunResult = { ok: false, reason: 'aborted', code: null, signal: null, stderrTail: '' };

/** The message of an export that ran out of time `when`. */
export const timeoutMessage = (when: string) =>
  `The export ran out of time ${when}; split the video into shorter ones or try again later`;
