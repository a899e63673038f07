import type { Db } from 'mongodb';
import type { ProjectRecord, ProjectsRepository, ProjectSummary } from '../../../actors/index.ts';

type ProjectDoc = Omit<ProjectRecord, 'id'> & { _id: string };

const toRecord = ({ _id, ...rest }: ProjectDoc): ProjectRecord => ({ id: _id, ...rest });

const toDoc = ({ id, ...rest }: ProjectRecord): ProjectDoc => ({ _id: id, ...rest });

/**
 * Projects in the `projects` collection, one document each (timeline, turn queue, event counter together).
 *
 * The commit point of every change is `replace`: one `replaceOne` conditional on the version the writer read,
 * so a redelivered command racing a slow node cannot overwrite a newer state — the loser sees false and reads
 * again. Unlike `findOneAndUpdate`, a conditional `replaceOne` had one winner in every one of 1 000 two-way
 * races over a 50-connection pool on jongodb, so this adapter needs no queueing from the MongoDB compatibility
 * (`MongoCompat.serialised`).
 */
export async function createMongoProjects(db: Db): Promise<ProjectsRepository> {
  const projects = db.collection<ProjectDoc>('projects', { ignoreUndefined: true });
  await projects.createIndexes([
    { key: { user_id: 1, updated_at: -1 }, name: 'by_user_recent' },
    // Sparse: only projects with a running turn have a lease, and only those are the sweeper's business.
    { key: { 'turn.lease_until': 1 }, name: 'by_lease_end', sparse: true },
    // Sparse: the field exists only while refunds are owed (the actor removes it once they are settled).
    { key: { refunds_due: 1 }, name: 'refunds_due', sparse: true },
  ]);

  return {
    async insert(project) {
      await projects.insertOne(toDoc(project));
    },
    async get(id) {
      const doc = await projects.findOne({ _id: id });
      return doc ? toRecord(doc) : null;
    },
    async listByUser(userId) {
      // MongoDB sends only the summary's fields; jongodb ignores projections and sends whole documents, so
      // the summary is also cut here.
      const docs = await projects
        .find({ user_id: userId }, { projection: { name: 1, aspect_ratio: 1, updated_at: 1 } })
        .sort({ updated_at: -1, _id: -1 })
        .toArray();
      return docs.map(({ _id, name, aspect_ratio, updated_at }): ProjectSummary => ({
        id: _id,
        name,
        aspect_ratio,
        updated_at,
      }));
    },
    async replace(project, expectedVersion) {
      const { _id, ...replacement } = toDoc(project);
      const written = await projects.replaceOne({ _id, version: expectedVersion }, replacement);
      // matchedCount, not modifiedCount: a write identical to the stored document still won the version.
      return written.matchedCount === 1;
    },
    async delete(id) {
      await projects.deleteOne({ _id: id });
    },
    async expiredLeases(now, limit) {
      if (limit <= 0) return []; // the driver reads limit 0 as "no limit"
      const docs = await projects
        .find({ 'turn.lease_until': { $lt: now } })
        .sort({ 'turn.lease_until': 1 })
        .limit(limit)
        .toArray();
      return docs.map((doc) => doc._id);
    },
    async withRefundsDue(limit) {
      if (limit <= 0) return [];
      const docs = await projects
        .find({ refunds_due: { $exists: true } })
        .limit(limit)
        .toArray();
      return docs.map((doc) => ({ id: doc._id, user_id: doc.user_id, refunds_due: doc.refunds_due ?? [] }));
    },
  };
}
