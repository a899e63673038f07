// Debits through the user actor, against the same ledger operation called directly: 64 concurrent callers,
// 200 users, a fresh MongoDB-wire server per case. jongodb's writes slow down as a collection grows,
// so every case writes the same number of entries into an empty ledger, and only ratios are judged.
// Cases: direct (no actors), in-process actors, JetStream with 1 node, JetStream with 3 nodes (three actor
// systems, each with its own NATS and MongoDB connections, in this one process: the machine has 2 cores).
// A second part runs direct and JetStream against a simulated ledger whose every change takes a fixed time, in
// parallel: it separates what the partitions' ordering costs from what jongodb's one-at-a-time writes cost.
import { MongoClient } from 'mongodb';
import { systemClock } from '../../src/platform/core/clock.ts';
import { createMongoCreditLedger } from '../../src/credits/mongo-ledger.ts';
import { createMongoUsers } from '../../src/accounts/mongo/users.ts';
import type { CreditLedger } from '../../actors/ports/credit-ledger.ts';
import { setTimeout as delay } from 'node:timers/promises';
import { userActor, userCredits } from '../../actors/user.ts';
import { startMongo } from '../helpers/mongo.ts';
import { startNats } from '../helpers/nats.ts';
import { startTestActorSystem, type TestActorSystem } from '../helpers/actors.ts';
import { percentile, verdict } from '../helpers/bench.ts';

const CALLERS = 64;
const USERS = 200;
const DEBITS = Number(process.env.BENCH_DEBITS ?? 1000);
const WARMUP = 100;
const PARTITIONS = Number(process.env.ACTOR_PARTITIONS ?? 64); // the service's default

type Debit = (userId: string, opId: string) => Promise<void>;

interface Result {
  name: string;
  rate: number;
  p50: number;
  p99: number;
}

const SIMULATED_DEBITS = 3000;

const line = (r: Result) =>
  `${r.name} ${r.rate.toFixed(0)}/s p50 ${r.p50.toFixed(1)} ms p99 ${r.p99.toFixed(1)} ms`;

