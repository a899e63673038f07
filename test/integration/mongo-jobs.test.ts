// The jobs repository's state changes against a real MongoDB-wire server, raced in pairs over a pool of many
// connections: every race has exactly one winner and the stored state is the winner's. jongodb does not make a
// conditional update atomic across connections by itself (both sides won in 21 of 500 plain races), so these
// tests fail without the repository's own per-job ordering.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { createMongoJobs } from '../../src/adapters/mongo/jobs.ts';
import type { JobRecord, JobsRepository } from '../../src/ports/jobs-repository.ts';
import { useMongoClient } from '../helpers/mongo.ts';
import { imageJobRecord } from '../helpers/job-records.ts';

const RACES = 200;
const now = new Date('2026-11-21T00:00:00Z');
const handle = { endpoint: 'imgmodel-2', requestId: 'req_1' };

describe('jobs repository state changes', () => {
  const mongo = useMongoClient();
  let client: MongoClient;
  let jobs: JobsRepository;
  let jobNo = 0;

  before(async () => {
    // A pool as wide as the service's, so racing operations really run on different connections.
    client = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll', maxPoolSize: 50 });
    await client.connect();
    jobs = await createMongoJobs(client.db('jobs'));
  });
  after(() => client?.close());

  /** Runs both sides at once, each going first in every other race, so either can win. */
  const race = <A, B>(i: number, a: () => Promise<A>, b: () => Promise<B>): Promise<[A, B]> =>
    i % 2 === 0
      ? Promise.all([a(), b()])
      : Promise.all([b(), a()]).then(([second, first]) => [first, second] as [A, B]);

  async function job(status: JobRecord['status']): Promise<string> {
    const id = `job_race${++jobNo}`;
    const record = imageJobRecord({ id, userId: 'usr_1', keyId: 'key_1', now });
    await jobs.insert({ ...record, status });
    return id;
  }

  it('a cancel racing a confirmed failure: one of them, never both', async () => {
    let cancelsWon = 0;
    for (let i = 0; i < RACES; i++) {
      const id = await job('failing');
      const [failed, cancelled] = await race(
        i,
        () => jobs.refundConfirmed(id),
        () => jobs.finish(id, ['processing', 'failing'], { status: 'cancelled', refund: 50 }, now),
      );
      assert.ok((failed === null) !== (cancelled === null), `race ${i}: exactly one side wins`);
      const stored = await jobs.get(id);
      assert.equal(stored?.status, cancelled ? 'cancelled' : 'failed', `race ${i}`);
      if (cancelled) cancelsWon++;
    }
    assert.ok(cancelsWon > 0 && cancelsWon < RACES, `both sides win some races (cancel won ${cancelsWon})`);
  });

  it('a cancel racing a completion: one of them, never both', async () => {
    for (let i = 0; i < RACES; i++) {
      const id = await job('processing');
      const [completed, cancelled] = await race(
        i,
        () =>
          jobs.finish(
            id,
            ['processing'],
            { status: 'completed', result: { images: [] }, media_ids: [] },
            now,
          ),
        () => jobs.finish(id, ['processing', 'failing'], { status: 'cancelled', refund: 50 }, now),
      );
      assert.ok((completed === null) !== (cancelled === null), `race ${i}: exactly one side wins`);
      assert.equal((await jobs.get(id))?.status, completed ? 'completed' : 'cancelled', `race ${i}`);
    }
  });

  it('a submit reaching the provider racing its abandonment: one of them, never both', async () => {
    for (let i = 0; i < RACES; i++) {
      const id = await job('submitting');
      const [processing, removed] = await race(
        i,
        () => jobs.markProcessing(id, handle, now),
        () => jobs.removeIf(id, 'submitting'),
      );
      assert.notEqual(processing, removed, `race ${i}: exactly one side wins`);
      assert.equal((await jobs.get(id))?.status, processing ? 'processing' : undefined, `race ${i}`);
    }
  });
});
