// The ledger's commit point is the user document; the `ledger` collection is completed from it. These tests
// leave a change half-done, as a crash between the two writes would, and check that nothing is lost or doubled.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Db } from 'mongodb';
import { systemClock } from '../../src/platform/core/clock.ts';
import { createMongoCreditLedger } from '../../src/credits/mongo-ledger.ts';
import { createMongoUsers } from '../../src/accounts/mongo/users.ts';
import type { CreditLedger } from '../../actors/ports/credit-ledger.ts';
import { useMongoClient } from '../helpers/mongo.ts';

describe('credit ledger (MongoDB)', () => {
  const mongo = useMongoClient();
  let db: Db;
  let ledger: CreditLedger;
  let userNo = 0;

  before(async () => {
    db = mongo.client.db('ledger');
    ledger = await createMongoCreditLedger(db, systemClock);
  });

  /** A user with 100 credits whose newest change (op `crashed`, −30) reached the user but not the ledger. */
  async function userWithUncopiedEntry(): Promise<string> {
    const id = `usr_${++userNo}`;
    await (
      await createMongoUsers(db)
    ).create({ id, email: `${id}@x.test`, credits: 0, created_at: new Date() });
    await ledger.apply({ userId: id, opId: 'open', delta: 100, reason: 'grant' });
    const [opening] = await ledger.entries(id, 10);
    const entry = {
      _id: `led_crashed_${id}`,
      user_id: id,
      op_id: 'crashed',
      seq: 2,
      delta: -30,
      balance_after: 70,
      reason: 'debit',
      created_at: new Date(),
    };
    await db
      .collection('users')
      .updateOne(
        { _id: id as never, ledger_seq: opening!.seq },
        { $set: { credits: 70, ledger_seq: 2, last_entry: entry } },
      );
    return id;
  }

  it('shows an entry the balance counts even when a crash kept it out of the ledger collection', async () => {
    const id = await userWithUncopiedEntry();
    const entries = await ledger.entries(id, 10);
    assert.deepEqual(
      entries.map((e) => [e.op_id, e.seq, e.balance_after]),
      [
        ['crashed', 2, 70],
        ['open', 1, 100],
      ],
    );
    assert.equal(await db.collection('ledger').countDocuments({ user_id: id }), 2, 'the read copied it over');
  });

  it('answers a redelivered command whose change reached only the user with its first result', async () => {
    const id = await userWithUncopiedEntry();
    const again = await ledger.apply({ userId: id, opId: 'crashed', delta: -30, reason: 'debit' });
    assert.equal(again.kind, 'applied');
    assert.ok(again.kind === 'applied' && again.replayed && again.entry.balance_after === 70);
    const user = await db.collection('users').findOne({ _id: id as never });
    assert.equal(user?.credits, 70, 'not applied a second time');
    assert.equal(await db.collection('ledger').countDocuments({ user_id: id, op_id: 'crashed' }), 1);
  });

  it('copies the left-behind entry before applying the next change, keeping the chain whole', async () => {
    const id = await userWithUncopiedEntry();
    const next = await ledger.apply({ userId: id, opId: 'next', delta: 5, reason: 'refund' });
    assert.ok(next.kind === 'applied' && next.entry.seq === 3 && next.entry.balance_after === 75);
    const chain = (await ledger.entries(id, 10)).reverse().map((e) => [e.seq, e.delta, e.balance_after]);
    assert.deepEqual(chain, [
      [1, 100, 100],
      [2, -30, 70],
      [3, 5, 75],
    ]);
  });

  it('lets only one of two racing writers of the same user commit each sequence number', async () => {
    const id = await userWithUncopiedEntry();
    // No actor here: 40 concurrent changes to one user, as a redelivery racing a slow node would produce.
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, n) =>
        ledger.apply({ userId: id, opId: `race${n % 20}`, delta: 1, reason: 'grant' }),
      ),
    );
    assert.ok(results.every((r) => r.kind === 'applied'));
    const chain = (await ledger.entries(id, 100)).reverse();
    assert.equal(chain.length, 2 + 20, 'twenty distinct op_ids, each once');
    chain.forEach((entry, index) => assert.equal(entry.seq, index + 1));
    assert.equal((await db.collection('users').findOne({ _id: id as never }))?.credits, 90);
  });
  it('applies a refund that reverses a debit only once that debit is in the ledger', async () => {
    const id = `usr_${++userNo}`;
    await (
      await createMongoUsers(db)
    ).create({ id, email: `${id}@x.test`, credits: 0, created_at: new Date() });
    await ledger.apply({ userId: id, opId: 'open', delta: 100, reason: 'grant' });
    const refund = { userId: id, opId: 'job1:refund', delta: 40, reason: 'refund', reverses: 'job1:debit' };

    assert.deepEqual(await ledger.apply(refund), { kind: 'nothing_to_reverse', credits_remaining: 100 });
    assert.equal((await ledger.entries(id, 10)).length, 1, 'a refund without its debit changes nothing');

    await ledger.apply({ userId: id, opId: 'job1:debit', delta: -40, reason: 'debit' });
    const applied = await ledger.apply(refund);
    assert.equal(applied.kind, 'applied');
    assert.equal(applied.kind === 'applied' && applied.entry.balance_after, 100);
    const again = await ledger.apply(refund);
    assert.equal(again.kind === 'applied' && again.replayed, true, 'the same refund applies once');
    assert.deepEqual(
      (await ledger.entries(id, 10)).map((entry) => entry.delta),
      [40, -40, 100],
    );
  });
});
