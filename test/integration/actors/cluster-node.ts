// One node of the multi-process actor test (cluster.test.ts): a JetStream actor system that handles user-actor
// messages like every other node and sends its own plan of credit commands, one lane per user (each lane
// waits for each answer before the next command, so a node's commands to one user have a defined order).
// It prints one line per answer, so the parent knows exactly what was acknowledged before any `kill -9`.
import { MongoClient } from 'mongodb';
import { systemClock } from '../../../src/platform/core/clock.ts';
import { createMongoCreditLedger } from '../../../src/credits/mongo-ledger.ts';
import { userActor, userCredits, type CreditResult } from '../../../actors/user.ts';
import { startTestActorSystem } from '../../helpers/actors.ts';

/** `[userId, 'debit' | 'refund', amount, opId]` */
export type PlannedCommand = [string, 'debit' | 'refund', number, string];

const { natsUrl, mongoUrl, db, plan, ackWaitMs } = JSON.parse(process.argv[2]!) as {
  natsUrl: string;
  mongoUrl: string;
  db: string;
  plan: PlannedCommand[];
  ackWaitMs: number;
};

const client = new MongoClient(mongoUrl, { serverMonitoringMode: 'poll' });
await client.connect();
const ledger = await createMongoCreditLedger(client.db(db), systemClock);
const node = await startTestActorSystem({
  transport: 'jetstream',
  natsUrl,
  // A command waits behind the others of its partition for as long as jongodb's inserts take, and they slow
  // down as the ledger grows: on a slower 2-core machine past the default 10 s. The test is about exactness, so a
  // slow insert must not become a time-out (as DONE_WITHIN_MS in cluster.test.ts allows for the whole run).
  kinds: [{ actor: userActor, ports: { ledger }, settings: { askTimeoutMs: 120_000 } }],
  partitions: 16,
  ackWaitMs,
});
const credits = userCredits(node.system);
console.log('ready');
await new Promise((resolve) => process.stdin.once('data', resolve)); // the parent says go
process.stdin.pause();

const lanes = new Map<string, PlannedCommand[]>();
for (const command of plan) lanes.set(command[0], [...(lanes.get(command[0]) ?? []), command]);
await Promise.all(
  [...lanes.values()].map(async (lane) => {
    for (const [userId, type, amount, opId] of lane) {
      try {
        const result: CreditResult = await credits[type](userId, { op_id: opId, amount });
        console.log(result.ok ? `ack ${opId} applied ${result.entry.seq}` : `ack ${opId} rejected`);
      } catch (error) {
        console.log(`fail ${opId} ${(error as { code?: string }).code ?? String(error)}`);
      }
    }
  }),
);
console.log('done');
// Keep handling other nodes' messages until the parent stops this node.
process.once('SIGTERM', () => {
  void node.close().then(() => client.close().then(() => process.exit(0)));
});
