// The job sweeper against a real MongoDB-wire server, a real credit ledger behind the user actor and a real
// file media store, driven by a manual clock: jobs a crash left in `submitting` are refunded exactly once
// (only if charged) and removed with their fetched inputs; a failure whose refund was not confirmed becomes
// `failed` once it is; processing jobs nobody polled are scheduled again; jobs past retention go with their
// media, except those still processing or owing a refund.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Db } from 'mongodb';
import { pino } from 'pino';
import { createManualClock } from '../../src/platform/core/clock.ts';
import { newMediaId } from '../../src/platform/storage/media-id.ts';
import { createMongoCreditLedger } from '../../src/credits/mongo-ledger.ts';
import { createMongoUsers } from '../../src/accounts/mongo/users.ts';
import { createMongoJobs } from '../../src/jobs/mongo-jobs.ts';
import { jobsOnServer } from '../../src/jobs/mongo-jobs.ts';
import { createFsMediaStore } from '../../src/platform/storage/fs-store.ts';
import { createJobSweeper } from '../../src/jobs/job-sweeper.ts';
import { toJobView } from '../../src/jobs/job-view.ts';
import type { ImageGeneration, InputImage } from '../../src/jobs/ports/media-provider.ts';
import type { MediaStore } from '../../src/platform/storage/media-store.ts';
import type { CreditLedger } from '../../actors/ports/credit-ledger.ts';
import type { JobRecord, JobsRepository } from '../../src/jobs/ports/jobs-repository.ts';
import { userActor, userCredits, type UserCredits } from '../../actors/user.ts';
import { compatOf, useMongoClient } from '../helpers/mongo.ts';
import { imageJobRecord } from '../helpers/job-records.ts';
import { startTestActorSystem, type TestActorSystem } from '../helpers/actors.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const POLL_INTERVAL_MS = 2000;
const ABANDONED_MS = 5 * MINUTE;

