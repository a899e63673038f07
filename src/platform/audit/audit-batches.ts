import type { Logger } from 'pino';
import type { AuditEntry, AuditSink } from './audit-sink.ts';

/** The writing side of the audit log: entries buffered, written in batches, retried until the sink takes them. */
export interface AuditBatches {
  /** Buffers an entry; a write starts once a batch is full, else after the flush interval. */
  push(entry: AuditEntry): void;
  /** Writes everything buffered at call time; rejects if a write fails (the entries stay buffered and are retried). */
  flush(): Promise<void>;
  /** Entries buffered and not yet written (the batch in flight included). */
  buffered(): number;
  /** Entries the sink has accepted. */
  written(): number;
  /** Stops writing and its timers (the log is closing). */
  stop(): void;
}

/** How batches are written. */
export interface AuditBatchesOptions {
  sink: AuditSink;
  logger: Pick<Logger, 'error'>;
  batchSize: number;
  flushIntervalMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** Called after each batch the sink accepted: its room is free again. */
  onWritten(): void;
}

interface FlushWaiter {
  upTo: number;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Writes buffered entries in order. The buffer keeps the batch in flight at its front until the sink confirms
 * it, so the room it holds is only freed once the entries are safe, and a failed batch is retried as-is, in
 * order, after a back-off that doubles per consecutive failure.
 */
export function createAuditBatches(options: AuditBatchesOptions): AuditBatches {
  const { sink, logger, batchSize } = options;
  const pending: AuditEntry[] = [];
  let written = 0;
  let accepted = 0;
  // Entries with a sequence number below this are due now (a flush() or the interval asked for them).
  let drainTo = 0;
  let writing = false;
  let failures = 0;
  let intervalTimer: NodeJS.Timeout | null = null;
  let retryTimer: NodeJS.Timeout | null = null;
  let stopped = false;
  const flushWaiters: FlushWaiter[] = [];

  function armInterval(): void {
    if (intervalTimer || retryTimer || pending.length === 0) return;
    intervalTimer = setTimeout(() => {
      intervalTimer = null;
      drainTo = Math.max(drainTo, accepted);
      pump();
    }, options.flushIntervalMs);
    intervalTimer.unref();
  }

  function armRetry(): void {
    const delay = Math.min(options.retryMaxMs, options.retryBaseMs * 2 ** Math.min(failures - 1, 30));
    retryTimer = setTimeout(() => {
      retryTimer = null;
      drainTo = Math.max(drainTo, accepted);
      pump();
    }, delay);
    retryTimer.unref();
  }

  function pump(): void {
    if (writing || retryTimer || stopped) return;
    if (pending.length < batchSize && written >= drainTo) return armInterval();
    if (intervalTimer) clearTimeout(intervalTimer);
    intervalTimer = null;
    const batch = pending.slice(0, batchSize);
    writing = true;
    sink.write(batch).then(
      () => {
        writing = false;
        failures = 0;
        pending.splice(0, batch.length);
        written += batch.length;
        for (let i = flushWaiters.length - 1; i >= 0; i--) {
          const waiter = flushWaiters[i]!;
          if (waiter.upTo <= written) {
            flushWaiters.splice(i, 1);
            waiter.resolve();
          }
        }
        options.onWritten();
        pump();
      },
      (error: unknown) => {
        writing = false;
        failures++;
        logger.error(
          { err: error, batch: batch.length, buffered: pending.length, failures },
          'audit sink write failed; the batch stays buffered and will be retried',
        );
        for (const waiter of flushWaiters.splice(0)) waiter.reject(error);
        armRetry();
      },
    );
  }

  return {
    push(entry) {
      pending.push(entry);
      accepted++;
      pump();
    },

    flush() {
      if (pending.length === 0 || stopped) return Promise.resolve();
      const upTo = accepted;
      drainTo = Math.max(drainTo, upTo);
      const done = new Promise<void>((resolve, reject) => flushWaiters.push({ upTo, resolve, reject }));
      // An explicit flush tries now instead of waiting out the back-off.
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = null;
      pump();
      return done;
    },

    buffered: () => pending.length,
    written: () => written,

    stop() {
      stopped = true;
      if (intervalTimer) clearTimeout(intervalTimer);
      if (retryTimer) clearTimeout(retryTimer);
      intervalTimer = retryTimer = null;
    },
  };
}
