// Every invariant of the stored data that a unique index can state is stated by one, created by the adapter
// itself, and the server refuses the duplicate: a second write through the repository is answered as such,
// and a raw duplicate insert (code that bypasses the repository) gets MongoDB's duplicate-key error. Run on
// jongodb here, and on a real MongoDB where `MF_TEST_MONGO=container`. docs/operator.md ("MongoDB and the
// embedded server") lists these indexes and the invariants `_id` states alone.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import type { Db, Document } from 'mongodb';
import { systemClock } from '../../src/platform/core/clock.ts';
import { isDuplicateKeyError } from '../../src/platform/mongo/connect.ts';
import { createGridFsMediaStore } from '../../src/platform/storage/gridfs-store.ts';
import { newMediaId } from '../../src/platform/storage/media-id.ts';
import { createMongoCreditLedger } from '../../src/credits/mongo-ledger.ts';
import { createMongoUsers } from '../../src/accounts/mongo/users.ts';
import { createMongoApiKeys } from '../../src/accounts/mongo/api-keys.ts';
import { createMongoWebhookDeliveries } from '../../src/webhooks/mongo-deliveries.ts';
import type { WebhookDelivery } from '../../src/webhooks/ports/webhook-deliveries-repository.ts';
import { createMongoAssets } from '../../src/editor/mongo/assets.ts';
import type { AssetRecord } from '../../actors/ports/assets-repository.ts';
import { useMongoClient } from '../helpers/mongo.ts';

const now = new Date('2026-11-21T00:00:00Z');

/** Asserts the server refuses `doc` in `collection` with a duplicate-key error. */
async function refusesDuplicate(db: Db, collection: string, doc: Document): Promise<void> {
  await assert.rejects(
    () => db.collection(collection).insertOne(doc),
    (error: unknown) => isDuplicateKeyError(error),
    `${collection} took a duplicate: ${JSON.stringify(doc)}`,
  );
}

/** The named index of `collection`, as the server lists it. */
async function indexNamed(db: Db, collection: string, name: string): Promise<Document | undefined> {
  return (await db.collection(collection).listIndexes().toArray()).find((index) => index.name === name);
}

