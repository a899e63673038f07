import type { Db } from 'mongodb';
import type { McpSessionRecord, McpSessionsRepository } from '../../ports/mcp-sessions.ts';

type SessionDoc = Omit<McpSessionRecord, 'id'> & { _id: string };

/** MCP sessions in the `mcp_sessions` collection, one document per session. */
export async function createMongoMcpSessions(db: Db): Promise<McpSessionsRepository> {
  const sessions = db.collection<SessionDoc>('mcp_sessions');
  await sessions.createIndexes([{ key: { last_seen_at: 1 }, name: 'by_last_seen' }]);
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
    async touch(id, at) {
      await sessions.updateOne({ _id: id, last_seen_at: { $lt: at } }, { $set: { last_seen_at: at } });
    },
    async delete(id) {
      const result = await sessions.deleteOne({ _id: id });
      return result.deletedCount === 1;
    },
    async deleteIdle(before) {
      const result = await sessions.deleteMany({ last_seen_at: { $lt: before } });
      return result.deletedCount;
    },
  };
}
