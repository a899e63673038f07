import type { Db } from 'mongodb';
import type {
  SessionTokenRecord,
  SignInLinkRecord,
  WebSessionRecord,
  WebSessionsRepository,
} from '../ports/web-sessions.ts';
import { fromIdDoc, toIdDoc, type IdDoc, type MongoCompat } from '../../platform/index.ts';

/**
 * Browser sessions in `web_sessions`, their bearer tokens in `session_tokens` and one-time sign-in links in
 * `sign_in_links`; MongoDB's TTL monitor removes expired ones.
 */
export async function createMongoWebSessions(db: Db): Promise<WebSessionsRepository> {
  const sessions = db.collection<IdDoc<WebSessionRecord>>('web_sessions');
  await sessions.createIndexes([
    { key: { user_id: 1 }, name: 'by_user' },
    { key: { expires_at: 1 }, name: 'expiry', expireAfterSeconds: 0 },
  ]);
  const tokens = db.collection<IdDoc<SessionTokenRecord>>('session_tokens');
  await tokens.createIndexes([
    { key: { session_id: 1 }, name: 'by_session' },
    { key: { user_id: 1 }, name: 'by_user' },
    { key: { expires_at: 1 }, name: 'expiry', expireAfterSeconds: 0 },
  ]);
  const links = db.collection<IdDoc<SignInLinkRecord>>('sign_in_links');
  await links.createIndexes([{ key: { expires_at: 1 }, name: 'expiry', expireAfterSeconds: 0 }]);
  return {
    async create(session) {
      await sessions.insertOne(toIdDoc(session));
    },
    get: async (id) => fromIdDoc(await sessions.findOne({ _id: id })),
    async delete(id) {
      await sessions.deleteOne({ _id: id });
      await tokens.deleteMany({ session_id: id });
    },
    async deleteForUser(userId) {
      await sessions.deleteMany({ user_id: userId });
      await tokens.deleteMany({ user_id: userId });
    },
    async createToken(token) {
      await tokens.insertOne(toIdDoc(token));
    },
    getToken: async (id) => fromIdDoc(await tokens.findOne({ _id: id })),
    async createSignInLink(link) {
      await links.insertOne(toIdDoc(link));
    },
    getSignInLink: async (id) => fromIdDoc(await links.findOne({ _id: id })),
    async spendSignInLink(id, at) {
      const result = await links.updateOne({ _id: id, spent_at: null }, { $set: { spent_at: at } });
      return result.modifiedCount === 1;
    },
  };
}

/** The web sessions as the service wires them: a sign-in link is spent once, made safe per link where needed. */
export const webSessionsOnServer = (
  compat: MongoCompat,
  sessions: WebSessionsRepository,
): WebSessionsRepository => compat.serialised(sessions, ['spendSignInLink'], (id) => id);
