import type { Collection, Db } from 'mongodb';
import type {
  AuthorizationCodeRecord,
  OAuthClientRecord,
  OAuthGrantRecord,
  OAuthStore,
  OAuthTokenRecord,
} from '../ports/oauth-store.ts';

import {
  fromIdDoc as fromDoc,
  toIdDoc as toDoc,
  type IdDoc as Doc,
  type MongoCompat,
} from '../../platform/index.ts';

/**
 * The authorization server's records: `oauth_clients`, `oauth_codes`, `oauth_grants`, `oauth_tokens` (codes and
 * tokens by their hash). Expired codes and tokens are removed by MongoDB's TTL monitor; each is also refused
 * by its expiry when read, so the monitor's delay changes nothing.
 */
export async function createMongoOAuthStore(db: Db): Promise<OAuthStore> {
  const clients = db.collection<Doc<OAuthClientRecord>>('oauth_clients');
  const codes = db.collection<Doc<AuthorizationCodeRecord>>('oauth_codes');
  const grants = db.collection<Doc<OAuthGrantRecord>>('oauth_grants');
  const tokens = db.collection<Doc<OAuthTokenRecord>>('oauth_tokens');
  await Promise.all([
    codes.createIndexes([
      { key: { user_id: 1 }, name: 'by_user' },
      { key: { expires_at: 1 }, name: 'expiry', expireAfterSeconds: 0 },
    ]),
    grants.createIndexes([{ key: { user_id: 1 }, name: 'by_user' }]),
    tokens.createIndexes([
      { key: { grant_id: 1 }, name: 'by_grant' },
      { key: { user_id: 1 }, name: 'by_user' },
      { key: { expires_at: 1 }, name: 'expiry', expireAfterSeconds: 0 },
    ]),
  ]);

  /** Marks a document spent once: whether this call did it, or null when there is none. */
  async function spend<T extends { id: string; spent_at: Date | null }>(
    collection: Collection<Doc<T>>,
    id: string,
    at: Date,
  ): Promise<{ record: T; first: boolean } | null> {
    const spendable = collection as unknown as Collection<{ _id: string; spent_at: Date | null }>;
    const spent = await spendable.findOneAndUpdate(
      { _id: id, spent_at: null },
      { $set: { spent_at: at } },
      { returnDocument: 'after' },
    );
    if (spent) return { record: fromDoc(spent as unknown as Doc<T>)!, first: true };
    const earlier = fromDoc((await spendable.findOne({ _id: id })) as unknown as Doc<T> | null);
    return earlier ? { record: earlier, first: false } : null;
  }

  return {
    async createClient(client) {
      await clients.insertOne(toDoc(client));
    },
    getClient: async (id) => fromDoc(await clients.findOne({ _id: id })),

    async saveCode(code) {
      await codes.insertOne(toDoc(code));
    },
    async spendCode(id, at) {
      const result = await spend<AuthorizationCodeRecord>(codes, id, at);
      return result && { code: result.record, first: result.first };
    },

    async createGrant(grant) {
      await grants.insertOne(toDoc(grant));
    },
    getGrant: async (id) => fromDoc(await grants.findOne({ _id: id })),
    async revokeGrant(id, at) {
      await grants.updateOne({ _id: id, revoked_at: null }, { $set: { revoked_at: at } });
      await tokens.updateMany({ grant_id: id, revoked_at: null }, { $set: { revoked_at: at } });
    },
    async revokeUserGrants(userId, at) {
      await codes.deleteMany({ user_id: userId, spent_at: null });
      await grants.updateMany({ user_id: userId, revoked_at: null }, { $set: { revoked_at: at } });
      await tokens.updateMany({ user_id: userId, revoked_at: null }, { $set: { revoked_at: at } });
    },

    async saveTokens(records) {
      await tokens.insertMany(records.map(toDoc));
    },
    getToken: async (id) => fromDoc(await tokens.findOne({ _id: id })),
    async spendRefreshToken(id, at) {
      const result = await spend<OAuthTokenRecord>(tokens, id, at);
      return result && { token: result.record, first: result.first };
    },
    async revokeToken(id, at) {
      await tokens.updateOne({ _id: id, revoked_at: null }, { $set: { revoked_at: at } });
    },
  };
}

/**
 * The OAuth store as the service wires it: spending a code or a refresh token is a conditional update that
 * must have one winner (a replayed code never gets a second set of tokens), made safe per id where needed.
 */
export const oauthStoreOnServer = (compat: MongoCompat, store: OAuthStore): OAuthStore =>
  compat.serialised(store, ['spendCode', 'spendRefreshToken'], (id) => id);
