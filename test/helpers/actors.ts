import pino from 'pino';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { systemClock } from '../../src/platform/core/clock.ts';
import { createJetStreamTransport } from '../../src/platform/nats/actor-transport.ts';
import { createActorSystem, type ActorKind, type ActorSystem } from '../../actors/runtime/system.ts';
import { createInProcessTransport } from '../../actors/runtime/in-process.ts';
import { type AnyActorDefinition } from '../../actors/runtime/define.ts';
import { type ActorTransport } from '../../src/platform/core/actor-transport.ts';
import type { EventBus } from '../../src/platform/core/event-bus.ts';

/** The two transports every actor contract test runs on. */
export type TransportName = 'in-process' | 'jetstream';

export interface TestActorSystem {
  system: ActorSystem;
  connection?: NatsConnection;
  close(): Promise<void>;
}

interface TestActorSystemOptions {
  transport: TransportName;
  natsUrl?: string;
  partitions?: number;
  /** Every kind's `ackWaitMs`, unless its entry sets one. */
  ackWaitMs?: number;
  events?: EventBus;
}

/**
 * An actor system for tests, on either transport (JetStream with its own connection to `natsUrl`). Kinds as
 * `createActorSystem` takes them; `actors` + `ports` (one ports object for every kind) is the older form.
 */
export async function startTestActorSystem<const Kinds extends readonly unknown[]>(
  options: TestActorSystemOptions &
    (
      | { kinds: { [I in keyof Kinds]: ActorKind<Kinds[I]> } }
      | { actors: readonly AnyActorDefinition[]; ports: unknown }
    ),
): Promise<TestActorSystem> {
  const logger = pino({ level: process.env.MF_TEST_LOG ?? 'silent' });
  let connection: NatsConnection | undefined;
  let transport: ActorTransport;
  if (options.transport === 'jetstream') {
    connection = await connect({
      servers: options.natsUrl!,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    transport = createJetStreamTransport({
      connection,
      partitions: options.partitions ?? 16,
      replicas: 1,
      logger,
    });
  } else {
    transport = createInProcessTransport();
  }
  const given: readonly ActorKind[] =
    'kinds' in options
      ? (options.kinds as readonly ActorKind[])
      : options.actors.map((actor) => ({ actor, ports: options.ports }));
  const { ackWaitMs } = options;
  const kinds = given.map((kind) =>
    ackWaitMs === undefined ? kind : { ...kind, settings: { ackWaitMs, ...kind.settings } },
  );
  const system = await createActorSystem({
    transport,
    kinds,
    logger,
    clock: systemClock,
    ...(options.events ? { events: options.events } : {}),
  });
  return {
    system,
    connection,
    async close() {
      await system.close();
      await connection?.drain();
    },
  };
}
