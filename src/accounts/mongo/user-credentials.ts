import type { Db } from 'mongodb';
import type { UserCredentialsRepository } from '../ports/user-credentials.ts';

interface CredentialsDoc {
  /** The user id. */
  _id: string;
  password_hash: string;
  updated_at: Date;
}

/** Users' credentials in the `user_credentials` collection, one document per user. */
export function createMongoUserCredentials(db: Db): UserCredentialsRepository {
  const credentials = db.collection<CredentialsDoc>('user_credentials');
  return {
    async setPasswordHash(userId, hash, at) {
      await credentials.updateOne(
        { _id: userId },
        { $set: { password_hash: hash, updated_at: at } },
        { upsert: true },
      );
    },
    async passwordHash(userId) {
      return (await credentials.findOne({ _id: userId }))?.password_hash ?? null;
    },
  };
}
