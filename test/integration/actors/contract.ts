// The actor contract, one suite for both transports (in-process.test.ts and jetstream.test.ts run it): per-key
// order, concurrency across keys, answers and errors as the caller sees them, retries, time-outs, and the user
// actor's credit commands against a real MongoDB-wire server.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Type from 'typebox';
import { AppError, ProjectNotFound } from '../../../src/platform/core/errors.ts';
import { ActorUnavailableError, RetryableError } from '../../../src/platform/core/actor-errors.ts';
import { systemClock } from '../../../src/platform/core/clock.ts';
import { createMongoCreditLedger } from '../../../src/credits/mongo-ledger.ts';
import { createMongoUsers } from '../../../src/accounts/mongo/users.ts';
import type { CreditLedger } from '../../../actors/ports/credit-ledger.ts';
import type { UsersRepository } from '../../../src/accounts/ports/users-repository.ts';
import { actorClient } from '../../../actors/runtime/client.ts';
import {
  actorTopic,
  defineActor,
  type ActorSettings,
  type HandlerContext,
} from '../../../actors/runtime/define.ts';
import { createInProcessEventBus } from '../../../actors/runtime/event-bus.ts';
import { partitionOf } from '../../../src/platform/core/actor-partition.ts';
import { userActor, userCredits } from '../../../actors/user.ts';
import { type ActorSystem } from '../../../actors/runtime/system.ts';
import { useMongoClient } from '../../helpers/mongo.ts';
import { startTestActorSystem, type TestActorSystem, type TransportName } from '../../helpers/actors.ts';

const PARTITIONS = 16;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Hooks a probe actor's handlers call, so each test decides what the handler does. */
interface ProbePorts {
  run(key: string, message: Record<string, unknown>, context: HandlerContext<unknown>): Promise<unknown>;
}

let kindCounter = 0;
/** A fresh kind name (streams and consumers outlive a test: a new kind never sees old messages). */
export const freshKind = (name = 'probe') => `${name}_${++kindCounter}_${process.pid}`;

/** A probe actor of a fresh kind: one command, `run`, whose message may hold anything. */
const probeActor = (settings?: Partial<ActorSettings>) =>
  defineActor<ProbePorts>()({
    kind: freshKind(),
    commands: { run: Type.Record(Type.String(), Type.Unknown()) },
    handlers: { run: (context, message) => context.ports.run(context.key, message, context) },
    ...(settings ? { settings } : {}),
  });

