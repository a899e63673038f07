import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createExportQueue, type ExportQueue, type ReleaseTurn } from '../../src/export/export-queue.ts';

// The export's fair queue (docs/operator.md, "Export workers"): who gets a free worker, the per-user cap, and
// that every way out (release, abort while waiting, a release called twice) leaves nothing behind.

/** Lets every settled promise's continuations run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Records the order in which acquisitions are granted; `take` starts one and answers its handle. */
function recorder(queue: ExportQueue) {
  const granted: string[] = [];
  const releases = new Map<string, ReleaseTurn>();
  const take = (userId: string, label: string, signal?: AbortSignal) => {
    const turn = queue.acquire(userId, signal).then((release) => {
      granted.push(label);
      releases.set(label, release);
      return release;
    });
    return turn;
  };
  const release = async (label: string) => {
    const handle = releases.get(label);
    assert.ok(handle, `${label} holds a turn`);
    handle();
    await settle();
  };
  return { granted, take, release };
}

describe('export queue', () => {
  it('gives a free worker to the user whose last turn is oldest, not to the first in line', async () => {
    const queue = createExportQueue({ slots: 1, perUser: 1 });
    const { granted, take, release } = recorder(queue);
    void take('A', 'A1');
    void take('A', 'A2');
    void take('A', 'A3');
    await settle();
    void take('B', 'B1');
    void take('C', 'C1');
    void take('B', 'B2');
    await settle();
    assert.deepEqual(granted, ['A1']);
    // A had the last turn; B and C never had one (B came first), then A again, then B, C and A in turn.
    for (const label of ['A1', 'B1', 'C1', 'A2', 'B2']) await release(label);
    assert.deepEqual(granted, ['A1', 'B1', 'C1', 'A2', 'B2', 'A3']);
    await release('A3');
    assert.deepEqual(queue.counts(), { waiting: 0, holding: 0, users: 0 });
  });

  it('holds a user to perUser workers even while others are free, first in first out within the user', async () => {
    const queue = createExportQueue({ slots: 3, perUser: 1 });
    const { granted, take, release } = recorder(queue);
    void take('A', 'A1');
    void take('A', 'A2');
    void take('A', 'A3');
    await settle();
    assert.deepEqual(granted, ['A1']);
    assert.deepEqual(queue.counts(), { waiting: 2, holding: 1, users: 1 });
    void take('B', 'B1');
    await settle();
    assert.deepEqual(granted, ['A1', 'B1'], 'another user takes a free worker at once');
    await release('A1');
    assert.deepEqual(granted, ['A1', 'B1', 'A2']);
    await release('A2');
    await release('B1');
    await release('A3');
    assert.deepEqual(granted, ['A1', 'B1', 'A2', 'A3']);
    assert.deepEqual(queue.counts(), { waiting: 0, holding: 0, users: 0 });
  });

  it('lets a user hold up to perUser workers', async () => {
    const queue = createExportQueue({ slots: 4, perUser: 2 });
    const { granted, take, release } = recorder(queue);
    for (const label of ['A1', 'A2', 'A3']) void take('A', label);
    void take('B', 'B1');
    await settle();
    assert.deepEqual(granted, ['A1', 'A2', 'B1']);
    assert.deepEqual(queue.counts(), { waiting: 1, holding: 3, users: 2 });
    await release('A2');
    assert.deepEqual(granted, ['A1', 'A2', 'B1', 'A3']);
  });

  it('an export aborted while it waits leaves the line at once, with the signal’s reason; the next moves up', async () => {
    const queue = createExportQueue({ slots: 1, perUser: 1 });
    const { granted, take, release } = recorder(queue);
    void take('A', 'A1');
    const abort = new AbortController();
    const dropped = take('B', 'B1', abort.signal);
    void take('C', 'C1');
    await settle();
    assert.deepEqual(queue.counts(), { waiting: 2, holding: 1, users: 3 });
    const reason = new Error('project deleted');
    abort.abort(reason);
    await assert.rejects(dropped, (error) => error === reason);
    assert.deepEqual(queue.counts(), { waiting: 1, holding: 1, users: 2 }, 'B is forgotten');
    await release('A1');
    assert.deepEqual(granted, ['A1', 'C1']);
    // An abort after the grant changes nothing: the holder gives the turn back itself.
    abort.abort();
    await release('C1');
    assert.deepEqual(queue.counts(), { waiting: 0, holding: 0, users: 0 });
  });

  it('refuses an already aborted signal without queueing', async () => {
    const queue = createExportQueue({ slots: 1, perUser: 1 });
    const abort = new AbortController();
    abort.abort(new Error('stopped'));
    await assert.rejects(queue.acquire('A', abort.signal), /stopped/);
    assert.deepEqual(queue.counts(), { waiting: 0, holding: 0, users: 0 });
  });

  it('a release called twice (a failed export released in two places) frees one worker, once', async () => {
    const queue = createExportQueue({ slots: 1, perUser: 2 });
    const { granted, take } = recorder(queue);
    const first = await take('A', 'A1');
    void take('A', 'A2');
    void take('A', 'A3');
    await settle();
    first();
    first();
    await settle();
    assert.deepEqual(granted, ['A1', 'A2'], 'the second call did not free a worker A2 holds');
    assert.deepEqual(queue.counts(), { waiting: 1, holding: 1, users: 1 });
  });

  it('forgets every user after many exports of many users, whatever their outcome', async () => {
    const queue = createExportQueue({ slots: 3, perUser: 2 });
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 300; i++) {
      const abort = new AbortController();
      const userId = `user-${i % 17}`;
      work.push(
        queue.acquire(userId, abort.signal).then(
          async (release) => {
            await new Promise((resolve) => setTimeout(resolve, i % 3));
            release();
            // An export that failed gives its turn back in its error path too.
            if (i % 5 === 0) release();
          },
          () => undefined,
        ),
      );
      if (i % 7 === 0) setTimeout(() => abort.abort(), i % 4);
    }
    await Promise.all(work);
    assert.deepEqual(queue.counts(), { waiting: 0, holding: 0, users: 0 });
  });

  it('gives a turn at once only while a worker is free and the user is under their share', async () => {
    const queue = createExportQueue({ slots: 3, perUser: 1 });
    const a = queue.tryAcquire('A');
    assert.ok(a, 'a free worker');
    assert.equal(queue.tryAcquire('A'), undefined, 'A holds their share');
    const b = queue.tryAcquire('B');
    assert.ok(b);
    // A waits for a second turn; the free worker still goes to C, since A could not take it anyway.
    const waiting = queue.acquire('A');
    await settle();
    const c = queue.tryAcquire('C');
    assert.ok(c, 'no one who could take the worker is passed over');
    assert.equal(queue.tryAcquire('D'), undefined, 'every worker taken');
    a();
    (await waiting)();
    b();
    c();
    assert.deepEqual(queue.counts(), { waiting: 0, holding: 0, users: 0 });
  });

  it('refuses sizes that could never hand out a worker', () => {
    assert.throws(() => createExportQueue({ slots: 0, perUser: 1 }), RangeError);
    assert.throws(() => createExportQueue({ slots: 1, perUser: 0 }), RangeError);
    assert.throws(() => createExportQueue({ slots: 1.5, perUser: 1 }), RangeError);
  });
});
