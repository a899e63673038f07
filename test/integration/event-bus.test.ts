// The event-bus port's contract, run against both adapters: in-process (single node) and core NATS (cluster,
// each "node" its own connection). Delivery in publish order per topic, to every subscriber of the topic and
// only them, each with its own JSON copy; unsubscribing stops delivery; a throwing subscriber hurts no other.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createInProcessEventBus } from '../../actors/runtime/event-bus.ts';
import { createNatsEventBus } from '../../src/platform/nats/event-bus.ts';
import type { EventBus } from '../../src/platform/core/event-bus.ts';
import { skipWithoutNats, startNats, type TestNats } from '../helpers/nats.ts';
import { until } from '../helpers/wait.ts';

const logger = pino({ level: 'silent' });

/** Two nodes' views of one bus, and a way to wait until subscriptions are in place. */
interface BusPair {
  publisher: EventBus;
  subscriber: EventBus;
  settled(): Promise<void>;
}

function eventBusContract(name: string, pair: () => Promise<BusPair>) {
  describe(`event bus contract: ${name}`, () => {
    it('delivers a topic’s events to each of its subscribers, in publish order, as copies', async () => {
      const { publisher, subscriber, settled } = await pair();
      const first: unknown[] = [];
      const second: unknown[] = [];
      const topics: string[] = [];
      subscriber.subscribe('project.a', (event, topic) => {
        first.push(event);
        topics.push(topic);
      });
      subscriber.subscribe('project.a', (event) => {
        (event as { seq: number }).seq = -1; // changing one's copy changes nobody else's
        second.push(event);
      });
      await settled();
      const sent = Array.from({ length: 50 }, (_, i) => ({ seq: i + 1, data: { text: `event ${i}` } }));
      for (const event of sent) await publisher.publish('project.a', event);
      await until(
        'all delivered',
        () => first.length + second.length,
        (n) => n === 100,
        5000,
        10,
      );
      assert.deepEqual(first, sent);
      assert.equal(second.length, 50);
      assert.deepEqual(new Set(topics), new Set(['project.a']));
      assert.equal(sent[0]!.seq, 1, 'the publisher’s own object is untouched');
    });

    it('delivers nothing of other topics, and nothing after unsubscribing (twice is harmless)', async () => {
      const { publisher, subscriber, settled } = await pair();
      const heard: unknown[] = [];
      const stop = subscriber.subscribe('project.b', (event) => heard.push(event));
      const other: unknown[] = [];
      subscriber.subscribe('project.c', (event) => other.push(event));
      await settled();
      await publisher.publish('project.b', { n: 1 });
      await publisher.publish('project.zzz', { n: 2 });
      await until(
        'the first event',
        () => heard.length,
        (n) => n === 1,
        5000,
        10,
      );
      stop();
      stop();
      await settled();
      await publisher.publish('project.b', { n: 3 });
      await publisher.publish('project.c', { n: 4 }); // a marker: once it arrives, n 3 would have too
      await until(
        'the marker',
        () => other.length,
        (n) => n === 1,
        5000,
        10,
      );
      assert.deepEqual(heard, [{ n: 1 }]);
    });

    it('keeps delivering to the other subscribers when one throws', async () => {
      const { publisher, subscriber, settled } = await pair();
      const heard: unknown[] = [];
      subscriber.subscribe('project.d', () => {
        throw new Error('a broken subscriber');
      });
      subscriber.subscribe('project.d', (event) => heard.push(event));
      await settled();
      await publisher.publish('project.d', { n: 1 });
      await publisher.publish('project.d', { n: 2 });
      await until(
        'both events',
        () => heard.length,
        (n) => n === 2,
        5000,
        10,
      );
      assert.deepEqual(heard, [{ n: 1 }, { n: 2 }]);
    });
  });
}

eventBusContract('in-process', async () => {
  const bus = createInProcessEventBus({ logger });
  return { publisher: bus, subscriber: bus, settled: async () => undefined };
});

describe('core NATS event bus', { skip: skipWithoutNats() }, () => {
  let nats: TestNats;
  const connections: NatsConnection[] = [];
  before(async () => (nats = await startNats()));
  after(async () => {
    await Promise.all(connections.map((connection) => connection.close()));
    await nats?.stop();
  });

  eventBusContract('NATS, two nodes', async () => {
    const [a, b] = await Promise.all([connect({ servers: nats.url }), connect({ servers: nats.url })]);
    connections.push(a, b);
    return {
      publisher: createNatsEventBus({ connection: a, logger }),
      subscriber: createNatsEventBus({ connection: b, logger }),
      // A subscription is in place once the server has it: a flush round-trip after subscribing.
      settled: () => b.flush(),
    };
  });
});
