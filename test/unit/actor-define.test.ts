import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Type from 'typebox';
import { actorClient } from '../../actors/runtime/client.ts';
import { createInProcessEventBus } from '../../actors/runtime/event-bus.ts';
import { defineActor, resolveSettings, DEFAULT_ACTOR_SETTINGS } from '../../actors/runtime/define.ts';
import { type ActorSystem } from '../../actors/runtime/system.ts';

const counter = defineActor<null>()({
  kind: 'counter',
  commands: { add: Type.Object({ n: Type.Integer() }) },
  handlers: { add: async (_context, message) => message.n + 1 },
  settings: { askTimeoutMs: 500, retry: { attempts: 2, baseDelayMs: 1 } },
});

describe('actor definitions', () => {
  it('refuses a kind that is not a lower-case subject token, and handlers without commands or the reverse', () => {
    const define = defineActor<null>();
    assert.throws(
      () => define({ kind: 'Project', commands: {}, handlers: {} }),
      /NATS subject token in lower case: Project/,
    );
    assert.throws(
      () => define({ kind: 'a.b', commands: {}, handlers: {} }),
      /NATS subject token in lower case: a\.b/,
    );
    const loose = define as (definition: object) => unknown; // what the types forbid, checked at run time too
    assert.throws(
      () => loose({ kind: 'x', commands: {}, handlers: { stray: async () => null } }),
      /handler "stray" has no command schema/,
    );
    assert.throws(
      () => loose({ kind: 'x', commands: { lonely: Type.Object({}) }, handlers: {} }),
      /command "lonely" has no handler/,
    );
    assert.throws(
      () => define({ kind: 'x', commands: {}, handlers: {}, settings: { askTimeoutMs: 0 } }),
      /askTimeoutMs and ackWaitMs must be positive/,
    );
    assert.throws(
      () =>
        define({
          kind: 'x',
          commands: {},
          handlers: {},
          settings: { retry: { attempts: 0, baseDelayMs: 1 } },
        }),
      /retry needs attempts >= 1/,
    );
  });

  it("resolves settings: defaults, then the definition's, then the system's per-kind overrides", () => {
    assert.deepEqual(resolveSettings(counter), {
      askTimeoutMs: 500,
      retry: { attempts: 2, baseDelayMs: 1 },
      ackWaitMs: DEFAULT_ACTOR_SETTINGS.ackWaitMs,
    });
    assert.deepEqual(resolveSettings(counter, { ackWaitMs: 5000, askTimeoutMs: 800 }), {
      askTimeoutMs: 800,
      retry: { attempts: 2, baseDelayMs: 1 },
      ackWaitMs: 5000,
    });
    assert.throws(() => resolveSettings(counter, { ackWaitMs: -1 }), /must be positive/);
  });

  it("derives a client whose methods ask the kind's commands by name", async () => {
    const asked: unknown[] = [];
    const system = {
      ask: async (...args: unknown[]) => (asked.push(args), 42),
    } as unknown as ActorSystem;
    const client = actorClient(system, counter);
    const answer: number = await client.add('key-1', { n: 41 }, { timeoutMs: 100 });
    assert.equal(answer, 42);
    assert.deepEqual(asked, [['counter', 'key-1', { n: 41, type: 'add' }, { timeoutMs: 100 }]]);
    assert.deepEqual(Object.keys(client), ['add']);
  });
});

describe('in-process event bus', () => {
  it('hands each subscriber of a topic its own JSON copy, in publish order; other topics hear nothing', async () => {
    const bus = createInProcessEventBus();
    const a: unknown[] = [];
    const b: unknown[] = [];
    const other: unknown[] = [];
    bus.subscribe('project.p1', (event) => a.push(event));
    bus.subscribe('project.p1', (event, topic) => b.push([topic, event]));
    bus.subscribe('project.p2', (event) => other.push(event));
    const event = { seq: 1, at: new Date(0) };
    await bus.publish('project.p1', event);
    await bus.publish('project.p1', { seq: 2 });
    assert.deepEqual(a, [{ seq: 1, at: '1970-01-01T00:00:00.000Z' }, { seq: 2 }]);
    assert.notEqual(a[0], event);
    assert.notEqual(a[0], (b[0] as unknown[])[1], 'each subscriber its own copy');
    assert.deepEqual(b[1], ['project.p1', { seq: 2 }]);
    assert.deepEqual(other, []);
  });

  it('keeps delivering when a subscriber throws, and stops a subscription once unsubscribed', async () => {
    const errors: unknown[] = [];
    const logger = { error: (fields: unknown) => errors.push(fields) } as never;
    const bus = createInProcessEventBus({ logger });
    const heard: unknown[] = [];
    const same = (event: unknown) => heard.push(event);
    bus.subscribe('t', () => {
      throw new Error('subscriber bug');
    });
    const first = bus.subscribe('t', same);
    bus.subscribe('t', same); // twice: two subscriptions
    await bus.publish('t', 1);
    assert.deepEqual(heard, [1, 1]);
    assert.equal(errors.length, 1);
    first();
    first();
    await bus.publish('t', 2);
    assert.deepEqual(heard, [1, 1, 2]);
    await bus.publish('nobody', 3); // no subscriber: nothing happens
  });
});
