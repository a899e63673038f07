import type { Db } from 'mongodb';
import type { UserRecord, UsersRepository } from '../ports/users-repository.ts';
import { isDuplicateKeyError } from '../../platform/index.ts';
import type { BalanceDoc } from '../../credits/index.ts';

/** A user's document: the account's fields beside the balance the ledger owns. */
interface UserDoc extends BalanceDoc {
  email: string;
  created_at: Date;
}

const toRecord = (doc: UserDoc): UserRecord => ({
  id: doc._id,
  email: doc.email,
  credits: doc.credits,
  created_at: doc.created_at,
});

/** Users in the `users` collection (unique email). */
export async function createMongoUsers(db: Db): Promise<UsersRepository> {
  const users = db.collection<UserDoc>('users');
  await users.createIndexes([
    { key: { email: 1 }, name: 'email_unique', unique: true },
    { key: { created_at: 1, _id: 1 }, name: 'created_order' },
  ]);
  return {
    async create(user) {
      try {
        await users.insertOne({
          _id: user.id,
          email: user.email,
          credits: user.credits,
          ledger_seq: 0,
          created_at: user.created_at,
        });
        return 'created';
      } catch (error) {
        if (isDuplicateKeyError(error)) return 'email_taken';
        throw error;
      }
    },
    async get(id) {
      const doc = await users.findOne({ _id: id });
      return doc ? toRecord(doc) : null;
    },
    async findByEmail(email) {
      const doc = await users.findOne({ email: email.toLowerCase() });
      return doc ? toRecord(doc) : null;
    },
    async list(limit, after) {
      const filter = after
        ? {
            $or: [
              { created_at: { $gt: after.created_at } },
              { created_at: after.created_at, _id: { $gt: after.id } },
            ],
          }
        : {};
      const docs = await users.find(filter).sort({ created_at: 1, _id: 1 }).limit(limit).toArray();
      return docs.map(toRecord);
    },
  };
}
