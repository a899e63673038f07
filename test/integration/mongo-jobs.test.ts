// The jobs repository's state changes against a real MongoDB-wire server, raced in pairs over a pool of many
// connections: every race has exactly one winner and the stored state is the winner's. The repository is
// built as the service wires it (`jobsOnServer`): on jongodb, whose conditional updates are not atomic across
// connections, that queues one job's moves within the process; without it these races fail on jongodb. Also:
// the server is recognised from its own answer, and a confirmed refund is one conditional write.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import { connectMongo, type MongoConnection } from '../../src/platform/mongo/connect.ts';
import { detectMongoServer } from '../../src/platform/mongo/server.ts';
import { createMongoJobs } from '../../src/jobs/mongo-jobs.ts';
import { jobsOnServer } from '../../src/jobs/mongo-jobs.ts';
import type { JobRecord, JobsRepository } from '../../src/jobs/ports/jobs-repository.ts';
import { useMongoClient } from '../helpers/mongo.ts';
import { imageJobRecord } from '../helpers/job-records.ts';

const RACES = 200;
const now = new Date('2026-11-21T00:00:00Z');
const handle = { endpoint: 'imgmodel-2', requestId: 'req_1' };
const WRITES = new Set(['insert', 'update', 'delete', 'findAndModify']);

describe('jobs repository state changes', () => {
  const mongo = useMongoClient();
  let connection: MongoConnection;
  let jobs: JobsRepository;
  let jobNo = 0;

  before(async () => {
    // The service's own client settings: a pool of 50, so racing operations really run on different connections.
    connection = await connectMongo(mongo.uri, 'jobs');
    jobs = jobsOnServer(connection.compat, await createMongoJobs(connection.db));
  });
  after(() => connection?.close());

  /** Runs both sides at once, each going first in every other race, so either can win. */
  const race = <A, B>(i: number, a: () => Promise<A>, b: () => Promise<B>): Promise<[A, B]> =>
    i % 2 === 0
      ? Promise.all([a(), b()])
      : Promise.all([b(), a()]).then(([second, first]) => [first, second] as [A, B]);

  async function job(status: JobRecord['status'], fields: Partial<JobRecord> = {}): Promise<string> {
    const id = `job_race${++jobNo}`;
    const record = imageJobRecord({ id, userId: 'usr_1', keyId: 'key_1', now });
    await jobs.insert({ ...record, status, ...fields });
    return id;
  }

  it('recognises the test server as jongodb, from its buildInfo', async () => {
    const expected = process.env.MF_TEST_MONGO === 'container' ? 'mongodb' : 'jongodb';
    assert.equal(connection.server.kind, expected);
    assert.match(connection.server.version, /^\d+\.\d+/);
    assert.deepEqual(await detectMongoServer(mongo.client.db('other')), connection.server);
    assert.equal(connection.compat.server, connection.server, 'the compatibility is chosen for that server');
  });

  it('a cancel racing a confirmed failure: one of them, never both', async () => {
    let cancelsWon = 0;
    for (let i = 0; i < RACES; i++) {
      const id = await job('failing', { refund_due: true, refunded_credits: 50 });
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

  describe('a confirmed refund', () => {
    let client: MongoClient;
    let observed: JobsRepository;
    const writes: string[] = [];

    before(async () => {
      // A client of its own that reports every command it sends, on the same database as the races.
      client = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll', monitorCommands: true });
      client.on('commandStarted', (event: CommandStartedEvent) => {
        if (WRITES.has(event.commandName)) writes.push(event.commandName);
      });
      await client.connect();
      observed = jobsOnServer(connection.compat, await createMongoJobs(client.db('jobs')));
    });
    after(() => client?.close());

    /** The write commands `run` sent. */
    async function writesOf(run: () => Promise<unknown>): Promise<string[]> {
      writes.length = 0;
      await run();
      return [...writes];
    }

    it('makes a failing job failed in one write, and a second call writes nothing', async () => {
      const id = await job('failing', { refund_due: true, refunded_credits: 50, notify_due: false });
      let failed: JobRecord | null = null;
      assert.deepEqual(await writesOf(async () => (failed = await observed.refundConfirmed(id))), [
        'findAndModify',
      ]);
      const stored = await jobs.get(id);
      assert.equal(stored?.status, 'failed');
      assert.equal(stored?.refund_due, false);
      assert.equal(stored?.notify_due, true);
      assert.deepEqual(failed, stored, 'returns the job as it became failed');

      let again: JobRecord | null = stored;
      assert.deepEqual(await writesOf(async () => (again = await observed.refundConfirmed(id))), []);
      assert.equal(again, null, 'only the call that made it failed returns it');
      assert.deepEqual(await jobs.get(id), stored, 'nothing changed');
    });

    it('only clears refund_due of a cancelled job, in one write, and a second call writes nothing', async () => {
      const id = await job('cancelled', { refund_due: true, refunded_credits: 50, notify_due: true });
      const before = await jobs.get(id);
      let result: JobRecord | null = before;
      assert.deepEqual(await writesOf(async () => (result = await observed.refundConfirmed(id))), [
        'findAndModify',
      ]);
      assert.equal(result, null);
      assert.deepEqual(await jobs.get(id), { ...before, refund_due: false });

      assert.deepEqual(await writesOf(() => observed.refundConfirmed(id)), []);
      assert.deepEqual(await jobs.get(id), { ...before, refund_due: false });
    });

    it('leaves a job that owes nothing, or no job, alone', async () => {
      const id = await job('processing');
      const before = await jobs.get(id);
      assert.deepEqual(await writesOf(() => observed.refundConfirmed(id)), []);
      assert.deepEqual(await jobs.get(id), before);
      assert.equal(await observed.refundConfirmed('job_missing'), null);
    });
  });
});
