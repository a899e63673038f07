import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { AuditEntry, AuditSink } from '../../src/platform/audit/audit-sink.ts';
import { createAuditLog, type AuditLogOptions } from '../../src/platform/audit/audit-log.ts';

interface FakeSink extends AuditSink {
  batches: AuditEntry[][];
  entries(): AuditEntry[];
  maxInFlight: number;
  /** When each write was called (ms). */
  attempts: number[];
  closed: boolean;
  /** Writes wait for this before finishing, when set. */
  gate: Promise<void> | null;
}

function fakeSink(options: { delayMs?: number; failFirst?: number } = {}): FakeSink {
  let inFlight = 0;
  let failuresLeft = options.failFirst ?? 0;
  const sink: FakeSink = {
    batches: [],
    entries: () => sink.batches.flat(),
    maxInFlight: 0,
    attempts: [],
    closed: false,
    gate: null,
    async write(entries) {
      inFlight++;
      sink.attempts.push(performance.now());
      sink.maxInFlight = Math.max(sink.maxInFlight, inFlight);
      try {
        if (options.delayMs) await sleep(options.delayMs);
        if (sink.gate) await sink.gate;
        if (failuresLeft > 0) {
          failuresLeft--;
          throw new Error('sink unavailable');
        }
        sink.batches.push([...entries]);
      } finally {
        inFlight--;
      }
    },
    query: async () => [],
    close: async () => void (sink.closed = true),
  };
  return sink;
}

