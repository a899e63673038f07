import { before, after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Type from 'typebox';
import { nanos } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { defineActor } from '../../../actors/runtime/define.ts';
import { ACTOR_STREAM } from '../../../src/platform/nats/actor-transport.ts';
import { startNats, skipWithoutNats, type TestNats } from '../../helpers/nats.ts';
import { startTestActorSystem } from '../../helpers/actors.ts';
import { actorContract, freshKind } from './contract.ts';

describe('JetStream transport', { skip: skipWithoutNats() }, () => {
  let nats: TestNats;
  before(async () => (nats = await startNats()));
  after(async () => nats?.stop());
  actorContract('jetstream', () => nats.url);

  it("creates every partition's consumer with its kind's ack wait, and brings it to a changed one", async () => {
    const PARTITIONS = 4;
    const kindWith = (settings: { ackWaitMs?: number }) =>
      defineActor<null>()({
        kind: freshKind('acks'),
        commands: { noop: Type.Object({}) },
        handlers: { noop: async () => null },
        settings,
      });
    const own = kindWith({ ackWaitMs: 7000 });
    const overridden = kindWith({ ackWaitMs: 7000 });
    const plain = kindWith({});
    const ackWaits = async (kind: string) => {
      const jsm = await jetstreamManager(first.connection!);
      const infos = await Promise.all(
        Array.from({ length: PARTITIONS }, (_, p) =>
          jsm.consumers.info(ACTOR_STREAM, `mf_actor_${kind}_${p}`),
        ),
      );
      return [...new Set(infos.map((info) => info.config.ack_wait))];
    };

    const first = await startTestActorSystem({
      transport: 'jetstream',
      natsUrl: nats.url,
      partitions: PARTITIONS,
      kinds: [
        { actor: own, ports: null },
        { actor: overridden, ports: null, settings: { ackWaitMs: 9000 } },
        { actor: plain, ports: null },
      ],
    });
    try {
      assert.deepEqual(await ackWaits(own.kind), [nanos(7000)]);
      assert.deepEqual(await ackWaits(overridden.kind), [nanos(9000)]);
      assert.deepEqual(await ackWaits(plain.kind), [nanos(30_000)], 'the default');

      const second = await startTestActorSystem({
        transport: 'jetstream',
        natsUrl: nats.url,
        partitions: PARTITIONS,
        kinds: [{ actor: own, ports: null, settings: { ackWaitMs: 11_000 } }],
      });
      await second.close();
      assert.deepEqual(await ackWaits(own.kind), [nanos(11_000)], 'a node with a new setting updates them');
      assert.equal(await first.system.ask(own.kind, 'k', { type: 'noop' }), null, 'still served');
    } finally {
      await first.close();
    }
  });
});
