// The export pool (docs/architecture.md, Dependencies): Piscina threads, each running one ffmpeg child at a
// time through workers/export/worker.ts. A task owns its child; cancelling is a message to the task, never
// Piscina's abort (that stops the thread and leaves the child running, since a child belongs to the process).
// Every child's pid comes back here, so that whatever goes wrong with a thread — it dies, the pool closes, an
// abort goes unanswered — the child is SIGKILLed by pid from the main thread.
import { MessageChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import type {
  ExportPlan,
  ExportPool,
  ExportPoolMessage,
  ExportRunOptions,
  ExportTask,
  ExportWorkerMessage,
  RunResult,
} from '../../workers/index.ts';
import { workerExecArgv, workerModuleUrl } from '../platform/index.ts';

export interface ExportPoolOptions {
  /** Exports rendered at once (`EXPORT_CONCURRENCY`): one thread, one ffmpeg each. */
  concurrency: number;
  ffmpegPath: string;
  /** Added niceness of every ffmpeg child. */
  niceness: number;
  logger: Logger;
}

/** How long an aborted task has to kill its child before the pool kills it by pid. */
const ABORT_GRACE_MS = 1_000;
/** How long close() lets aborted tasks finish (their threads reap the children) before destroying the pool. */
const CLOSE_GRACE_MS = 2_000;

/**
 * The worker module beside this one's build: under tsx this file is `src/export/pool.ts` and the
 * worker `workers/export/worker.ts`; compiled, `dist/src/export/pool.js` and
 * `dist/workers/export/worker.js` (tsconfig.build.json compiles `workers/` with the same root).
 */
export function exportWorkerUrl(moduleUrl: string = import.meta.url): URL {
  return workerModuleUrl('../../workers/export/worker', moduleUrl);
}

const isWorkerMessage = (value: unknown): value is ExportWorkerMessage =>
  typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';

const closedResult: RunResult = {
  ok: false,
  reason: 'aborted',
  code: null,
  signal: null,
  stderrTail: 'export pool closed',
};

interface ActiveRun {
  /** Asks the task to kill its children; kills them by pid if they have not gone within the grace. */
  abort(immediately: boolean): void;
  /** SIGKILLs the children still known alive. */
  killChildren(): void;
  settled: Promise<unknown>;
}

/** A Piscina pool of `concurrency` export threads. */
export function createExportPool(options: ExportPoolOptions): ExportPool {
  const { concurrency, ffmpegPath, niceness, logger } = options;
  const workerUrl = exportWorkerUrl();
  const piscina = new Piscina<ExportTask, RunResult>({
    filename: workerUrl.href,
    minThreads: concurrency,
    maxThreads: concurrency,
    // Between tasks a thread waits for messages rather than blocking in Atomics.wait, so its event loop stays
    // live to finish closing the last task's port and child handles.
    atomics: 'disabled',
    execArgv: workerExecArgv(workerUrl),
  });
  piscina.on('error', (error: unknown) => logger.error({ err: error }, 'export worker failed'));
  const active = new Set<ActiveRun>();
  let closed = false;

  async function run(plan: ExportPlan, runOptions: ExportRunOptions): Promise<RunResult> {
    if (closed) throw new Error('export pool closed');
    const { timeoutMs, signal } = runOptions;
    const { port1, port2 } = new MessageChannel();
    let graceTimer: NodeJS.Timeout | undefined;
    const channel = taskChannel(port1, runOptions, logger);
    const { killChildren } = channel;
    let abortRequested = false;
    const entry: ActiveRun = {
      abort(immediately) {
        if (!abortRequested) {
          abortRequested = true;
          port1.postMessage({ type: 'abort' } satisfies ExportPoolMessage);
        }
        if (immediately) killChildren();
        else graceTimer ??= setTimeout(killChildren, ABORT_GRACE_MS);
      },
      killChildren,
      settled: Promise.resolve(),
    };
    const onAbort = () => entry.abort(false);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });

    const task: ExportTask = { plan, ffmpegPath, timeoutMs, niceness, port: port2 };
    const running = piscina.run(task, { transferList: [port2] });
    entry.settled = running.catch(() => undefined);
    active.add(entry);
    try {
      const result = await running;
      channel.drain();
      // The task returns only once its children have exited (runner.ts), so whatever pids it reported are gone.
      channel.childrenGone();
      return result;
    } catch (error) {
      channel.drain();
      // The thread died (or the pool was destroyed) with children possibly still running: kill them by pid.
      killChildren();
      channel.childrenGone();
      if (closed) return closedResult;
      logger.error({ err: error }, 'export worker task failed');
      throw error;
    } finally {
      clearTimeout(graceTimer);
      signal?.removeEventListener('abort', onAbort);
      port1.close();
      active.delete(entry);
    }
  }

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    const running = [...active];
    for (const entry of running) entry.abort(true);
    // Let the tasks see their children exit (their threads reap them) before the threads are stopped.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(running.map((entry) => entry.settled)),
      new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS))),
    ]);
    clearTimeout(timer);
    await piscina.destroy();
    for (const entry of running) entry.killChildren();
  }

  return { run, close };
}

/** SIGKILLs an export's ffmpeg by pid (one already gone is no error). */
function sigkill(pid: number, logger: Logger): void {
  try {
    process.kill(pid, 'SIGKILL');
    logger.warn({ pid }, 'export ffmpeg killed by pid');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') logger.error({ err: error, pid }, 'kill failed');
  }
}

/**
 * The pool's end of one task's port: the pids of the task's children as the task reports them (passed on
 * through `onPid`; a task may run several at once: a render in segments, a preview's halves), its progress
 * (`onProgress`), and the children's ends.
 */
function taskChannel(port: MessagePort, runOptions: ExportRunOptions, logger: Logger) {
  const { onProgress, onPid } = runOptions;
  /** Children reported running and not yet gone. */
  const pids = new Set<number>();
  const notifyPid = (value: number, alive: boolean) => {
    try {
      onPid?.(value, alive);
    } catch (error) {
      logger.error({ err: error, pid: value }, 'export onPid failed');
    }
  };
  const gone = (pid: number) => {
    if (pids.delete(pid)) notifyPid(pid, false);
  };
  const handle = (message: unknown) => {
    if (!isWorkerMessage(message)) return;
    if (message.type === 'pid') {
      pids.add(message.pid);
      notifyPid(message.pid, true);
    } else if (message.type === 'exit') {
      gone(message.pid);
    } else if (message.type === 'progress') {
      try {
        onProgress?.(message.fraction);
      } catch (error) {
        logger.error({ err: error }, 'export onProgress failed');
      }
    }
  };
  port.on('message', handle);
  return {
    /** Handles the messages the task posted before its result arrived (two channels: the result may overtake them). */
    drain() {
      for (let next = receiveMessageOnPort(port); next; next = receiveMessageOnPort(port))
        handle(next.message);
    },
    /** Every child has exited: `onPid(pid, false)` for each one not yet reported gone, once. */
    childrenGone() {
      for (const pid of [...pids]) gone(pid);
    },
    /** SIGKILLs the children still known alive. */
    killChildren() {
      for (const pid of pids) sigkill(pid, logger);
    },
  };
}
