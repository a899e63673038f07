import pino from 'pino';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { systemClock } from '../../src/ports/clock.ts';
import { createJetStreamTransport } from '../../src/adapters/nats/actor-transport.ts';
import {
  createActorSystem,
  createInProcessTransport,
  type ActorDefinition,
  type ActorSystem,
  type RetryPolicy,
} from '../../actors/index.ts';
import { type ActorTransport } from '../../src/ports/actor-transport.ts';

/** The two transports every actor contract test runs on. */
export type TransportName = 'in-process' | 'jetstream';

export interface TestActorSystem {
  system: ActorSystem;
  connection?: NatsConnection;
  close(): Promise<void>;
}

/** An actor system for tests, on either transport (JetStream with its own connection to `natsUrl`). */
export async function startTestActorSystem<Ports>(options: {
  transport: TransportName;
  natsUrl?: string;
  actors: ActorDefinition<Ports>[];
  ports: Ports;
  partitions?: number;
  ackWaitMs?: number;
  retry?: RetryPolicy;
}): Promise<TestActorSystem> {
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
      ackWaitMs: options.ackWaitMs ?? 5000,
      logger,
    });
  } else {
    transport = createInProcessTransport();
  }
  const system = await createActorSystem({
    transport,
    actors: options.actors,
    ports: options.ports,
    logger,
    clock: systemClock,
    ...(options.retry ? { retry: options.retry } : {}),
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
