import type { Db, ClientSession, MongoClient } from 'mongodb';
import type {
  CreditChange,
  CreditLedger,
  LedgerEntry,
  CreditChangeResult,
} from '../../services/repositories.ts';
import { newId } from '../../domain/ids.ts';
import type { Clock } from '../../domain/clock.ts';
import { isDuplicateKeyError } from './connect.ts';
import type { UserDoc } from './users.ts';

type LedgerDoc = Omit<LedgerEntry, 'id'> & { _id: string };

const toEntry = ({ _id, ...rest }: LedgerDoc): LedgerEntry => ({ id: _id, ...rest });

/**
 * The credit ledger: the user's balance and the ledger entry change in one transaction, and the unique
 * (user_id, op_id) index makes a repeated command answer its first result instead of applying twice.
 * Callers serialise changes per user (the user actor; `serialisePerUser` in src/services in-process): real MongoDB would also
 * detect conflicting transactions, but jongodb does not, and its commits then silently overwrite each other.
 */
export async function createMongoCreditLedger(
  client: MongoClient,
  db: Db,
  clock: Clock,
): Promise<CreditLedger> {
  const users = db.collection<UserDoc>('users');
  const ledger = db.collection<LedgerDoc>('ledger');
  await ledger.createIndexes([
    { key: { user_id: 1, op_id: 1 }, name: 'op_once', unique: true },
    { key: { user_id: 1, seq: -1 }, name: 'by_user_seq' },
  ]);

  async function replay(userId: string, opId: string, session?: ClientSession) {
    const doc = await ledger.findOne({ user_id: userId, op_id: opId }, session ? { session } : {});
    return doc ? toEntry(doc) : null;
  }

  async function applyOnce(change: CreditChange): Promise<CreditChangeResult | 'retry'> {
    const session = client.startSession();
    try {
      let result: CreditChangeResult | undefined;
      await session.withTransaction(async () => {
        const earlier = await replay(change.userId, change.opId, session);
        if (earlier) return void (result = { kind: 'applied', entry: earlier, replayed: true });
        const user = await users.findOne({ _id: change.userId }, { session });
        if (!user) return void (result = { kind: 'no_user' });
        const balance = user.credits + change.delta;
        if (balance < 0) {
          return void (result = {
            kind: 'insufficient',
            credits_required: -change.delta,
            credits_remaining: user.credits,
          });
        }
        const seq = user.ledger_seq + 1;
        // Guarded on the values read: a concurrent change makes this match nothing, and the retry re-reads.
        const updated = await users.updateOne(
          { _id: user._id, credits: user.credits, ledger_seq: user.ledger_seq },
          { $set: { credits: balance, ledger_seq: seq } },
          { session },
        );
        if (updated.matchedCount !== 1) throw new ConcurrentChange();
        const entry: LedgerDoc = {
          _id: newId('led'),
          user_id: change.userId,
          op_id: change.opId,
          seq,
          delta: change.delta,
          balance_after: balance,
          reason: change.reason,
          ...(change.jobId ? { job_id: change.jobId } : {}),
          created_at: new Date(clock.now()),
        };
        await ledger.insertOne(entry, { session });
        result = { kind: 'applied', entry: toEntry(entry), replayed: false };
      });
      return result!;
    } catch (error) {
      // Another request with the same op_id won the race: answer its result.
      if (isDuplicateKeyError(error)) {
        const earlier = await replay(change.userId, change.opId);
        if (earlier) return { kind: 'applied', entry: earlier, replayed: true };
      }
      if (error instanceof ConcurrentChange) return 'retry';
      throw error;
    } finally {
      await session.endSession();
    }
  }

  return {
    async apply(change) {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const result = await applyOnce(change);
        if (result !== 'retry') return result;
      }
      throw new Error(`credit change ${change.opId} kept losing to concurrent changes`);
    },
    async entries(userId, limit) {
      const docs = await ledger.find({ user_id: userId }).sort({ seq: -1 }).limit(limit).toArray();
      return docs.map(toEntry);
    },
  };
}

const MAX_ATTEMPTS = 50;

/** A guarded balance update lost to a concurrent change; the whole transaction is retried. */
class ConcurrentChange extends Error {}
