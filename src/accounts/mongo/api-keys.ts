import type { Db } from 'mongodb';
import type { MongoCompat } from '../../platform/index.ts';
import type { ApiKeyRecord, ApiKeysRepository } from '../ports/api-keys-repository.ts';

type ApiKeyDoc = Omit<ApiKeyRecord, 'id'> & { _id: string };

const toRecord = ({ _id, ...rest }: ApiKeyDoc): ApiKeyRecord => ({
  id: _id,
  ...rest,
  webhook: rest.webhook ?? null,
});

/** API keys in the `api_keys` collection, found by the SHA-256 of the key. */
export async function createMongoApiKeys(db: Db): Promise<ApiKeysRepository> {
  const keys = db.collection<ApiKeyDoc>('api_keys');
  await keys.createIndexes([
    { key: { hash: 1 }, name: 'hash_unique', unique: true },
    { key: { user_id: 1, created_at: 1 }, name: 'by_user' },
  ]);
  return {
    async create({ id, ...rest }) {
      await keys.insertOne({ _id: id, ...rest });
    },
    async get(id) {
      const doc = await keys.findOne({ _id: id });
      return doc ? toRecord(doc) : null;
    },
    async findByHash(hash) {
      const doc = await keys.findOne({ hash });
      return doc ? toRecord(doc) : null;
    },
    async listForUser(userId) {
      const docs = await keys.find({ user_id: userId }).sort({ created_at: 1, _id: 1 }).toArray();
      return docs.map(toRecord);
    },
    async revoke(id, at) {
      // Revoking twice keeps the first revocation time.
      await keys.updateOne({ _id: id, revoked_at: null }, { $set: { revoked_at: at } });
      const doc = await keys.findOne({ _id: id });
      return doc ? toRecord(doc) : null;
    },
    async setWebhook(id, webhook) {
      await keys.updateOne({ _id: id }, { $set: { webhook } });
    },
  };
}

/** The API keys as the service wires them: the first revocation's time is kept, made safe per key where needed. */
export const apiKeysOnServer = (compat: MongoCompat, keys: ApiKeysRepository): ApiKeysRepository =>
  compat.serialised(keys, ['revoke'], (id) => id);
