import type { Db } from 'mongodb';
import { isDuplicateKeyError } from '../platform/index.ts';
import type { SegmentEntry, SegmentIndex } from './segment-cache.ts';

/** One cached segment in `export_segments`; `_id` is user, project and key, so each is recorded once. */
interface SegmentDoc {
  _id: string;
  user_id: string;
  project_id: string;
  key: string;
  media_id: string;
  bytes: number;
  used_at: Date;
}

const idOf = (entry: Pick<SegmentEntry, 'userId' | 'projectId' | 'key'>) =>
  `${entry.userId}/${entry.projectId}/${entry.key}`;

const toEntry = (doc: SegmentDoc): SegmentEntry => ({
  userId: doc.user_id,
  projectId: doc.project_id,
  key: doc.key,
  mediaId: doc.media_id,
  bytes: doc.bytes,
  usedAt: doc.used_at,
});

/** Entries removed at once with their project. */
const REMOVE_BATCH = 100;

/** The index in MongoDB, and the creation of its collection's indexes (when the export starts). */
export interface MongoSegmentIndex extends SegmentIndex {
  ensureIndexes(): Promise<void>;
}

/** The segment cache's index in MongoDB's `export_segments` collection. */
export function createMongoSegmentIndex(db: Db): MongoSegmentIndex {
  const segments = db.collection<SegmentDoc>('export_segments');
  const remove = async (id: string) => (await segments.deleteOne({ _id: id })).deletedCount === 1;

  return {
    async ensureIndexes() {
      await segments.createIndexes([
        { key: { used_at: 1, _id: 1 }, name: 'least_recently_used' },
        { key: { project_id: 1 }, name: 'by_project' },
      ]);
    },
    async find(userId, projectId, key) {
      const doc = await segments.findOne({ _id: idOf({ userId, projectId, key }) });
      return doc ? toEntry(doc) : null;
    },
    async add(entry) {
      try {
        await segments.insertOne({
          _id: idOf(entry),
          user_id: entry.userId,
          project_id: entry.projectId,
          key: entry.key,
          media_id: entry.mediaId,
          bytes: entry.bytes,
          used_at: entry.usedAt,
        });
        return true;
      } catch (error) {
        if (isDuplicateKeyError(error)) return false;
        throw error;
      }
    },
    async touch(userId, projectId, key, at) {
      await segments.updateOne({ _id: idOf({ userId, projectId, key }) }, { $set: { used_at: at } });
    },
    async remove(entry) {
      await remove(idOf(entry));
    },
    async totalBytes() {
      const [total] = await segments
        .aggregate<{ bytes: number }>([{ $group: { _id: null, bytes: { $sum: '$bytes' } } }])
        .toArray();
      return total?.bytes ?? 0;
    },
    async leastRecentlyUsed(limit) {
      const docs = await segments.find().sort({ used_at: 1, _id: 1 }).limit(limit).toArray();
      return docs.map(toEntry);
    },
    async removeProject(projectId) {
      // One by one, each answered only when this call removed it: an eviction at the same time removes (and
      // deletes the file of) the others, so no file is deleted twice or left without its entry.
      const removed: SegmentEntry[] = [];
      for (;;) {
        const docs = await segments.find({ project_id: projectId }).limit(REMOVE_BATCH).toArray();
        if (docs.length === 0) return removed;
        for (const doc of docs) if (await remove(doc._id)) removed.push(toEntry(doc));
      }
    },
  };
}
