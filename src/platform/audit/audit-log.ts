import type { Logger } from 'pino';
import type { AuditEntry, AuditSink } from './audit-sink.ts';
import { createAuditBatches } from './audit-batches.ts';

/** Options of {@link createAuditLog}. */
export interface AuditLogOptions {
  sink: AuditSink;
  logger: Pick<Logger, 'error'>;
  /** Entries buffered plus reservations outstanding before `reserve()` makes callers wait (default 10000). */
  capacity?: number;
  /** A write starts as soon as this many entries are buffered (default 500); also the largest batch. */
  batchSize?: number;
  /** Longest time an entry waits in the buffer when fewer than `batchSize` are buffered (default 250). */
  flushIntervalMs?: number;
  /** First retry delay after a failed write; doubles per consecutive failure (default 200). */
  retryBaseMs?: number;
  /** Ceiling of the retry delay (default 30000). */
  retryMaxMs?: number;
}

/** Counters for tests and metrics. */
export interface AuditLogStats {
  /** Entries recorded but not yet written (the batch in flight included). */
  buffered: number;
  /** Reservations handed out and not yet consumed by `record()` or `release()`. */
  reserved: number;
  /** Callers of `reserve()`/`append()` waiting for room. */
  waiting: number;
  /** Entries the sink has accepted. */
  written: number;
}

/** A bounded, batching buffer in front of an {@link AuditSink}: writes happen off the request path, nothing is dropped. */
export interface AuditLog {
  /** Claims room for one entry: `true` when there is room now, else a promise that resolves once room is handed over. */
  reserve(): true | Promise<void>;
  /** Buffers an entry, consuming one reservation. */
  record(entry: AuditEntry): void;
  /** Gives back a reservation when nothing will be recorded for it. */
  release(): void;
  /** Waits for room itself, then buffers the entry (for entries that are not tied to a request). */
  append(entry: AuditEntry): Promise<void>;
  /** Writes everything buffered at call time; rejects if a write fails (the entries stay buffered and are retried). */
  flush(): Promise<void>;
  /** Flushes, stops the timers and closes the sink. */
  close(): Promise<void>;
  stats(): AuditLogStats;
}

const CLOSE_ATTEMPTS = 3;

/**
 * Creates the audit log buffer over a sink: room for entries is reserved here (waiters served in order), the
 * entries are written by the batches (audit-batches.ts).
 */
export function createAuditLog(options: AuditLogOptions): AuditLog {
  const { sink, logger } = options;
  const capacity = options.capacity ?? 10_000;
  const batchSize = options.batchSize ?? 500;
  const retryBaseMs = options.retryBaseMs ?? 200;
  if (!(capacity >= batchSize && batchSize >= 1)) {
    throw new RangeError('audit log needs capacity >= batchSize >= 1');
  }
  const batches = createAuditBatches({
    sink,
    logger,
    batchSize,
    flushIntervalMs: options.flushIntervalMs ?? 250,
    retryBaseMs,
    retryMaxMs: options.retryMaxMs ?? 30_000,
    onWritten: () => grantRoom(),
  });
  let reserved = 0;
  let closing = false;
  let closed = false;
  const roomWaiters: Array<() => void> = [];

  const used = () => batches.buffered() + reserved;

  function grantRoom(): void {
    // Room is handed over (reserved on the waiter's behalf) rather than signalled, so a newcomer calling
    // reserve() between the grant and the waiter resuming cannot take it: waiters are served in order.
    while (roomWaiters.length > 0 && used() < capacity) {
      reserved++;
      roomWaiters.shift()!();
    }
  }

  function record(entry: AuditEntry): void {
    if (closed) {
      // The sink is gone; say so loudly rather than lose the entry silently.
      logger.error({ entry }, 'audit entry recorded after the audit log was closed; it was not stored');
      return;
    }
    // An entry without a reservation still goes in (never dropped); it may push the buffer past capacity.
    if (reserved > 0) reserved--;
    batches.push(entry);
  }

  function reserve(): true | Promise<void> {
    // While shutting down nobody may wait on a sink that is going away.
    if (closing || closed || (roomWaiters.length === 0 && used() < capacity)) {
      reserved++;
      return true;
    }
    return new Promise<void>((resolve) => roomWaiters.push(resolve));
  }

  let closeResult: Promise<void> | null = null;
  async function shutDown(): Promise<void> {
    closing = true;
    // Anyone still waiting for room is let through: their entries are written by the flushes below.
    while (roomWaiters.length > 0) {
      reserved++;
      roomWaiters.shift()!();
    }
    let attempt = 0;
    let lastError: unknown = null;
    while (batches.buffered() > 0 && attempt < CLOSE_ATTEMPTS) {
      try {
        await batches.flush();
        lastError = null;
      } catch (error) {
        lastError = error;
        attempt++;
        if (attempt < CLOSE_ATTEMPTS) await sleep(retryBaseMs * attempt);
      }
    }
    closed = true;
    batches.stop();
    const lost = batches.buffered();
    await sink.close();
    if (lost > 0) {
      logger.error({ err: lastError, lost }, 'audit log closed with entries the sink would not take');
      throw new Error(`audit log closed with ${lost} unwritten entries`, { cause: lastError });
    }
  }

  return {
    reserve,
    record,
    release() {
      if (reserved > 0) reserved--;
      grantRoom();
    },
    async append(entry) {
      const room = reserve();
      if (room !== true) await room;
      record(entry);
    },
    flush: () => batches.flush(),
    close() {
      closeResult ??= shutDown();
      return closeResult;
    },
    stats: () => ({
      buffered: batches.buffered(),
      reserved,
      waiting: roomWaiters.length,
      written: batches.written(),
    }),
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