function capturingLogger() {
  const lines: Array<{ msg: string; level: number }> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

function entry(n: number, key_id: string | null = 'key_a'): AuditEntry {
  return {
    kind: 'request',
    ts: new Date(Date.UTC(2026, 0, 1) + n).toISOString(),
    key_id,
    user_id: 'usr_1',
    n,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(1);
  }
}

/** Whether a promise has settled once pending I/O callbacks and microtasks have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

function makeLog(sink: AuditSink, options: Partial<AuditLogOptions> = {}) {
  const { logger, lines } = capturingLogger();
  const log = createAuditLog({ sink, logger, flushIntervalMs: 60_000, ...options });
  return { log, lines };
}

function recordNow(log: ReturnType<typeof createAuditLog>, e: AuditEntry): void {
  assert.equal(log.reserve(), true);
  log.record(e);
}

describe('audit log', () => {
  it('writes a batch as soon as batchSize entries are buffered, one write at a time', async () => {
    const sink = fakeSink({ delayMs: 5 });
    const { log } = makeLog(sink, { batchSize: 3 });
    for (let i = 0; i < 7; i++) recordNow(log, entry(i));
    await until(() => sink.batches.length === 2);
    assert.deepEqual(
      sink.batches.map((b) => b.length),
      [3, 3],
    );
    assert.equal(log.stats().buffered, 1);
    assert.equal(sink.maxInFlight, 1);
    await log.close();
  });

  it('writes a partial batch after flushIntervalMs', async () => {
    const sink = fakeSink();
    const { log } = makeLog(sink, { batchSize: 100, flushIntervalMs: 30 });
    const started = Date.now();
    for (let i = 0; i < 3; i++) recordNow(log, entry(i));
    assert.equal(sink.batches.length, 0);
    await until(() => sink.batches.length === 1);
    assert.ok(Date.now() - started >= 25, 'the interval elapsed first');
    assert.deepEqual(sink.batches[0], [entry(0), entry(1), entry(2)]);
    assert.deepEqual(log.stats(), { buffered: 0, reserved: 0, waiting: 0, written: 3 });
    await log.close();
  });

  it('keeps the order in which entries were recorded across batches', async () => {
    const sink = fakeSink({ delayMs: 1 });
    const { log } = makeLog(sink, { batchSize: 7, flushIntervalMs: 5 });
    for (let i = 0; i < 100; i++) {
      recordNow(log, entry(i));
      if (i % 13 === 0) await sleep(2);
    }
    await log.flush();
    assert.deepEqual(
      sink.entries().map((e) => e.n),
      Array.from({ length: 100 }, (_, i) => i),
    );
    await log.close();
  });

  it('makes reserve wait when the buffer is full and resumes it once a write frees room', async () => {
    const sink = fakeSink();
    let open!: () => void;
    sink.gate = new Promise((resolve) => (open = resolve));
    const { log } = makeLog(sink, { capacity: 4, batchSize: 2 });
    for (let i = 0; i < 4; i++) assert.equal(log.reserve(), true);
    const waiting = log.reserve();
    assert.notEqual(waiting, true);
    const late = log.append(entry(99));
    log.record(entry(0));
    log.record(entry(1));
    // The batch in flight still holds its room until the sink confirms it.
    assert.equal(await settled(waiting as Promise<void>), false);
    assert.deepEqual(log.stats(), { buffered: 2, reserved: 2, waiting: 2, written: 0 });
    open();
    await waiting;
    await late;
    assert.deepEqual(log.stats(), { buffered: 1, reserved: 3, waiting: 0, written: 2 });
    for (const n of [2, 3, 4]) log.record(entry(n));
    await log.flush();
    assert.deepEqual(
      sink.entries().map((e) => e.n),
      [0, 1, 99, 2, 3, 4],
    );
    await log.close();
  });

  it('hands room to waiters when a reservation is released without an entry', async () => {
    const { log } = makeLog(fakeSink(), { capacity: 1, batchSize: 1 });
    assert.equal(log.reserve(), true);
    const waiting = log.reserve();
    assert.notEqual(waiting, true);
    assert.equal(await settled(waiting as Promise<void>), false);
    log.release();
    await waiting;
    assert.deepEqual(log.stats(), { buffered: 0, reserved: 1, waiting: 0, written: 0 });
    log.release();
    await log.close();
  });

  it('makes requests wait for room instead of dropping entries when the sink falls behind', async () => {
    const sink = fakeSink({ delayMs: 3 });
    const { log } = makeLog(sink, { capacity: 10, batchSize: 5, flushIntervalMs: 2 });
    const recorded: number[] = [];
    let waited = 0;
    let maxUsed = 0;
    async function request(n: number): Promise<void> {
      const room = log.reserve();
      if (room !== true) {
        waited++;
        await room;
      }
      await sleep(n % 3);
      recorded.push(n);
      log.record(entry(n));
      const { buffered, reserved } = log.stats();
      maxUsed = Math.max(maxUsed, buffered + reserved);
    }
    await Promise.all(Array.from({ length: 300 }, (_, n) => request(n)));
    await log.flush();
    assert.ok(waited > 0, 'some requests had to wait');
    assert.ok(maxUsed <= 10, `the buffer stayed within capacity (max ${maxUsed})`);
    assert.equal(sink.entries().length, 300);
    assert.deepEqual(
      sink.entries().map((e) => e.n),
      recorded,
    );
    assert.equal(sink.maxInFlight, 1);
    await log.close();
  });

  it('retries a failed batch with back-off and loses no entry', async () => {
    const sink = fakeSink({ failFirst: 2 });
    const { log, lines } = makeLog(sink, { batchSize: 4, retryBaseMs: 20 });
    for (let i = 0; i < 10; i++) recordNow(log, entry(i));
    await until(() => log.stats().written === 10);
    assert.deepEqual(
      sink.entries().map((e) => e.n),
      Array.from({ length: 10 }, (_, i) => i),
    );
    const errors = lines.filter((l) => l.level === 50);
    assert.equal(errors.length, 2);
    assert.match(errors[0]!.msg, /will be retried/);
    const [first, second, third] = sink.attempts as [number, number, number];
    assert.ok(second - first >= 18, `first retry after the base delay (${second - first} ms)`);
    assert.ok(third - second >= 38, `second retry after twice the base delay (${third - second} ms)`);
    await log.close();
  });

  it('rejects flush when the sink fails but keeps the entries for the retry', async () => {
    const sink = fakeSink({ failFirst: 1 });
    const { log } = makeLog(sink, { batchSize: 100, retryBaseMs: 5 });
    for (let i = 0; i < 3; i++) recordNow(log, entry(i));
    await assert.rejects(log.flush(), /sink unavailable/);
    assert.equal(log.stats().buffered, 3);
    await until(() => log.stats().written === 3);
    assert.deepEqual(sink.batches, [[entry(0), entry(1), entry(2)]]);
    await log.close();
  });

  it('writes every buffered entry and closes the sink on close', async () => {
    const sink = fakeSink({ delayMs: 2 });
    const { log } = makeLog(sink, { batchSize: 4 });
    for (let i = 0; i < 11; i++) recordNow(log, entry(i));
    await Promise.all([log.close(), log.close()]);
    assert.equal(sink.entries().length, 11);
    assert.equal(sink.closed, true);
    assert.deepEqual(log.stats(), { buffered: 0, reserved: 0, waiting: 0, written: 11 });
  });

  it('reports entries it could not write when the sink keeps failing at close', async () => {
    const sink = fakeSink({ failFirst: Infinity });
    const { log, lines } = makeLog(sink, { retryBaseMs: 1 });
    recordNow(log, entry(1));
    await assert.rejects(log.close(), /1 unwritten entries/);
    assert.equal(sink.closed, true);
    assert.ok(lines.some((l) => /closed with entries/.test(l.msg)));
  });
});
