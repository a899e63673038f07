// The actor contract, one suite for both transports (in-process.test.ts and jetstream.test.ts run it): per-key
// order, concurrency across keys, answers and errors as the caller sees them, retries, time-outs, and the user
// actor's credit commands against a real MongoDB-wire server.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../../src/domain/errors.ts';
import { systemClock } from '../../../src/ports/clock.ts';
import { createMongoCreditLedger } from '../../../src/adapters/mongo/credit-ledger.ts';
import { createMongoUsers } from '../../../src/adapters/mongo/users.ts';
import type { CreditLedger } from '../../../src/ports/credit-ledger.ts';
import type { UsersRepository } from '../../../src/ports/users-repository.ts';
import { defineActor, partitionOf, userActor, userCredits, type ActorSystem } from '../../../actors/index.ts';
import { useMongoClient } from '../../helpers/mongo.ts';
import { startTestActorSystem, type TestActorSystem, type TransportName } from '../../helpers/actors.ts';

const PARTITIONS = 16;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Hooks a probe actor's handlers call, so each test decides what the handler does. */
interface ProbePorts {
  run(key: string, message: Record<string, unknown>): Promise<unknown>;
}

let kindCounter = 0;
/** A probe actor of a fresh kind (streams and consumers outlive a test: a new kind never sees old messages). */
const probeActor = () =>
  defineActor<ProbePorts>({
    kind: `probe_${++kindCounter}_${process.pid}`,
    handlers: { run: (context, message) => context.ports.run(context.key, message) },
  });

/** Two keys that land on different partitions (so JetStream can run them at the same time). */
function keysOnDifferentPartitions(): [string, string] {
  const first = 'key-a';
  for (let i = 0; ; i++) {
    const other = `key-b${i}`;
    if (partitionOf(other, PARTITIONS) !== partitionOf(first, PARTITIONS)) return [first, other];
  }
}

