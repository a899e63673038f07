import type { Logger } from 'pino';
import type { NatsConnection } from '@nats-io/transport-node';
import { createJetStreamWorkQueue } from '../nats/work-queue.ts';
import type { DelayedWork, WorkScheduler } from './work-scheduler.ts';
import { createInProcessScheduler } from './in-process-scheduler.ts';

/** A scheduler the wiring can close. */
export type ClosableScheduler = WorkScheduler & { close(): Promise<void> | void };

/** Where a kind of delayed work lives on JetStream (cluster mode). */
export interface WorkQueueSpec {
  stream: string;
  subject: string;
  consumer: string;
  /** The longest an item can stay queued (message ids are remembered this long: one message per item). */
  itemLifetimeMs: number;
  /** Items waiting at once, cluster-wide. */
  maxPending: number;
  /** A run unacknowledged this long (its node died) goes to another node. */
  ackWaitMs: number;
  /** Runs one node does at once. */
  concurrency: number;
}

/**
 * The one place that chooses how delayed work (job polls, webhook attempts) is timed: a JetStream work queue
 * shared by every node in cluster mode, one timer per item otherwise (every item's state is in MongoDB, so a
 * restart rebuilds the timers from there).
 */
export async function createScheduler(options: {
  /** Set in cluster mode. */
  nats: NatsConnection | undefined;
  replicas: number;
  queue: WorkQueueSpec;
  work: DelayedWork;
  /** Delay before a run that threw is tried again. */
  retryAfterErrorMs: number;
  /** What an item is, in log lines ("job poll", "webhook attempt"). */
  label: string;
  logger: Logger;
}): Promise<ClosableScheduler> {
  const { nats, queue, work, retryAfterErrorMs, logger } = options;
  if (!nats) return createInProcessScheduler({ work, retryAfterErrorMs, label: options.label, logger });
  return createJetStreamWorkQueue({
    ...queue,
    connection: nats,
    work,
    retryAfterErrorMs,
    replicas: options.replicas,
    logger,
  });
}
