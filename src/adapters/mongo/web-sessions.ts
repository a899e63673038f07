import type { Db } from 'mongodb';
import type { WebSessionRecord, WebSessionsRepository } from '../../ports/web-sessions.ts';

type SessionDoc = Omit<WebSessionRecord, 'id'> & { _id: string };

/** Browser sessions in the `web_sessions` collection; MongoDB's TTL monitor removes expired ones. */
export async function createMongoWebSessions(db: Db): Promise<WebSessionsRepository> {
  const sessions = db.collection<SessionDoc>('web_sessions');
  await sessions.createIndexes([
    { key: { user_id: 1 }, name: 'by_user' },
    { key: { expires_at: 1 }, name: 'expiry', expireAfterSeconds: 0 },
  ]);
  return {
    async create({ id, ...rest }) {
      await sessions.insertOne({ _id: id, ...rest });
    },
    async get(id) {
      const doc = await sessions.findOne({ _id: id });
      if (!doc) return null;
      const { _id, ...rest } = doc;
      return { id: _id, ...rest };
    },
    async delete(id) {
      await sessions.deleteOne({ _id: id });
    },
    async deleteForUser(userId) {
      await sessions.deleteMany({ user_id: userId });
    },
  };
}
