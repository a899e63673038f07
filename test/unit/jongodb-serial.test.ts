import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { serialisedOnJongodb } from '../../src/platform/mongo/jongodb-serial.ts';
import type { MongoServer } from '../../src/platform/mongo/connect.ts';

const jongodb = { server: { kind: 'jongodb', version: '8.0.0-jongodb' } satisfies MongoServer };
const mongodb = { server: { kind: 'mongodb', version: '7.0.14' } satisfies MongoServer };

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

describe('serialisedOnJongodb', () => {
  it('returns the repository itself on MongoDB', () => {
    const { repo } = fakeRepo();
    assert.equal(
      serialisedOnJongodb(mongodb, repo, ['move'], (id) => id),
      repo,
    );
  });

  it('on jongodb runs the listed methods one at a time per key, in arrival order', async () => {
    const { repo, events } = fakeRepo();
    const wrapped = serialisedOnJongodb(jongodb, repo, ['move', 'other'], (id) => id);
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
    const wrapped = serialisedOnJongodb(jongodb, repo, ['move'], (id) => id);
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
    const wrapped = serialisedOnJongodb(jongodb, repo, ['record'], (delivery) => {
      seen.push(delivery.id);
      return delivery.id;
    });
    assert.equal(await wrapped.record({ id: 'whd_1' }, 2), 'whd_1#2');
    assert.deepEqual(seen, ['whd_1']);
  });
});
