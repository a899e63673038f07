// Export probes off the main thread. `probeExportSource` spawns ffprobe (and for some mp4s ffmpeg), and a spawn
// forks the whole service process: with the service's heap that fork blocked the calling thread for 10–41 ms
// per child (export benchmark, CPU profile), and an export probes its ~15 sources while it stages, so on the
// main thread /healthz p99 reached 45–100 ms. Spawned from a worker thread, the fork blocks only that thread.
// A probe is mostly waiting on its child, so one thread runs several at once (`concurrentTasksPerWorker`).
import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import type { ExportSource, ProbeOutcome, ProbeTask } from '../../workers/index.ts';
import { workerExecArgv, workerModuleUrl, unsupportedMedia } from '../platform/index.ts';

export interface ProbePoolOptions {
  ffmpegPath: string;
  ffprobePath: string;
  /** Worker threads (default 1): a thread only forks and waits, so one is enough unless forks queue up. */
  threads?: number;
  /** Probes one thread runs at once (default 4). */
  concurrentPerThread?: number;
  /** Where a thread's failure outside any probe is logged (a probe's own failure rejects its promise). */
  logger?: Logger;
}

export interface ProbePool {
  /** `probeExportSource(path)`, run in a pool thread: the same source, or the same 415 / plain `Error`. */
  probe(path: string): Promise<ExportSource>;
  /** Lets running probes finish (their children reaped), then ends the threads; later probes reject. */
  close(): Promise<void>;
}

/** How long close() lets running probes finish before the threads are stopped (their children left to end). */
const CLOSE_GRACE_MS = 5_000;

/** A Piscina pool probing export sources in worker threads (workers/probe/probe-worker.ts). */
export function createProbePool(options: ProbePoolOptions): ProbePool {
  const { ffmpegPath, ffprobePath, threads = 1, concurrentPerThread = 4, logger } = options;
  // Under tsx `workers/probe/probe-worker.ts`; compiled, `dist/workers/probe/probe-worker.js`.
  const workerUrl = workerModuleUrl('../../workers/probe/probe-worker', import.meta.url);
  const piscina = new Piscina<ProbeTask, ProbeOutcome>({
    filename: workerUrl.href,
    minThreads: threads,
    maxThreads: threads,
    concurrentTasksPerWorker: concurrentPerThread,
    // Between probes a thread waits for messages rather than blocking in Atomics.wait, so its event loop stays
    // live for whatever a finished probe still has to close.
    atomics: 'disabled',
    closeTimeout: CLOSE_GRACE_MS,
    execArgv: workerExecArgv(workerUrl),
  });
  // Without a listener an 'error' event (a thread failing between probes, close's timeout) would throw.
  piscina.on('error', (error: unknown) => logger?.error({ err: error }, 'probe worker failed'));
  let closed = false;

  async function probe(path: string): Promise<ExportSource> {
    if (closed) throw new Error('probe pool closed');
    const outcome = await piscina.run({ path, ffmpegPath, ffprobePath });
    if (outcome.ok) return outcome.source;
    if ('unsupported' in outcome) throw unsupportedMedia(outcome.unsupported);
    throw new Error(outcome.error);
  }

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    await piscina.close();
  }

  return { probe, close };
}
