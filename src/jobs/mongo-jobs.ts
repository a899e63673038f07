import type { MongoCompat } from '../platform/index.ts';
import type { Collection, Db, Filter, IndexDescription, UpdateFilter } from 'mongodb';
import type { JobOutcome, JobRecord, JobsRepository, JobStatus } from './ports/jobs-repository.ts';

type JobDoc = Omit<JobRecord, 'id'> & { _id: string };

const toRecord = ({ _id, ...rest }: JobDoc): JobRecord => ({ id: _id, ...rest });

/** States that can owe a refund (`failing` always does until it becomes `failed`). */
const REFUNDING: JobStatus[] = ['failing', 'completed', 'failed', 'cancelled'];

/** What the API's status filter means in stored states (`failing` is shown as `processing`). */
const STORED_AS: Partial<Record<JobStatus, JobStatus[]>> = { processing: ['processing', 'failing'] };

/** The reads the repository makes: a user's list, the sweeps by state and age, the outbox, retention. */
const JOB_INDEXES: IndexDescription[] = [
  { key: { user_id: 1, created_at: -1, _id: -1 }, name: 'by_user_newest' },
  { key: { status: 1, updated_at: 1 }, name: 'by_status_age' },
  { key: { refund_due: 1 }, name: 'refund_due' },
  { key: { notify_due: 1, completed_at: 1 }, name: 'notify_due' },
  { key: { created_at: 1 }, name: 'by_age' },
];

/**
 * Jobs in the `jobs` collection. Each state change is one conditional single-document update on the state it
 * leaves, so a cancel racing a completion or a time-out has exactly one winner: MongoDB applies such an update
 * atomically. jongodb does not across connections; the wiring wraps this repository for it (`jobsOnServer`).
 */
export async function createMongoJobs(db: Db): Promise<JobsRepository> {
  const jobs = db.collection<JobDoc>('jobs');
  await jobs.createIndexes(JOB_INDEXES);

  return {
    async insert(job) {
      const { id, ...rest } = job;
      await jobs.insertOne({ _id: id, ...rest });
    },
    async get(id) {
      const doc = await jobs.findOne({ _id: id });
      return doc ? toRecord(doc) : null;
    },
    async list(userId, options) {
      const docs = await jobs
        .find(listFilter(userId, options))
        .sort({ created_at: -1, _id: -1 })
        .limit(options.limit)
        .toArray();
      return docs.map(toRecord);
    },
    async markProcessing(id, handle, now) {
      const updated = await jobs.updateOne(
        { _id: id, status: 'submitting' },
        { $set: { status: 'processing', provider: handle, updated_at: now } },
      );
      return updated.modifiedCount === 1;
    },
    async finish(id, from, outcome, now) {
      const doc = await jobs.findOneAndUpdate(
        { _id: id, status: { $in: from } },
        { $set: outcomeFields(outcome, now) },
        { returnDocument: 'after' },
      );
      return doc ? toRecord(doc) : null;
    },
    refundConfirmed: (id) => confirmRefund(jobs, id),
    async removeIf(id, status) {
      const removed = await jobs.deleteOne({ _id: id, status });
      return removed.deletedCount === 1;
    },
    async inStatus(status, before, limit) {
      const docs = await jobs
        .find({ status, updated_at: { $lt: before } })
        .sort({ updated_at: 1 })
        .limit(limit)
        .toArray();
      return docs.map(toRecord);
    },
    async refundsDue(limit) {
      const docs = await jobs
        .find({ refund_due: true, status: { $in: REFUNDING } })
        .limit(limit)
        .toArray();
      return docs.map(toRecord);
    },
    async notifyDue(before, limit) {
      const docs = await jobs
        .find({ notify_due: true, completed_at: { $lt: before } })
        .sort({ completed_at: 1 })
        .limit(limit)
        .toArray();
      return docs.map(toRecord);
    },
    async notified(ids) {
      if (ids.length > 0) await jobs.updateMany({ _id: { $in: ids } }, { $set: { notify_due: false } });
    },
    async createdBefore(before, limit) {
      const docs = await jobs
        .find({ created_at: { $lt: before } })
        .sort({ created_at: 1 })
        .limit(limit)
        .toArray();
      return docs.map(toRecord);
    },
    async delete(id) {
      await jobs.deleteOne({ _id: id });
    },
  };
}

/** The user's visible jobs (in the API's sense of `status`), past `after` in newest-first order. */
function listFilter(
  userId: string,
  { status, after }: Parameters<JobsRepository['list']>[1],
): Filter<JobDoc> {
  const filter: Filter<JobDoc> = {
    user_id: userId,
    status: status ? { $in: STORED_AS[status] ?? [status] } : { $ne: 'submitting' },
  };
  if (after) {
    filter.$or = [
      { created_at: { $lt: after.created_at } },
      { created_at: after.created_at, _id: { $lt: after.id } },
    ];
  }
  return filter;
}

/**
 * What `finish` writes: the outcome, `refund_due` while credits are owed, and the outbox flag for every
 * terminal state (`failing` is not terminal: its flag comes with the confirmed refund).
 */
function outcomeFields(outcome: JobOutcome, now: Date): UpdateFilter<JobDoc>['$set'] {
  const refund = outcome.refund ?? 0;
  return {
    status: outcome.status,
    result: outcome.result ?? null,
    media_ids: outcome.media_ids ?? [],
    error: outcome.error ?? null,
    refunded_credits: refund,
    refund_due: refund > 0,
    notify_due: outcome.status !== 'failing',
    completed_at: now,
    updated_at: now,
  };
}

/**
 * `refundConfirmed`: one write, conditional on the exact state it leaves (status and `refund_due` as just
 * read): a `failing` job becomes `failed` and is returned; any other job owing a refund only has `refund_due`
 * cleared. The write misses only if another move came between the read and it; then the job is read again (a
 * job moves forward a few times at most, so this ends). With nothing owed, it writes nothing.
 *
 * Not a single update with an update pipeline (`$cond` on the status): jongodb refuses pipelines in
 * `findAndModify` ("update must be a document") and any expression in `update` pipelines ("update
 * pipeline expressions are not supported").
 */
async function confirmRefund(jobs: Collection<JobDoc>, id: string): Promise<JobRecord | null> {
  for (;;) {
    const seen = await jobs.findOne({ _id: id });
    if (!seen || (seen.status !== 'failing' && !seen.refund_due)) return null;
    const failing = seen.status === 'failing';
    const moved = await jobs.findOneAndUpdate(
      { _id: id, status: seen.status, refund_due: seen.refund_due },
      {
        $set: failing ? { status: 'failed', refund_due: false, notify_due: true } : { refund_due: false },
      },
      { returnDocument: 'after' },
    );
    if (moved) return failing ? toRecord(moved) : null;
  }
}

/** The jobs repository as the service wires it: its state changes made safe per job id where needed. */
export const jobsOnServer = (compat: MongoCompat, jobs: JobsRepository): JobsRepository =>
  compat.serialised(jobs, ['markProcessing', 'finish', 'refundConfirmed', 'removeIf'], (id) => id);
