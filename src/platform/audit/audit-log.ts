import type { Logger } from 'pino';
import type { AuditEntry, AuditSink } from './audit-sink.ts';

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

interface FlushWaiter {
  upTo: number;
  resolve(): void;
  reject(error: unknown): void;
}

const CLOSE_ATTEMPTS = 3;

/** Creates the audit log buffer over a sink. */
export function createAuditLog(options: AuditLogOptions): AuditLog {
  const { sink, logger } = options;
  const capacity = options.capacity ?? 10_000;
  const batchSize = options.batchSize ?? 500;
  const flushIntervalMs = options.flushIntervalMs ?? 250;
  const retryBaseMs = options.retryBaseMs ?? 200;
  const retryMaxMs = options.retryMaxMs ?? 30_000;
  if (!(capacity >= batchSize && batchSize >= 1)) {
    throw new RangeError('audit log needs capacity >= batchSize >= 1');
  }

  // `pending` keeps the batch in flight at its front until the sink confirms it, so the room it holds is
  // only freed once the entries are safe, and a failed batch is retried as-is, in order.
  const pending: AuditEntry[] = [];
  let reserved = 0;
  let written = 0;
  let accepted = 0;
  // Entries with a sequence number below this are due now (a flush() or the interval asked for them).
  let drainTo = 0;
  let writing = false;
  let failures = 0;
  let intervalTimer: NodeJS.Timeout | null = null;
  let retryTimer: NodeJS.Timeout | null = null;
  let closing = false;
  let closed = false;
  const roomWaiters: Array<() => void> = [];
  const flushWaiters: FlushWaiter[] = [];

  const used = () => pending.length + reserved;

  function grantRoom(): void {
    // Room is handed over (reserved on the waiter's behalf) rather than signalled, so a newcomer calling
    // reserve() between the grant and the waiter resuming cannot take it: waiters are served in order.
    while (roomWaiters.length > 0 && used() < capacity) {
      reserved++;
      roomWaiters.shift()!();
    }
  }

  function armInterval(): void {
    if (intervalTimer || retryTimer || pending.length === 0) return;
    intervalTimer = setTimeout(() => {
      intervalTimer = null;
      drainTo = Math.max(drainTo, accepted);
      pump();
    }, flushIntervalMs);
    intervalTimer.unref();
  }

  function armRetry(): void {
    const delay = Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(failures - 1, 30));
    retryTimer = setTimeout(() => {
      retryTimer = null;
      drainTo = Math.max(drainTo, accepted);
      pump();
    }, delay);
    retryTimer.unref();
  }

  function pump(): void {
    if (writing || retryTimer || closed) return;
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
        grantRoom();
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

  function record(entry: AuditEntry): void {
    if (closed) {
      // The sink is gone; say so loudly rather than lose the entry silently.
      logger.error({ entry }, 'audit entry recorded after the audit log was closed; it was not stored');
      return;
    }
    // An entry without a reservation still goes in (never dropped); it may push the buffer past capacity.
    if (reserved > 0) reserved--;
    pending.push(entry);
    accepted++;
    pump();
  }

  function reserve(): true | Promise<void> {
    // While shutting down nobody may wait on a sink that is going away.
    if (closing || closed || (roomWaiters.length === 0 && used() < capacity)) {
      reserved++;
      return true;
    }
    return new Promise<void>((resolve) => roomWaiters.push(resolve));
  }

  function release(): void {
    if (reserved > 0) reserved--;
    grantRoom();
  }

  async function append(entry: AuditEntry): Promise<void> {
    const room = reserve();
    if (room !== true) await room;
    record(entry);
  }

  function flush(): Promise<void> {
    if (pending.length === 0 || closed) return Promise.resolve();
    const upTo = accepted;
    drainTo = Math.max(drainTo, upTo);
    const done = new Promise<void>((resolve, reject) => flushWaiters.push({ upTo, resolve, reject }));
    // An explicit flush tries now instead of waiting out the back-off.
    if (retryTimer) clearTimeout(retryTimer);
    retryTimer = null;
    pump();
    return done;
  }

  let closeResult: Promise<void> | null = null;
  function close(): Promise<void> {
    closeResult ??= shutDown();
    return closeResult;
  }

  async function shutDown(): Promise<void> {
    closing = true;
    // Anyone still waiting for room is let through: their entries are written by the flushes below.
    while (roomWaiters.length > 0) {
      reserved++;
      roomWaiters.shift()!();
    }
    let attempt = 0;
    let lastError: unknown = null;
    while (pending.length > 0 && attempt < CLOSE_ATTEMPTS) {
      try {
        await flush();
        lastError = null;
      } catch (error) {
        lastError = error;
        attempt++;
        if (attempt < CLOSE_ATTEMPTS) await sleep(retryBaseMs * attempt);
      }
    }
    closed = true;
    if (intervalTimer) clearTimeout(intervalTimer);
    if (retryTimer) clearTimeout(retryTimer);
    intervalTimer = retryTimer = null;
    const lost = pending.length;
    await sink.close();
    if (lost > 0) {
      logger.error({ err: lastError, lost }, 'audit log closed with entries the sink would not take');
      throw new Error(`audit log closed with ${lost} unwritten entries`, { cause: lastError });
    }
  }

  return {
    reserve,
    record,
    release,
    append,
    flush,
    close,
    stats: () => ({ buffered: pending.length, reserved, waiting: roomWaiters.length, written }),
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
