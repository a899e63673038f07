// Restarting the whole nats-server while the system is idle: stored actor messages, streams and durable
// consumers survive (file storage), the node reconnects by itself, and work resumes where it stopped.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { systemClock } from '../../../src/platform/core/clock.ts';
import { ActorUnavailableError } from '../../../src/platform/core/actor-errors.ts';
import { createMongoCreditLedger } from '../../../src/credits/mongo-ledger.ts';
import { createMongoUsers } from '../../../src/accounts/mongo/users.ts';
import Type from 'typebox';
import { defineActor } from '../../../actors/runtime/define.ts';
import { userActor, userCredits } from '../../../actors/user.ts';
import { startMongo, type TestMongo } from '../../helpers/mongo.ts';
import { startNats, skipWithoutNats, type TestNats } from '../../helpers/nats.ts';
import { startTestActorSystem, type TestActorSystem } from '../../helpers/actors.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('actors across a nats-server restart', { skip: skipWithoutNats() }, () => {
  let nats: TestNats;
  let mongo: TestMongo;
  let client: MongoClient;
  const systems: TestActorSystem[] = [];

  before(async () => {
    [nats, mongo] = await Promise.all([startNats(), startMongo()]);
    client = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
    await client.connect();
  });
  after(async () => {
    for (const s of systems) await s.close();
    await client?.close();
    await Promise.all([nats?.stop(), mongo?.stop()]);
  });

  it('loses nothing and resumes on reconnect', async () => {
    const db = client.db('restart');
    const ledger = await createMongoCreditLedger(db, systemClock);
    await (
      await createMongoUsers(db)
    ).create({ id: 'usr_r', email: 'r@x.test', credits: 0, created_at: new Date() });
    const node = await startTestActorSystem({
      transport: 'jetstream',
      natsUrl: nats.url,
      kinds: [{ actor: userActor, ports: { ledger } }],
    });
    systems.push(node);
    const credits = userCredits(node.system);
    await credits.grant('usr_r', { op_id: 'open', amount: 1000 });
    for (let n = 0; n < 20; n++)
      assert.ok((await credits.debit('usr_r', { op_id: `before${n}`, amount: 1 })).ok);

    // Messages for an actor kind no node handles yet: they wait in the stream, across the restart.
    const handled: number[] = [];
    const late = defineActor<null>()({
      kind: 'late',
      commands: { note: Type.Object({ n: Type.Integer() }) },
      handlers: { note: async (_context, message) => void handled.push(message.n) },
    });
    for (let n = 0; n < 5; n++) await node.system.tell('late', 'k', { type: 'note', n });

    await nats.restart();

    // The node reconnects on its own; asks fail fast (503) until it has.
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        await credits.debit('usr_r', { op_id: 'first-after', amount: 1 });
        break;
      } catch (error) {
        assert.ok(error instanceof ActorUnavailableError, String(error));
        assert.ok(Date.now() < deadline, 'did not resume within 20 s of the restart');
        await sleep(200);
      }
    }
    for (let n = 0; n < 20; n++)
      assert.ok((await credits.debit('usr_r', { op_id: `after${n}`, amount: 1 })).ok);

    const lateNode = await startTestActorSystem({
      transport: 'jetstream',
      natsUrl: nats.url,
      kinds: [{ actor: late, ports: null }],
    });
    systems.push(lateNode);
    while (handled.length < 5 && Date.now() < deadline + 10_000) await sleep(50);
    assert.deepEqual(handled, [0, 1, 2, 3, 4], 'messages stored before the restart were handled, in order');

    const entries = (await ledger.entries('usr_r', 100)).reverse();
    assert.equal(entries.length, 1 + 20 + 1 + 20);
    entries.forEach((e, i) => assert.equal(e.seq, i + 1));
    assert.equal(entries.at(-1)!.balance_after, 1000 - 41);
  });
});
