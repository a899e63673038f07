import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Db } from 'mongodb';
import { useMongoClient } from '../helpers/mongo.ts';
import type { AuditEntry } from '../../src/platform/audit/audit-sink.ts';
import { AUDIT_COLLECTION, createMongoAuditSink } from '../../src/platform/audit/mongo-sink.ts';

const mongo = useMongoClient();
let dbCounter = 0;

/** A database of its own per test, so collections stay small and tests independent. */
function freshDb(): Db {
  return mongo.client.db(`mf_audit_${++dbCounter}`);
}

function entry(n: number, fields: Partial<AuditEntry> = {}): AuditEntry {
  return {
    kind: 'request',
    ts: new Date(Date.UTC(2026, 0, 1) + n * 1000 + 123).toISOString(),
    key_id: 'key_a',
    user_id: 'usr_1',
    request_id: `req_${n}`,
    method: 'POST',
    path: '/api/v1/videos',
    status: 201,
    duration_ms: 12.5,
    ip: '127.0.0.1',
    user_agent: null,
    ...fields,
  };
}

describe('mongo audit sink', () => {
  it('stores batches and reads them back newest first with ts as the same ISO string and no _id', async () => {
    const sink = createMongoAuditSink(freshDb());
    const all = Array.from({ length: 12 }, (_, n) => entry(n));
    // Written out of time order: reads order by ts, not by insertion.
    await sink.write(all.slice(6));
    await sink.write(all.slice(0, 6));
    const read = await sink.query({ limit: 100 });
    assert.deepEqual(read, [...all].reverse());
    for (const e of read) assert.equal(Object.hasOwn(e, '_id'), false);
    assert.equal(typeof read[0]!.ts, 'string');
    await sink.close();
  });

  it('stores ts as a BSON date', async () => {
    const db = freshDb();
    const sink = createMongoAuditSink(db);
    await sink.write([entry(1)]);
    const raw = await db.collection(AUDIT_COLLECTION).findOne({});
    assert.ok(raw?.ts instanceof Date);
    assert.equal(raw.ts.toISOString(), entry(1).ts);
  });

  it('filters by key_id and kind and applies the limit', async () => {
    const sink = createMongoAuditSink(freshDb());
    const all = Array.from({ length: 20 }, (_, n) =>
      entry(n, {
        key_id: n % 4 === 0 ? null : n % 2 === 0 ? 'key_b' : 'key_a',
        kind: n % 3 === 0 ? 'webhook_attempt' : 'request',
      }),
    );
    await sink.write(all);
    const newestFirst = [...all].reverse();
    assert.deepEqual(await sink.query({ limit: 3 }), newestFirst.slice(0, 3));
    assert.deepEqual(
      await sink.query({ limit: 100, key_id: 'key_b' }),
      newestFirst.filter((e) => e.key_id === 'key_b'),
    );
    assert.deepEqual(
      await sink.query({ limit: 2, kind: 'webhook_attempt' }),
      newestFirst.filter((e) => e.kind === 'webhook_attempt').slice(0, 2),
    );
    assert.deepEqual(
      await sink.query({ limit: 100, kind: 'request', key_id: 'key_a' }),
      newestFirst.filter((e) => e.kind === 'request' && e.key_id === 'key_a'),
    );
    assert.deepEqual(await sink.query({ limit: 10, key_id: 'key_none' }), []);
    assert.deepEqual(await sink.query({ limit: 0 }), []);
  });

  it('orders entries with the same ts newest insertion first', async () => {
    const sink = createMongoAuditSink(freshDb());
    const ts = '2026-01-01T00:00:00.000Z';
    await sink.write([entry(1, { ts }), entry(2, { ts })]);
    await sink.write([entry(3, { ts })]);
    assert.deepEqual(
      (await sink.query({ limit: 10 })).map((e) => e.request_id),
      ['req_3', 'req_2', 'req_1'],
    );
  });

  it('leaves the caller’s entries untouched', async () => {
    const sink = createMongoAuditSink(freshDb());
    const batch = [entry(1)];
    await sink.write(batch);
    assert.deepEqual(batch, [entry(1)]);
  });

  it('creates its indexes idempotently, from any number of sink instances', async () => {
    const db = freshDb();
    await createMongoAuditSink(db).write([entry(1)]);
    await createMongoAuditSink(db).write([entry(2)]);
    const indexes = await db.collection(AUDIT_COLLECTION).listIndexes().toArray();
    const keys = indexes.map((index) => JSON.stringify(index.key));
    for (const key of [{ ts: -1 }, { key_id: 1, ts: -1 }, { kind: 1, ts: -1 }]) {
      assert.ok(
        keys.includes(JSON.stringify(key)),
        `index ${JSON.stringify(key)} exists (have ${keys.join(', ')})`,
      );
    }
    assert.equal((await createMongoAuditSink(db).query({ limit: 10 })).length, 2);
  });

  it('does not store twice the part of a batch that a failed ordered insert already stored', async () => {
    const db = freshDb();
    const sink = createMongoAuditSink(db);
    const collection = db.collection(AUDIT_COLLECTION);
    await collection.createIndex({ request_id: 1 }, { unique: true });
    await collection.insertOne({ request_id: 'req_2', blocker: true });
    const batch = [entry(1), entry(2), entry(3)];
    // MongoDB stores req_1 before stopping at req_2; jongodb stores none of the batch. Either way the
    // unique index makes a retry that re-inserts req_1 fail, so a passing retry proves it was skipped.
    await assert.rejects(sink.write(batch), /duplicate key/);
    await collection.deleteOne({ blocker: true });
    // The retry of the same batch, as the audit log makes it.
    await sink.write(batch);
    assert.deepEqual(
      (await sink.query({ limit: 10 })).map((e) => e.request_id),
      ['req_3', 'req_2', 'req_1'],
    );
  });

  it('leaves the client open on close', async () => {
    const db = freshDb();
    const sink = createMongoAuditSink(db);
    await sink.write([entry(1)]);
    await sink.close();
    assert.equal(await db.collection(AUDIT_COLLECTION).countDocuments({}), 1);
  });
});