describe('job sweeper (fake clock)', () => {
  const mongo = useMongoClient();
  const clock = createManualClock();
  let db: Db;
  let ledger: CreditLedger;
  let jobs: JobsRepository;
  let store: MediaStore;
  let mediaDir: string;
  let actors: TestActorSystem;
  let credits: UserCredits;
  const scheduled: string[] = [];
  const announced: JobRecord[] = [];
  let sweeper: ReturnType<typeof createJobSweeper>;
  let jobNo = 0;
  let userNo = 0;

  before(async () => {
    db = mongo.client.db('sweeper');
    ledger = await createMongoCreditLedger(db, clock);
    jobs = jobsOnServer(await compatOf(db), await createMongoJobs(db)); // as the service wires it
    mediaDir = await mkdtemp(join(tmpdir(), 'mf-sweeper-'));
    store = await createFsMediaStore({ dir: mediaDir });
    actors = await startTestActorSystem({ transport: 'in-process', actors: [userActor], ports: { ledger } });
    credits = userCredits(actors.system);
    sweeper = createJobSweeper({
      jobs,
      credits,
      store,
      poller: { schedule: (jobId) => void scheduled.push(jobId) },
      clock,
      logger: pino({ level: 'silent' }),
      retentionDays: 30,
      abandonedSubmitMs: ABANDONED_MS,
      pollIntervalMs: POLL_INTERVAL_MS,
      onFinished: (job) => void announced.push(job),
    });
  });
  after(async () => {
    await actors?.close();
    await rm(mediaDir, { recursive: true, force: true });
  });

  async function user(credits = 1000): Promise<string> {
    const id = `usr_${++userNo}`;
    const users = await createMongoUsers(db);
    await users.create({ id, email: `${id}@x.test`, credits: 0, created_at: new Date(clock.now()) });
    await ledger.apply({ userId: id, opId: 'opening', delta: credits, reason: 'grant' });
    return id;
  }

  const balance = async (userId: string) => (await ledger.entries(userId, 1))[0]!.balance_after;
  const entriesOf = async (userId: string, jobId: string) =>
    (await ledger.entries(userId, 100)).filter((entry) => entry.job_id === jobId);

  /** A media file in the store (a result or an input copy). */
  async function storedFile(): Promise<string> {
    const id = newMediaId('png');
    await store.put(id, Buffer.from('not really a png'), 'image/png');
    return id;
  }
  const exists = async (id: string) => (await store.stat(id).catch(() => null)) !== null;

  /** A job as the submit protocol writes it, in `status`, created now (clock time). */
  async function job(userId: string, status: JobRecord['status'], extra: Partial<JobRecord> = {}) {
    const draft = imageJobRecord({
      id: `job_sweep${++jobNo}`,
      userId,
      keyId: 'key_test',
      now: new Date(clock.now()),
    });
    const record: JobRecord = {
      ...draft,
      status,
      provider: status === 'submitting' ? null : { endpoint: 'sandbox/image', requestId: `req_${draft.id}` },
      ...extra,
    };
    await jobs.insert(record);
    return record;
  }

  /** An edit generation over `images`. */
  const editOf = (images: InputImage[]): ImageGeneration => ({
    capability: 'image-edit',
    prompt: 'p',
    num_images: 1,
    aspect_ratio: '1:1',
    seed: 1,
    images,
  });

  const debit = (record: JobRecord) =>
    credits.debit(record.user_id, { op_id: record.debit_op_id, amount: record.credits, job_id: record.id });

  it('refunds a charged abandoned submit exactly once, removes uncharged ones, and only after the threshold', async () => {
    const userId = await user(1000);
    const copy = await storedFile();
    const own = await storedFile();
    const images = [
      { mediaId: copy, url: `x/${copy}`, contentType: 'image/png', fetched: true },
      { mediaId: own, url: `x/${own}`, contentType: 'image/png' },
    ];
    const charged = await job(userId, 'submitting', {
      generation: editOf(images),
    });
    await debit(charged); // the crash came after the debit…
    const uncharged = await job(userId, 'submitting'); // …or before it
    assert.equal(await balance(userId), 950);

    clock.advance(ABANDONED_MS - 1);
    assert.equal((await sweeper.sweep()).abandoned, 0, 'a submit may still be running');
    assert.ok(await jobs.get(charged.id));

    clock.advance(2);
    assert.equal((await sweeper.sweep()).abandoned, 2);
    assert.equal(await balance(userId), 1000);
    assert.deepEqual(
      (await entriesOf(userId, charged.id)).map((entry) => [entry.op_id, entry.delta]),
      [
        [`${charged.id}:refund`, 50],
        [`${charged.id}:debit`, -50],
      ],
    );
    assert.deepEqual(await entriesOf(userId, uncharged.id), [], 'nothing given back that was not taken');
    assert.equal(await jobs.get(charged.id), null);
    assert.equal(await jobs.get(uncharged.id), null);
    assert.deepEqual([await exists(copy), await exists(own)], [false, true], 'only the fetched copy goes');

    clock.advance(ABANDONED_MS);
    await sweeper.sweep();
    assert.equal(await balance(userId), 1000, 'a second sweep changes nothing');
  });

  it('makes a failure whose refund was not confirmed `failed` once the refund is in, announcing it once', async () => {
    const userId = await user(1000);
    const record = await job(userId, 'processing');
    await debit(record);
    // A poll wrote the failure, then its process died before the refund.
    const failing = await jobs.finish(
      record.id,
      ['processing'],
      { status: 'failing', error: 'The provider failed', refund: 50 },
      new Date(clock.now()),
    );
    assert.equal(toJobView(failing!).status, 'processing', 'not failed before the credits are back');
    assert.equal(await balance(userId), 950);

    announced.length = 0;
    assert.equal((await sweeper.sweep()).refunds, 1);
    const failed = await jobs.get(record.id);
    assert.deepEqual([failed!.status, failed!.refund_due, failed!.refunded_credits], ['failed', false, 50]);
    assert.equal(toJobView(failed!).error, 'The provider failed');
    assert.equal(await balance(userId), 1000);
    assert.deepEqual(
      announced.map((job) => [job.id, job.status]),
      [[record.id, 'failed']],
    );

    await sweeper.sweep();
    assert.equal(announced.length, 1, 'announced once');
    assert.equal(await balance(userId), 1000, 'refunded once');
  });

  it('schedules a poll of every job processing without a change for three poll intervals', async () => {
    const userId = await user();
    const quiet = await job(userId, 'processing');
    clock.advance(3 * POLL_INTERVAL_MS + 1);
    const recent = await job(userId, 'processing');
    scheduled.length = 0;
    await sweeper.sweep();
    assert.ok(scheduled.includes(quiet.id));
    assert.ok(!scheduled.includes(recent.id));
  });

  it('removes jobs past retention with their results and fetched inputs, keeping unfinished business', async () => {
    const userId = await user();
    const [result, copy, own] = [await storedFile(), await storedFile(), await storedFile()];
    const images = [
      { mediaId: copy, url: `x/${copy}`, contentType: 'image/png', fetched: true },
      { mediaId: own, url: `x/${own}`, contentType: 'image/png' },
    ];
    const done = await job(userId, 'completed', {
      media_ids: [result],
      generation: editOf(images),
    });
    const stillProcessing = await job(userId, 'processing', {
      deadline_at: new Date(clock.now() + 60 * DAY),
    });
    const owing = await job(userId, 'failing', { refund_due: true, refunded_credits: 50 });
    // Keep the owed refund unconfirmable: its user does not exist, so the actor's ledger refuses it.
    await db.collection('jobs').updateOne({ _id: owing.id as never }, { $set: { user_id: 'usr_missing' } });
    clock.advance(10 * DAY);
    const younger = await job(userId, 'completed');

    clock.advance(20 * DAY - 1);
    await sweeper.sweep();
    assert.ok(await jobs.get(done.id), 'exactly 30 days old is not past retention');

    clock.advance(2);
    await sweeper.sweep();
    assert.equal(await jobs.get(done.id), null);
    assert.deepEqual(
      [await exists(result), await exists(copy), await exists(own)],
      [false, false, true],
      'its result and fetched copy go; our own media it used do not',
    );
    assert.ok(await jobs.get(stillProcessing.id), 'a processing job stays');
    assert.ok(await jobs.get(owing.id), 'a job owing a refund stays');
    assert.ok(await jobs.get(younger.id), 'a younger job stays');
  });
});