describe('unique indexes', () => {
  const mongo = useMongoClient();
  let db: Db;

  before(() => {
    db = mongo.client.db('unique');
  });

  describe('credit ledger', () => {
    const userId = 'usr_ledger';

    before(async () => {
      const users = await createMongoUsers(db);
      await users.create({ id: userId, email: 'ledger@x.test', credits: 0, created_at: now });
      const ledger = await createMongoCreditLedger(db, systemClock);
      await ledger.apply({ userId, opId: 'grant-1', delta: 100, reason: 'grant' });
    });

    it('refuses a second entry of one operation of a user (op_once)', async () => {
      const entry = { user_id: userId, op_id: 'grant-1', seq: 99, delta: 1, balance_after: 1, reason: 'x' };
      await refusesDuplicate(db, 'ledger', { _id: 'led_dup_op', ...entry });
      // Another user may use the same op id.
      await db
        .collection('ledger')
        .insertOne({ _id: 'led_other_user' as never, ...entry, user_id: 'usr_other' });
    });

    it('refuses a second entry with one sequence number of a user (seq_once)', async () => {
      const [first] = await db.collection('ledger').find({ user_id: userId }).toArray();
      assert.equal(first?.seq, 1);
      const entry = { user_id: userId, op_id: 'other-op', seq: 1, delta: 1, balance_after: 1, reason: 'x' };
      await refusesDuplicate(db, 'ledger', { _id: 'led_dup_seq', ...entry });
      assert.equal((await indexNamed(db, 'ledger', 'seq_once'))?.unique, true);
      assert.equal(await indexNamed(db, 'ledger', 'by_user_seq'), undefined, 'the non-unique one is gone');
    });

    it('creates its indexes again on a restart without complaint', async () => {
      const again = await createMongoCreditLedger(db, systemClock);
      assert.equal((await again.entries(userId, 10)).length, 1);
    });
  });

  it('users: one per email (email_unique)', async () => {
    const users = await createMongoUsers(db);
    assert.equal(
      await users.create({ id: 'usr_a', email: 'a@x.test', credits: 0, created_at: now }),
      'created',
    );
    assert.equal(
      await users.create({ id: 'usr_b', email: 'a@x.test', credits: 0, created_at: now }),
      'email_taken',
    );
    await refusesDuplicate(db, 'users', { _id: 'usr_c', email: 'a@x.test', credits: 0, ledger_seq: 0 });
  });

  it('API keys: one per key hash (hash_unique)', async () => {
    const keys = await createMongoApiKeys(db);
    const key = {
      id: 'key_a',
      user_id: 'usr_a',
      name: 'a',
      scopes: [],
      hash: 'h'.repeat(64),
      prefix: 'sk_a',
      created_at: now,
      revoked_at: null,
      webhook: null,
    };
    await keys.create(key);
    await assert.rejects(() => keys.create({ ...key, id: 'key_b' }), isDuplicateKeyError);
    await refusesDuplicate(db, 'api_keys', { _id: 'key_c', hash: key.hash });
  });

  describe('webhook deliveries', () => {
    const delivery = (id: string, jobId: string, keyId: string): WebhookDelivery => ({
      id,
      key_id: keyId,
      user_id: 'usr_a',
      job_id: jobId,
      event: 'job.completed',
      body: '{}',
      state: 'pending',
      attempts: [],
      next_attempt_at: now,
      created_at: now,
      updated_at: now,
    });

    it('one per job and key (one_per_job_key), whatever the delivery id', async () => {
      const deliveries = await createMongoWebhookDeliveries(db);
      assert.equal(await deliveries.insert(delivery('dlv_1', 'job_1', 'key_a')), true);
      assert.equal(await deliveries.insert(delivery('dlv_1', 'job_1', 'key_a')), false, 'same id');
      assert.equal(
        await deliveries.insert(delivery('dlv_other', 'job_1', 'key_a')),
        false,
        'same job and key',
      );
      assert.equal(await deliveries.get('dlv_other'), null);
      await refusesDuplicate(db, 'webhook_deliveries', { _id: 'dlv_raw', job_id: 'job_1', key_id: 'key_a' });
      assert.equal(await deliveries.insert(delivery('dlv_2', 'job_2', 'key_a')), true, 'another job');
    });
  });

  describe('project assets', () => {
    const asset = (id: string, metadata: Record<string, unknown>): AssetRecord => ({
      id,
      project_id: 'vp_1',
      user_id: 'usr_a',
      kind: 'image',
      source: 'agent_generate',
      media_id: `med_${id}`,
      content_type: 'image/png',
      metadata,
      created_at: now,
    });

    it('one per generated job (one_per_job); uploads, which have no job, are not limited', async () => {
      const assets = await createMongoAssets(db);
      await assets.put(asset('va_1', { job_id: 'job_1' }));
      await assets.put(asset('va_1', { job_id: 'job_1' })); // the same asset again: stored once, no error
      await assert.rejects(() => assets.put(asset('va_other', { job_id: 'job_1' })), isDuplicateKeyError);
      assert.equal(await assets.get('va_other'), null);
      await refusesDuplicate(db, 'project_assets', { _id: 'va_raw', metadata: { job_id: 'job_1' } });
      await assets.put(asset('va_up1', { name: 'a.png' }));
      await assets.put(asset('va_up2', { name: 'b.png' }));
      assert.deepEqual((await assets.listByProject('vp_1')).map((stored) => stored.id).sort(), [
        'va_1',
        'va_up1',
        'va_up2',
      ]);
    });
  });

  it('GridFS media: one file per media id (filename_unique) and one chunk per place (files_id_1_n_1)', async () => {
    const store = await createGridFsMediaStore(db);
    const id = newMediaId('png');
    const stored = await store.put(id, Readable.from([Buffer.from('png bytes')]), 'image/png');
    assert.equal(stored.size, 9);
    await assert.rejects(() => store.put(id, Readable.from([Buffer.from('other')]), 'image/png'));
    await refusesDuplicate(db, 'media.files', { filename: id });
    const [chunk] = await db.collection('media.chunks').find({}).toArray();
    await refusesDuplicate(db, 'media.chunks', { files_id: chunk!.files_id, n: chunk!.n, data: 'x' });
  });
});