/** 64 callers share `count` debits over 200 users; latency is measured per call. */
async function load(debit: Debit, count: number, prefix: string) {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      for (let i = next++; i < count; i = next++) {
        const t = performance.now();
        await debit(`usr_${i % USERS}`, `${prefix}${i}`);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { rate: count / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
}

/** One case on a fresh server: users with plenty of credits, a warm-up, then the measured debits. */
async function runCase(name: string, nodes: number | 'direct' | 'in-process'): Promise<Result> {
  const mongo = await startMongo();
  const nats = typeof nodes === 'number' ? await startNats() : undefined;
  const clients: MongoClient[] = [];
  const systems: TestActorSystem[] = [];
  try {
    const ledgerFor = async () => {
      const client = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
      await client.connect();
      clients.push(client);
      return createMongoCreditLedger(client.db('bench'), systemClock);
    };
    const ledger = await ledgerFor();
    const users = await createMongoUsers(clients[0]!.db('bench'));
    for (let u = 0; u < USERS; u++) {
      await users.create({ id: `usr_${u}`, email: `u${u}@bench.test`, credits: 1e9, created_at: new Date() });
    }
    let debit: Debit;
    if (nodes === 'direct') {
      debit = async (userId, opId) => {
        const result = await ledger.apply({ userId, opId, delta: -1, reason: 'debit' });
        if (result.kind !== 'applied') throw new Error(`debit refused: ${result.kind}`);
      };
    } else {
      const ledgers: CreditLedger[] = [ledger];
      for (let n = 1; n < (typeof nodes === 'number' ? nodes : 1); n++) ledgers.push(await ledgerFor());
      for (const nodeLedger of ledgers) {
        systems.push(
          await startTestActorSystem({
            transport: nodes === 'in-process' ? 'in-process' : 'jetstream',
            natsUrl: nats?.url,
            kinds: [{ actor: userActor, ports: { ledger: nodeLedger } }],
            partitions: PARTITIONS,
            ackWaitMs: 30_000,
          }),
        );
      }
      const callers = systems.map((s) => userCredits(s.system));
      let turn = 0;
      debit = async (userId, opId) => {
        const result = await callers[turn++ % callers.length]!.debit(userId, { op_id: opId, amount: 1 });
        if (!result.ok) throw new Error('debit refused');
      };
    }
    await load(debit, WARMUP, 'warm');
    return { name, ...(await load(debit, DEBITS, 'd')) };
  } finally {
    for (const s of systems) await s.close();
    for (const c of clients) await c.close();
    await nats?.stop();
    await mongo.stop();
  }
}

/** A ledger that is never the bottleneck: each change takes `writeMs`, any number at once. */
function simulatedLedger(writeMs: number): CreditLedger {
  const balances = new Map<string, number>();
  return {
    async apply(change) {
      await delay(writeMs);
      const balance = (balances.get(change.userId) ?? 1e9) + change.delta;
      balances.set(change.userId, balance);
      const seq = 0;
      const entry = { id: change.opId, user_id: change.userId, op_id: change.opId, seq, delta: change.delta };
      return {
        kind: 'applied',
        replayed: false,
        entry: { ...entry, balance_after: balance, reason: change.reason, created_at: new Date() },
      };
    },
    entries: async () => [],
  };
}

/** Direct against JetStream (1 node) on the simulated ledger: the cost of ordering by partition alone. */
async function simulatedCase(writeMs: number): Promise<string> {
  const ledger = simulatedLedger(writeMs);
  const direct = await load(
    async (userId, opId) => void (await ledger.apply({ userId, opId, delta: -1, reason: 'debit' })),
    SIMULATED_DEBITS,
    'd',
  );
  const nats = await startNats();
  const node = await startTestActorSystem({
    transport: 'jetstream',
    natsUrl: nats.url,
    kinds: [{ actor: userActor, ports: { ledger } }],
    partitions: PARTITIONS,
    ackWaitMs: 30_000,
  });
  try {
    const credits = userCredits(node.system);
    const debit: Debit = async (userId, opId) =>
      void (await credits.debit(userId, { op_id: opId, amount: 1 }));
    await load(debit, WARMUP, 'warm');
    const actors = await load(debit, SIMULATED_DEBITS, 'j');
    return `${writeMs} ms per change: ${line({ name: 'direct', ...direct })}, ${line({ name: 'jetstream-1', ...actors })}`;
  } finally {
    await node.close();
    await nats.stop();
  }
}

const direct = await runCase('direct', 'direct');
const cases = [
  await runCase('in-process', 'in-process'),
  await runCase('jetstream-1', 1),
  await runCase('jetstream-3', 3),
];
const verdicts = cases.map((r) => {
  const ratio = r.rate / direct.rate;
  const ok = r.name === 'in-process' ? ratio >= 0.9 : ratio >= 0.4 && r.p99 <= direct.p99 + 10;
  const budget =
    r.name === 'in-process'
      ? `${r.name}: >= 90 % of direct`
      : `${r.name}: >= 40 % of direct and p99 <= direct p99 + 10 ms`;
  const figure = `${(ratio * 100).toFixed(0)} % of direct, p99 ${r.p99.toFixed(1)} vs ${direct.p99.toFixed(1)} ms`;
  return `${line(r)} (${(ratio * 100).toFixed(0)} % of direct: ${verdict(ok, budget, figure)})`;
});
console.log(
  `actors (${CALLERS} callers, ${USERS} users, ${DEBITS} debits per case, fresh server per case): ${line(direct)}; ` +
    `${verdicts.join('; ')} [budget: JetStream >= 40 % of direct and p99 <= direct p99 + 10 ms; in-process >= 90 %]`,
);
console.log(
  `actors on a simulated ledger (parallel, fixed time per change; not judged): ` +
    `${await simulatedCase(3)}; ${await simulatedCase(20)}`,
);