export function actorContract(transport: TransportName, natsUrl: () => string | undefined): void {
  async function start(run: ProbePorts['run'], extra: { retryAttempts?: number } = {}) {
    const actor = probeActor();
    const started = await startTestActorSystem({
      transport,
      natsUrl: natsUrl(),
      actors: [actor],
      ports: { run },
      partitions: PARTITIONS,
      retry: { attempts: extra.retryAttempts ?? 3, baseDelayMs: 5 },
    });
    return { ...started, kind: actor.kind };
  }

  describe(`actor runtime contract (${transport})`, () => {
    const systems: TestActorSystem[] = [];
    after(async () => {
      for (const s of systems) await s.close();
    });
    const track = <T extends TestActorSystem>(s: T) => (systems.push(s), s);

    it('answers an ask with the handler result, as JSON (dates become ISO strings)', async () => {
      const { system, kind } = track(
        await start(async (key, m) => ({ key, echo: m.value, at: new Date(0) })),
      );
      const answer = await system.ask(kind, 'k1', { type: 'run', value: [1, 'two'] });
      assert.deepEqual(answer, { key: 'k1', echo: [1, 'two'], at: '1970-01-01T00:00:00.000Z' });
    });

    it('handles the messages of one key one at a time, in the order they were sent', async () => {
      const log: string[] = [];
      let running = 0;
      const { system, kind } = track(
        await start(async (_key, m) => {
          running++;
          assert.equal(running, 1, 'two messages of one key overlapped');
          log.push(`start ${m.n}`);
          await sleep(Number(m.n) % 3);
          log.push(`end ${m.n}`);
          running--;
          return m.n;
        }),
      );
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, n) => system.ask(kind, 'same-key', { type: 'run', n })),
      );
      assert.deepEqual(
        answers,
        Array.from({ length: 40 }, (_, n) => n),
      );
      assert.deepEqual(log, Array.from({ length: 40 }, (_, n) => [`start ${n}`, `end ${n}`]).flat());
    });

    it('runs different keys concurrently', async () => {
      const [a, b] = keysOnDifferentPartitions();
      let releaseA!: () => void;
      const aMayFinish = new Promise<void>((resolve) => (releaseA = resolve));
      const { system, kind } = track(
        await start(async (key) => {
          if (key === a)
            await aMayFinish; // would never finish if b had to wait for a
          else releaseA();
          return key;
        }),
      );
      const first = system.ask(kind, a, { type: 'run' });
      await sleep(50);
      assert.equal(await system.ask(kind, b, { type: 'run' }), b);
      assert.equal(await first, a);
    });

    it("gives the caller the handler's AppError, code, message and fields; the key's next message still runs", async () => {
      const { system, kind } = track(
        await start(async (_key, m) => {
          if (m.fail)
            throw new AppError('insufficient_credits', 'Insufficient credits', { credits_required: 5 });
          return 'fine';
        }),
      );
      await assert.rejects(system.ask(kind, 'k', { type: 'run', fail: true }), (error: unknown) => {
        assert.ok(error instanceof AppError);
        assert.equal(error.code, 'insufficient_credits');
        assert.equal(error.message, 'Insufficient credits');
        assert.deepEqual(error.details, { credits_required: 5 });
        return true;
      });
      assert.equal(await system.ask(kind, 'k', { type: 'run' }), 'fine');
    });

    it('retries a transient failure inside the handler, with back-off, then answers', async () => {
      let calls = 0;
      const { system, kind } = track(
        await start(async () => {
          if (++calls < 3) throw Object.assign(new Error('socket closed'), { name: 'MongoNetworkError' });
          return calls;
        }),
      );
      assert.equal(await system.ask(kind, 'k', { type: 'run' }), 3);
    });

    it('answers 503 unavailable once transient retries are exhausted, and moves on', async () => {
      let calls = 0;
      const { system, kind } = track(
        await start(
          async (_key, m) => {
            if (m.ok) return 'next';
            calls++;
            throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
          },
          { retryAttempts: 3 },
        ),
      );
      await assert.rejects(system.ask(kind, 'k', { type: 'run' }), { code: 'unavailable' });
      assert.equal(calls, 3);
      assert.equal(await system.ask(kind, 'k', { type: 'run', ok: true }), 'next');
    });

    it('does not retry a bug: one call, a 500 internal error that hides the cause', async () => {
      let calls = 0;
      const { system, kind } = track(
        await start(async () => {
          calls++;
          throw new TypeError('secret detail');
        }),
      );
      await assert.rejects(system.ask(kind, 'k', { type: 'run' }), (error: unknown) => {
        assert.ok(error instanceof AppError);
        assert.equal(error.code, 'internal');
        assert.doesNotMatch(error.message, /secret/);
        return true;
      });
      assert.equal(calls, 1);
    });

    it('refuses an unknown command without calling any handler', async () => {
      const { system, kind } = track(await start(async () => assert.fail('no handler may run')));
      await assert.rejects(system.ask(kind, 'k', { type: 'nope' }), { code: 'bad_request' });
      await assert.rejects(system.ask(kind, 'k', { type: 'toString' }), { code: 'bad_request' });
    });

    it('times out an ask with 503 unavailable; the message is still handled afterwards', async () => {
      let handled = 0;
      const { system, kind } = track(
        await start(async () => {
          await sleep(300);
          return ++handled;
        }),
      );
      await assert.rejects(system.ask(kind, 'k', { type: 'run' }, { timeoutMs: 50 }), {
        code: 'unavailable',
      });
      assert.equal(await system.ask(kind, 'k', { type: 'run' }), 2, 'the timed-out message ran first');
    });

    it('delivers tells in order with the asks of the same key', async () => {
      const seen: number[] = [];
      const { system, kind } = track(
        await start(async (_key, m) => {
          seen.push(Number(m.n));
          return seen.length;
        }),
      );
      for (let n = 0; n < 5; n++) await system.tell(kind, 'k', { type: 'run', n });
      assert.equal(await system.ask(kind, 'k', { type: 'run', n: 5 }), 6);
      assert.deepEqual(seen, [0, 1, 2, 3, 4, 5]);
    });
  });

  describe(`user actor: credit commands (${transport})`, () => {
    const mongo = useMongoClient();
    let users: UsersRepository;
    let ledger: CreditLedger;
    let started: TestActorSystem;
    let system: ActorSystem;
    let userNo = 0;

    before(async () => {
      const db = mongo.client.db('contract');
      users = await createMongoUsers(db);
      ledger = await createMongoCreditLedger(db, systemClock);
      started = await startTestActorSystem({
        transport,
        natsUrl: natsUrl(),
        actors: [userActor],
        ports: { ledger },
        partitions: PARTITIONS,
      });
      system = started.system;
    });
    after(async () => {
      await started?.close();
    });

    async function newUser(credits: number): Promise<string> {
      const id = `usr_${transport}_${++userNo}`;
      await users.create({ id, email: `${id}@example.com`, credits: 0, created_at: new Date() });
      if (credits > 0) await userCredits(system).grant(id, { op_id: `open-${id}`, amount: credits });
      return id;
    }

    it('debits, refunds, grants and charges turns, each recorded with its balance_after', async () => {
      const credits = userCredits(system);
      const id = await newUser(1000);
      const debit = await credits.debit(id, { op_id: 'd1', amount: 227, reason: 'video', job_id: 'job_1' });
      assert.equal(debit.ok, true);
      assert.ok(debit.ok);
      assert.equal(debit.credits_remaining, 773);
      assert.equal(debit.entry.job_id, 'job_1');
      assert.equal(debit.entry.delta, -227);
      assert.equal(typeof debit.entry.created_at, 'string');
      assert.equal((await credits.refund(id, { op_id: 'r1', amount: 227 })).ok, true);
      assert.equal((await credits.chargeTurn(id, { op_id: 't1', amount: 10 })).ok, true);
      const grant = await credits.grant(id, { op_id: 'g1', amount: -90 });
      assert.ok(grant.ok);
      assert.equal(grant.credits_remaining, 900);
      const entries = (await ledger.entries(id, 100)).reverse();
      assert.deepEqual(
        entries.map((e) => [e.delta, e.balance_after, e.reason]),
        [
          [1000, 1000, 'grant'],
          [-227, 773, 'video'],
          [227, 1000, 'refund'],
          [-10, 990, 'agent_turn'],
          [-90, 900, 'grant'],
        ],
      );
      assert.equal((await users.get(id))!.credits, 900);
    });

    it('answers a repeated op_id with the first result and changes nothing the second time', async () => {
      const credits = userCredits(system);
      const id = await newUser(500);
      const first = await credits.debit(id, { op_id: 'job:1:debit', amount: 100 });
      const again = await credits.debit(id, { op_id: 'job:1:debit', amount: 100 });
      assert.ok(first.ok && again.ok);
      assert.equal(first.replayed, false);
      assert.equal(again.replayed, true);
      assert.equal(again.entry.id, first.entry.id);
      assert.equal((await users.get(id))!.credits, 400);
      assert.equal((await ledger.entries(id, 100)).length, 2);
    });

    it('refuses a debit that does not fit with credits_required and credits_remaining, changing nothing', async () => {
      const credits = userCredits(system);
      const id = await newUser(100);
      assert.deepEqual(await credits.debit(id, { op_id: 'big', amount: 227 }), {
        ok: false,
        credits_required: 227,
        credits_remaining: 100,
      });
      assert.deepEqual(await credits.grant(id, { op_id: 'neg', amount: -101 }), {
        ok: false,
        credits_required: 101,
        credits_remaining: 100,
      });
      assert.equal((await users.get(id))!.credits, 100);
      assert.equal((await ledger.entries(id, 100)).length, 1);
    });

    it('answers 404 for an unknown user and 400 for malformed commands', async () => {
      const credits = userCredits(system);
      await assert.rejects(credits.debit('usr_missing', { op_id: 'x', amount: 1 }), {
        code: 'not_found',
        message: 'User not found',
      });
      const id = await newUser(10);
      await assert.rejects(credits.debit(id, { op_id: 'x', amount: -5 }), {
        message: 'amount must be a positive integer',
      });
      await assert.rejects(credits.grant(id, { op_id: 'x', amount: 0 }), {
        message: 'amount must be a non-zero integer',
      });
      await assert.rejects(credits.refund(id, { op_id: 'x', amount: 1.5 }), { code: 'bad_request' });
      await assert.rejects(credits.debit(id, { op_id: '', amount: 1 }), { code: 'bad_request' });
      await assert.rejects(system.ask('user', id, { type: 'debit', amount: 1 }), { code: 'bad_request' });
      assert.equal((await users.get(id))!.credits, 10);
    });

    it('keeps every ledger gap-free and never negative under concurrent interleaved debits and refunds', async () => {
      const credits = userCredits(system);
      const ids = await Promise.all(Array.from({ length: 5 }, () => newUser(300)));
      const outcomes = await Promise.all(
        Array.from({ length: 200 }, (_, n) => {
          const id = ids[n % ids.length]!;
          const amount = 1 + ((n * 37) % 90);
          return n % 3 === 2
            ? credits.refund(id, { op_id: `c${n}`, amount })
            : credits.debit(id, { op_id: `c${n}`, amount });
        }),
      );
      for (const id of ids) {
        const entries = (await ledger.entries(id, 1000)).reverse();
        let balance = 0;
        for (const entry of entries) {
          assert.equal(
            entry.balance_after,
            balance + entry.delta,
            `gap in the ledger chain: ${JSON.stringify(entries.map((e) => [e.seq, e.delta, e.balance_after]))}`,
          );
          assert.ok(entry.balance_after >= 0);
          balance = entry.balance_after;
        }
        assert.equal((await users.get(id))!.credits, balance);
      }
      const refused = outcomes.filter((o) => !o.ok).length;
      const applied = ids.length + 200 - refused;
      const total = (await Promise.all(ids.map((id) => ledger.entries(id, 1000)))).flat().length;
      assert.equal(total, applied, 'exactly the applied commands are in the ledger');
    });
  });
}
