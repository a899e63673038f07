import type { Db } from 'mongodb';
import type { CreditLedger, LedgerEntry, CreditChangeResult } from '../../actors/index.ts';
import { newId, type Clock, isDuplicateKeyError, dropIndexesIfPresent } from '../platform/index.ts';

export type LedgerDoc = Omit<LedgerEntry, 'id'> & { _id: string };

/** The part of a user's document (collection `users`) that the ledger owns: the balance and its sequence. */
export interface BalanceDoc {
  _id: string;
  credits: number;
  ledger_seq: number;
  /** The newest ledger entry, written in the same atomic update as `credits`. */
  last_entry?: LedgerDoc;
}

const toEntry = ({ _id, ...rest }: LedgerDoc): LedgerEntry => ({ id: _id, ...rest });

/**
 * The credit ledger, without multi-document transactions.
 *
 * The commit point of a change is one atomic single-document update of the user: the new balance, the next
 * ledger sequence number and the new entry itself (`last_entry`), guarded on the sequence number read. The
 * entry is then copied into the `ledger` collection. If the process dies between the two writes, the next
 * change or ledger read of that user copies `last_entry` over first, so the ledger is never missing an entry
 * the balance counts, and the unique `(user_id, op_id)` index and the `_id` make every copy and every
 * repeated command apply once. The unique `(user_id, seq)` index states in the database what the guard
 * ensures: one entry per sequence number of a user.
 *
 * Why not a transaction: jongodb, our test and embedded server, silently drops whole transactions that run
 * concurrently (in a probe, 11 of 300 concurrent two-document transactions on different users vanished
 * after a successful commit). Single-document writes are atomic on it as on MongoDB, so this design is
 * correct on both. Callers still serialise changes per user (the user actor); the guard makes a second
 * writer (a redelivery racing a slow node) retry instead of overwriting.
 */
export async function createMongoCreditLedger(db: Db, clock: Clock): Promise<CreditLedger> {
  const users = db.collection<BalanceDoc>('users');
  const ledger = db.collection<LedgerDoc>('ledger');
  // Earlier versions had `(user_id, seq)` without uniqueness, as `by_user_seq`: MongoDB keeps one definition
  // per key, so that index goes before `seq_once` is built (which fails if the stored ledger breaks it).
  await dropIndexesIfPresent(ledger, ['by_user_seq']);
  await ledger.createIndexes([
    { key: { user_id: 1, op_id: 1 }, name: 'op_once', unique: true },
    // Also the index of the newest-first reads.
    { key: { user_id: 1, seq: -1 }, name: 'seq_once', unique: true },
  ]);

  /** Copies the user's newest entry into the ledger collection (a no-op when it is already there). */
  async function record(entry: LedgerDoc): Promise<void> {
    try {
      await ledger.insertOne(entry);
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
    }
  }

  async function applyOnce(
    change: Parameters<CreditLedger['apply']>[0],
  ): Promise<CreditChangeResult | 'retry'> {
    const user = await users.findOne({ _id: change.userId });
    if (!user) return { kind: 'no_user' };
    const last = user.last_entry;
    if (last?.op_id === change.opId) {
      await record(last);
      return { kind: 'applied', entry: toEntry(last), replayed: true };
    }
    const opIds = [change.opId, ...(last ? [last.op_id] : []), ...(change.reverses ? [change.reverses] : [])];
    const found = await ledger.find({ user_id: change.userId, op_id: { $in: opIds } }).toArray();
    const earlier = found.find((doc) => doc.op_id === change.opId);
    if (earlier) return { kind: 'applied', entry: toEntry(earlier), replayed: true };
    if (last && !found.some((doc) => doc.op_id === last.op_id)) await record(last); // a crash left it behind
    const reversed =
      change.reverses &&
      (last?.op_id === change.reverses || found.some((doc) => doc.op_id === change.reverses));
    if (change.reverses && !reversed) return { kind: 'nothing_to_reverse', credits_remaining: user.credits };

    const balance = user.credits + change.delta;
    if (balance < 0) {
      return { kind: 'insufficient', credits_required: -change.delta, credits_remaining: user.credits };
    }
    const entry: LedgerDoc = {
      _id: newId('led'),
      user_id: change.userId,
      op_id: change.opId,
      seq: user.ledger_seq + 1,
      delta: change.delta,
      balance_after: balance,
      reason: change.reason,
      ...(change.jobId ? { job_id: change.jobId } : {}),
      created_at: new Date(clock.now()),
    };
    const committed = await users.updateOne(
      { _id: user._id, ledger_seq: user.ledger_seq },
      { $set: { credits: balance, ledger_seq: entry.seq, last_entry: entry } },
    );
    if (committed.matchedCount !== 1) return 'retry'; // another writer got there first: read again
    await record(entry);
    return { kind: 'applied', entry: toEntry(entry), replayed: false };
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
      const [user, docs] = await Promise.all([
        users.findOne({ _id: userId }),
        ledger.find({ user_id: userId }).sort({ seq: -1 }).limit(limit).toArray(),
      ]);
      const last = user?.last_entry;
      if (last && (docs[0]?.seq ?? 0) < last.seq) {
        await record(last); // a crash left the newest entry on the user only
        docs.unshift(last);
      }
      return docs.slice(0, limit).map(toEntry);
    },
  };
}

const MAX_ATTEMPTS = 50;
