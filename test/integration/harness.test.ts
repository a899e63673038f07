import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { MongoClient } from 'mongodb';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startNats, skipWithoutNats, type TestNats } from '../helpers/nats.ts';

describe('test harness: MongoDB-wire server', () => {
  let mongo: TestMongo;
  before(async () => (mongo = await startMongo()));
  after(async () => mongo?.stop());

  it('starts a fresh replica-set server on a random port that supports transactions', async () => {
    const client = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
    await client.connect();
    try {
      const items = client.db('harness').collection<{ _id: string; n: number }>('items');
      assert.equal(await items.countDocuments(), 0, 'a new server starts empty');
      const session = client.startSession();
      await session.withTransaction(async () => {
        await items.insertOne({ _id: 'a', n: 1 }, { session });
        await items.insertOne({ _id: 'b', n: 2 }, { session });
      });
      await session.endSession();
      assert.equal(await items.countDocuments(), 2);
    } finally {
      await client.close();
    }
  });
});

describe('test harness: nats-server', { skip: skipWithoutNats() }, () => {
  let nats: TestNats;
  before(async () => (nats = await startNats()));
  after(async () => nats?.stop());

  it('starts nats-server with JetStream on a random loopback port, never the shared 4222', async () => {
    assert.match(nats.url, /^nats:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(new URL(nats.url).port, '4222');
    const connection = await connect({ servers: nats.url });
    try {
      const jsm = await jetstreamManager(connection);
      const info = await jsm.getAccountInfo();
      assert.equal(info.streams, 0, 'a new server has no streams');
      const subscription = connection.subscribe('harness.ping', { max: 1 });
      connection.publish('harness.ping', 'pong');
      for await (const message of subscription) assert.equal(message.string(), 'pong');
    } finally {
      await connection.close();
    }
  });
});
