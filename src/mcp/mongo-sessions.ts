import type { Db } from 'mongodb';
import type { McpSessionRecord, McpSessionsRepository } from './mcp-sessions.ts';
import { fromIdDoc, toIdDoc, type IdDoc } from '../platform/index.ts';

/** MCP sessions in the `mcp_sessions` collection, one document per session. */
export async function createMongoMcpSessions(db: Db): Promise<McpSessionsRepository> {
  const sessions = db.collection<IdDoc<McpSessionRecord>>('mcp_sessions');
  await sessions.createIndexes([{ key: { last_seen_at: 1 }, name: 'by_last_seen' }]);
  return {
    async create(session) {
      await sessions.insertOne(toIdDoc(session));
    },
    get: async (id) => fromIdDoc(await sessions.findOne({ _id: id })),
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
