// The compatibility chosen from the server's own answer: nothing emulated on MongoDB (the repository itself,
// the driver's own monitor), and on jongodb the emulations, among them conditional updates queued per key.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { mongoCompatFor } from '../../src/platform/mongo/compat.ts';
import type { MongoServer } from '../../src/platform/mongo/server.ts';

const jongodbServer: MongoServer = { kind: 'jongodb', version: '8.0.0-jongodb' };
const mongodbServer: MongoServer = { kind: 'mongodb', version: '7.0.14' };
const jongodb = mongoCompatFor(jongodbServer);
const mongodb = mongoCompatFor(mongodbServer);

/** A repository whose moves record when they start and end, and fail on request. */
function fakeRepo() {
  const events: string[] = [];
  const move = async (id: string, label: string, ms: number): Promise<string> => {
    events.push(`start ${id} ${label}`);
    await sleep(ms);
    if (label === 'boom') throw new Error(`boom ${id}`);
    events.push(`end ${id} ${label}`);
    return `${id} ${label}`;
  };
  return {
    events,
    repo: {
      move,
      other: (id: string, label: string, ms: number) => move(id, label, ms),
      read: async (id: string) => id,
    },
  };
}

describe('mongoCompatFor', () => {
  it('on MongoDB emulates nothing: the repository itself and the driver’s own monitor', () => {
    const { repo } = fakeRepo();
    assert.equal(mongodb.server, mongodbServer);
    assert.deepEqual(mongodb.emulations, []);
    assert.equal(mongodb.monitoring, 'auto');
    assert.equal(
      mongodb.serialised(repo, ['move'], (id) => id),
      repo,
    );
  });

  it('on MongoDB runs a repository’s calls of one key concurrently, as they come', async () => {
    const { repo, events } = fakeRepo();
    const same = mongodb.serialised(repo, ['move'], (id) => id);
    await Promise.all([same.move('j1', 'a', 20), same.move('j1', 'b', 1)]);
    assert.deepEqual(events, ['start j1 a', 'start j1 b', 'end j1 b', 'end j1 a']);
  });

  it('on jongodb names each emulation and polls the server', () => {
    assert.equal(jongodb.server, jongodbServer);
    assert.equal(jongodb.monitoring, 'poll');
    assert.equal(jongodb.emulations.length, 2);
    assert.ok(jongodb.emulations.some((line) => /conditional updates queued/.test(line)));
    assert.ok(jongodb.emulations.some((line) => /polled/.test(line)));
  });

  it('takes any other server for MongoDB', () => {
    const other = mongoCompatFor({ kind: 'mongodb', version: 'unknown' });
    assert.deepEqual(other.emulations, []);
    assert.equal(other.monitoring, 'auto');
  });
});

describe('jongodb: conditional updates queued per key', () => {
  it('runs the listed methods one at a time per key, in arrival order', async () => {
    const { repo, events } = fakeRepo();
    const wrapped = jongodb.serialised(repo, ['move', 'other'], (id) => id);
    assert.notEqual(wrapped, repo);
    const results = await Promise.all([
      wrapped.move('j1', 'a', 20),
      wrapped.other('j1', 'b', 1),
      wrapped.move('j2', 'c', 5),
    ]);
    assert.deepEqual(results, ['j1 a', 'j1 b', 'j2 c']);
    // j1's second move waits for its first; j2 runs meanwhile.
    assert.deepEqual(events, ['start j1 a', 'start j2 c', 'end j2 c', 'end j1 a', 'start j1 b', 'end j1 b']);
  });

  it('leaves other methods alone and lets a failure reach only its caller', async () => {
    const { repo } = fakeRepo();
    const wrapped = jongodb.serialised(repo, ['move'], (id) => id);
    assert.equal(wrapped.read, repo.read);
    assert.equal(wrapped.other, repo.other);
    const [failed, next] = await Promise.allSettled([
      wrapped.move('j1', 'boom', 5),
      wrapped.move('j1', 'after', 1),
    ]);
    assert.equal(failed.status, 'rejected');
    assert.deepEqual(next, { status: 'fulfilled', value: 'j1 after' });
  });

  it('reads the key from the first argument, whatever it is', async () => {
    const seen: string[] = [];
    const repo = { record: async (delivery: { id: string }, n: number) => `${delivery.id}#${n}` };
    const wrapped = jongodb.serialised(repo, ['record'], (delivery) => {
      seen.push(delivery.id);
      return delivery.id;
    });
    assert.equal(await wrapped.record({ id: 'whd_1' }, 2), 'whd_1#2');
    assert.deepEqual(seen, ['whd_1']);
  });

  it('keeps one queue per wrapped repository: two repositories do not wait for each other', async () => {
    const first = fakeRepo();
    const second = fakeRepo();
    const a = jongodb.serialised(first.repo, ['move'], (id) => id);
    const b = jongodb.serialised(second.repo, ['move'], (id) => id);
    const order: string[] = [];
    await Promise.all([
      a.move('k', 'slow', 20).then(() => order.push('a')),
      b.move('k', 'fast', 1).then(() => order.push('b')),
    ]);
    assert.deepEqual(order, ['b', 'a']);
  });
});