/** A kind with a typed command: `set` takes a non-negative integer `n` and an optional `label`. */
const counterActor = (calls: string[]) =>
  defineActor<null>()({
    kind: freshKind('counter'),
    commands: {
      set: Type.Object({
        n: Type.Integer({ minimum: 0 }),
        label: Type.Optional(Type.String({ maxLength: 10, default: 'none' })), // the handler gets the default
      }),
    },
    handlers: {
      set: async (context, message) => {
        calls.push(`${context.key}:${message.n}`);
        return { doubled: message.n * 2, label: message.label, at: new Date(0) };
      },
    },
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
      kinds: [
        {
          actor,
          ports: { run },
          settings: { retry: { attempts: extra.retryAttempts ?? 3, baseDelayMs: 5 } },
        },
      ],
      partitions: PARTITIONS,
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
      let aStarted!: () => void;
      const aRunning = new Promise<void>((resolve) => (aStarted = resolve));
      const { system, kind } = track(
        await start(async (key) => {
          if (key === a) {
            aStarted();
            await aMayFinish; // would never finish if b had to wait for a
          } else releaseA();
          return key;
        }),
      );
      const first = system.ask(kind, a, { type: 'run' });
      await aRunning; // b is sent while a's handler is running
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
      await assert.rejects(system.ask(kind, 'k', { type: 'run' }), (error: unknown) => {
        assert.ok(error instanceof ActorUnavailableError, 'a type the caller can test');
        assert.deepEqual(
          [error.code, error.status, error.toBody()],
          ['unavailable', 503, { error: 'Service temporarily unavailable, try again' }],
        );
        return true;
      });
      assert.equal(calls, 3);
      assert.equal(await system.ask(kind, 'k', { type: 'run', ok: true }), 'next');
    });

    it('retries a RetryableError the handler throws, then answers; once the retries are spent, ActorUnavailableError without its text', async () => {
      const calls = new Map<string, number>();
      const { system, kind } = track(
        await start(async (key, m) => {
          const call = (calls.get(key) ?? 0) + 1;
          calls.set(key, call);
          if (m.always || call < 3) throw new RetryableError('secret hiccup', { cause: new Error('lost') });
          return call;
        }),
      );
      assert.equal(await system.ask(kind, 'flaky', { type: 'run' }), 3);
      await assert.rejects(system.ask(kind, 'down', { type: 'run', always: true }), (error: unknown) => {
        assert.ok(error instanceof ActorUnavailableError);
        assert.doesNotMatch(error.message, /secret/);
        return true;
      });
      assert.equal(calls.get('down'), 3, "the kind's attempts, as for a driver hiccup");
    });

    it('answers an AppError at once, even a 503 one: it is the answer, not a signal to retry', async () => {
      let calls = 0;
      const { system, kind } = track(
        await start(async () => {
          calls++;
          throw new AppError('unavailable', 'The agent is not configured');
        }),
      );
      await assert.rejects(system.ask(kind, 'k', { type: 'run' }), (error: unknown) => {
        assert.ok(error instanceof AppError && !(error instanceof ActorUnavailableError));
        assert.deepEqual([error.code, error.message], ['unavailable', 'The agent is not configured']);
        return true;
      });
      assert.equal(calls, 1);
    });

    it('gives the caller a ProjectNotFound the handler threw as a ProjectNotFound (its type crosses the transport)', async () => {
      const { system, kind } = track(
        await start(async (_key, m) => {
          if (m.typed) throw new ProjectNotFound();
          throw new AppError('not_found', 'Project not found');
        }),
      );
      await assert.rejects(system.ask(kind, 'k', { type: 'run', typed: true }), (error: unknown) => {
        assert.ok(error instanceof ProjectNotFound);
        assert.deepEqual([error.status, error.toBody()], [404, { error: 'Project not found' }]);
        return true;
      });
      await assert.rejects(system.ask(kind, 'k', { type: 'run' }), (error: unknown) => {
        assert.ok(
          error instanceof AppError && !(error instanceof ProjectNotFound),
          'the same text is not the type',
        );
        return true;
      });
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
      await assert.rejects(
        system.ask(kind, 'k', { type: 'run' }, { timeoutMs: 50 }),
        (error: unknown) => error instanceof ActorUnavailableError && error.code === 'unavailable',
      );
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

    it('checks each message against its command schema: a bad one is answered 400 naming the field, unrun', async () => {
      const calls: string[] = [];
      const actor = counterActor(calls);
      const { system } = track(
        await startTestActorSystem({
          transport,
          natsUrl: natsUrl(),
          kinds: [{ actor, ports: null }],
          partitions: PARTITIONS,
        }),
      );
      const counter = actorClient(system, actor);
      // Typed from the definition: the message is the schema's type, the answer the handler's (in JSON).
      const answer: { doubled: number; label: string | undefined; at: string } = await counter.set('k', {
        n: 21,
      });
      assert.deepEqual(
        answer,
        { doubled: 42, label: 'none', at: '1970-01-01T00:00:00.000Z' },
        'default applied',
      );
      assert.deepEqual(await counter.set('k', { n: 0, label: 'zero' }), {
        doubled: 0,
        label: 'zero',
        at: '1970-01-01T00:00:00.000Z',
      });
      for (const [message, expected] of [
        [{ type: 'set' }, 'n is required'],
        [{ type: 'set', n: 'seven' }, 'n must be an integer'],
        [{ type: 'set', n: 1.5 }, 'n must be an integer'],
        [{ type: 'set', n: -1 }, 'n must be an integer at least 0'],
        [{ type: 'set', n: 1, label: 7 }, 'label must be a string'],
        [{ type: 'set', n: 1, label: 'much too long' }, 'label must be at most 10 characters'],
      ] as const) {
        await assert.rejects(system.ask(actor.kind, 'k', message), (error: unknown) => {
          assert.ok(error instanceof AppError);
          assert.equal(error.code, 'bad_request');
          assert.equal(error.message, expected, JSON.stringify(message));
          return true;
        });
      }
      assert.deepEqual(calls, ['k:21', 'k:0'], 'no handler ran for a bad message');
    });

    it("runs each kind with its own settings: a definition's, overridden per kind at system creation", async () => {
      const slowRun: ProbePorts['run'] = async () => {
        await sleep(300);
        return 'late but done';
      };
      const fast = probeActor({ askTimeoutMs: 50 });
      const overridden = probeActor({ askTimeoutMs: 50 });
      let flaky = 0;
      const twoTries = probeActor({ retry: { attempts: 2, baseDelayMs: 1 } });
      const { system } = track(
        await startTestActorSystem({
          transport,
          natsUrl: natsUrl(),
          kinds: [
            { actor: fast, ports: { run: slowRun } },
            { actor: overridden, ports: { run: slowRun }, settings: { askTimeoutMs: 5000 } },
            {
              actor: twoTries,
              ports: {
                run: async () => {
                  flaky++;
                  throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
                },
              },
            },
          ],
          partitions: PARTITIONS,
        }),
      );
      assert.equal(system.settingsOf(fast.kind).askTimeoutMs, 50);
      assert.equal(system.settingsOf(overridden.kind).askTimeoutMs, 5000);
      assert.deepEqual(system.settingsOf(twoTries.kind).retry, { attempts: 2, baseDelayMs: 1 });
      assert.equal(system.settingsOf(twoTries.kind).askTimeoutMs, 10_000, 'defaults fill the rest');
      await assert.rejects(system.ask(fast.kind, 'k', { type: 'run' }), { code: 'unavailable' });
      assert.equal(await system.ask(overridden.kind, 'k', { type: 'run' }), 'late but done');
      assert.equal(
        await system.ask(fast.kind, 'k', { type: 'run' }, { timeoutMs: 5000 }),
        'late but done',
        "a caller's time-out wins over the kind's",
      );
      await assert.rejects(system.ask(twoTries.kind, 'k', { type: 'run' }), { code: 'unavailable' });
      assert.equal(flaky, 2, "the kind's own retry attempts");
    });

    it('publishes the events a handler emits once it succeeded, in order; a failed run publishes none', async () => {
      const bus = createInProcessEventBus();
      const actor = probeActor({ retry: { attempts: 3, baseDelayMs: 1 } });
      const attempts = new Map<string, number>();
      const { system } = track(
        await startTestActorSystem({
          transport,
          natsUrl: natsUrl(),
          events: bus,
          kinds: [
            {
              actor,
              ports: {
                async run(key, message, context) {
                  const attempt = (attempts.get(key) ?? 0) + 1;
                  attempts.set(key, attempt);
                  context.emit({ seq: 1, attempt, at: new Date(0) });
                  context.emit({ seq: 2, attempt });
                  if ((message.fail === 'transient' && attempt < 3) || message.fail === 'always') {
                    throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
                  }
                  if (message.fail === 'permanent') throw new AppError('conflict', 'No');
                  if (message.fail === 'bug') throw new TypeError('oops');
                  return attempt;
                },
              },
            },
          ],
          partitions: PARTITIONS,
        }),
      );
      const heard = new Map<string, unknown[]>();
      const listen = (key: string) => {
        heard.set(key, []);
        return bus.subscribe(actorTopic(actor.kind, key), (event) => heard.get(key)!.push(event));
      };
      const stopOk = listen('ok');
      listen('retried');
      listen('refused');
      listen('bug');
      listen('gone');

      assert.equal(await system.ask(actor.kind, 'ok', { type: 'run' }), 1);
      assert.equal(await system.ask(actor.kind, 'retried', { type: 'run', fail: 'transient' }), 3);
      await assert.rejects(system.ask(actor.kind, 'refused', { type: 'run', fail: 'permanent' }), {
        code: 'conflict',
      });
      await assert.rejects(system.ask(actor.kind, 'bug', { type: 'run', fail: 'bug' }), { code: 'internal' });
      await assert.rejects(system.ask(actor.kind, 'gone', { type: 'run', fail: 'always' }), {
        code: 'unavailable',
      });
      await sleep(20); // a wait for nothing: no listener may hear anything late either
      assert.deepEqual(heard.get('ok'), [
        { seq: 1, attempt: 1, at: '1970-01-01T00:00:00.000Z' },
        { seq: 2, attempt: 1 },
      ]);
      assert.deepEqual(
        heard.get('retried'),
        [
          { seq: 1, attempt: 3, at: '1970-01-01T00:00:00.000Z' },
          { seq: 2, attempt: 3 },
        ],
        'only the run that succeeded',
      );
      assert.deepEqual(heard.get('refused'), []);
      assert.deepEqual(heard.get('bug'), []);
      assert.deepEqual(heard.get('gone'), [], 'retries exhausted: none of the three runs published');
      assert.equal(attempts.get('gone'), 3);

      stopOk();
      assert.equal(await system.ask(actor.kind, 'ok', { type: 'run' }), 2);
      assert.equal(heard.get('ok')!.length, 2, 'an unsubscribed listener hears nothing more');
    });

    it('answers 500 when a handler emits without an event bus', async () => {
      const { system, kind } = track(
        await start(async (_key, _message, context) => {
          context.emit({ hello: true });
          return 'unreachable';
        }),
      );
      await assert.rejects(system.ask(kind, 'k', { type: 'run' }), { code: 'internal' });
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
        kinds: [{ actor: userActor, ports: { ledger } }],
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
      assert.equal((await credits.charge_turn(id, { op_id: 't1', amount: 10 })).ok, true);
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
