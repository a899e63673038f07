import type { Db, Filter } from 'mongodb';
import { createKeyedSerial } from '../../domain/keyed-serial.ts';
import type { JobRecord, JobsRepository, JobStatus } from '../../ports/jobs-repository.ts';

type JobDoc = Omit<JobRecord, 'id'> & { _id: string };

const toRecord = ({ _id, ...rest }: JobDoc): JobRecord => ({ id: _id, ...rest });

/** States that can owe a refund (`failing` always does until it becomes `failed`). */
const REFUNDING: JobStatus[] = ['failing', 'completed', 'failed', 'cancelled'];

/** What the API's status filter means in stored states (`failing` is shown as `processing`). */
const STORED_AS: Partial<Record<JobStatus, JobStatus[]>> = { processing: ['processing', 'failing'] };

/**
 * Jobs in the `jobs` collection. Each state change is one conditional single-document update on the state it
 * leaves, so a cancel racing a completion or a time-out has exactly one winner.
 *
 * MongoDB applies such an update atomically; jongodb (tests, embedded mode) does not across connections: two
 * racing updates on the same state both matched in 21 of 500 tries. So the state changes of one job are also
 * queued one at a time within this process, which makes a single process exact on either server; nodes of a
 * cluster rely on MongoDB's document atomicity.
 */
export async function createMongoJobs(db: Db): Promise<JobsRepository> {
  const jobs = db.collection<JobDoc>('jobs');
  const moves = createKeyedSerial();
  await jobs.createIndexes([
    { key: { user_id: 1, created_at: -1, _id: -1 }, name: 'by_user_newest' },
    { key: { status: 1, updated_at: 1 }, name: 'by_status_age' },
    { key: { refund_due: 1 }, name: 'refund_due' },
    { key: { notify_due: 1, completed_at: 1 }, name: 'notify_due' },
    { key: { created_at: 1 }, name: 'by_age' },
  ]);

  return {
    async insert(job) {
      const { id, ...rest } = job;
      await jobs.insertOne({ _id: id, ...rest });
    },
    async get(id) {
      const doc = await jobs.findOne({ _id: id });
      return doc ? toRecord(doc) : null;
    },
    async list(userId, { limit, status, after }) {
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
      const docs = await jobs.find(filter).sort({ created_at: -1, _id: -1 }).limit(limit).toArray();
      return docs.map(toRecord);
    },
    markProcessing: (id, handle, now) =>
      moves.run(id, async () => {
        const updated = await jobs.updateOne(
          { _id: id, status: 'submitting' },
          { $set: { status: 'processing', provider: handle, updated_at: now } },
        );
        return updated.modifiedCount === 1;
      }),
    finish: (id, from, outcome, now) =>
      moves.run(id, async () => {
        const refund = outcome.refund ?? 0;
        const doc = await jobs.findOneAndUpdate(
          { _id: id, status: { $in: from } },
          {
            $set: {
              status: outcome.status,
              result: outcome.result ?? null,
              media_ids: outcome.media_ids ?? [],
              error: outcome.error ?? null,
              refunded_credits: refund,
              refund_due: refund > 0,
              notify_due: outcome.status !== 'failing',
              completed_at: now,
              updated_at: now,
            },
          },
          { returnDocument: 'after' },
        );
        return doc ? toRecord(doc) : null;
      }),
    refundConfirmed: (id) =>
      moves.run(id, async () => {
        const failed = await jobs.findOneAndUpdate(
          { _id: id, status: 'failing' },
          { $set: { status: 'failed', refund_due: false, notify_due: true } },
          { returnDocument: 'after' },
        );
        if (failed) return toRecord(failed);
        await jobs.updateOne({ _id: id }, { $set: { refund_due: false } });
        return null;
      }),
    removeIf: (id, status) =>
      moves.run(id, async () => {
        const removed = await jobs.deleteOne({ _id: id, status });
        return removed.deletedCount === 1;
      }),
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
