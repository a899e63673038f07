import { MongoBulkWriteError, type Db, type Filter } from 'mongodb';
import type { MessageRecord, ThreadRepository } from '../../../actors/index.ts';
import { isDuplicateKeyError } from '../../platform/index.ts';

type MessageDoc = Omit<MessageRecord, 'id'> & { _id: string };

const toRecord = ({ _id, ...rest }: MessageDoc): MessageRecord => ({ id: _id, ...rest });

/** True when every write a bulk write refused was refused as a duplicate key. */
function onlyDuplicateKeys(error: unknown): boolean {
  if (!(error instanceof MongoBulkWriteError)) return isDuplicateKeyError(error);
  const refused = [error.writeErrors].flat();
  return refused.length > 0 && refused.every((write) => write.code === 11000);
}

/** Chat threads in the `project_messages` collection, one document per message. */
export async function createMongoThread(db: Db): Promise<ThreadRepository> {
  const messages = db.collection<MessageDoc>('project_messages', { ignoreUndefined: true });
  await messages.createIndexes([
    { key: { project_id: 1, video_id: 1, created_at: 1, _id: 1 }, name: 'by_thread_order' },
  ]);

  const thread = (projectId: string, videoId: string): Filter<MessageDoc> => ({
    project_id: projectId,
    video_id: videoId,
  });

  return {
    async append(records) {
      if (records.length === 0) return;
      try {
        // Upserts with $setOnInsert rather than insertMany: on jongodb one duplicate in an unordered
        // insertMany drops the whole batch (seen in a probe), and a redelivered turn end repeats its ids.
        await messages.bulkWrite(
          records.map(({ id, ...rest }) => ({
            updateOne: { filter: { _id: id }, update: { $setOnInsert: rest }, upsert: true },
          })),
          { ordered: false },
        );
      } catch (error) {
        // Concurrent upserts of one id: MongoDB may refuse the later one, and the message is stored.
        if (!onlyDuplicateKeys(error)) throw error;
      }
    },
    async list(projectId, videoId, { limit, after }) {
      if (limit <= 0) return []; // the driver reads limit 0 as "no limit"
      const filter = thread(projectId, videoId);
      if (after) {
        filter.$or = [
          { created_at: { $gt: after.created_at } },
          { created_at: after.created_at, _id: { $gt: after.id } },
        ];
      }
      const docs = await messages.find(filter).sort({ created_at: 1, _id: 1 }).limit(limit).toArray();
      return docs.map(toRecord);
    },
    async recent(projectId, videoId, limit) {
      if (limit <= 0) return [];
      const docs = await messages
        .find(thread(projectId, videoId))
        .sort({ created_at: -1, _id: -1 })
        .limit(limit)
        .toArray();
      return docs.reverse().map(toRecord);
    },
    async deleteByProject(projectId) {
      await messages.deleteMany({ project_id: projectId });
    },
  };
}
