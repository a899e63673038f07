import type { Logger } from 'pino';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import type { DelayedWork, WorkScheduler } from '../scheduling/work-scheduler.ts';
import { ensureDurableConsumer, ensureWorkQueueStream } from './streams.ts';

const PULL_EXPIRES_MS = 5000;

export interface JetStreamWorkQueueOptions {
  connection: NatsConnection;
  stream: string;
  subject: string;
  consumer: string;
  /** What one run of an item does, and when (if ever) it runs again. */
  work: DelayedWork;
  /** Delay before a run that threw is tried again. */
  retryAfterErrorMs: number;
  /**
   * The longest an item can stay queued. Publishes carry the item id as message id and the stream remembers
   * ids this long, so an item is queued once for its whole life however often it is scheduled.
   */
  itemLifetimeMs: number;
  /** Delayed naks stay pending until redelivered, so this bounds the items waiting at once, cluster-wide. */
  maxPending: number;
  /** `NATS_REPLICAS` of the stream. */
  replicas: number;
  /** A run unacknowledged this long (its node died) is handed to another node. */
  ackWaitMs: number;
  /** Runs this node does at once. */
  concurrency: number;
  logger: Logger;
}

interface WorkMessage {
  id: string;
  /** Epoch ms before which the item does not run (JetStream 2.9 cannot delay a publish: we nak until then). */
  not_before: number;
}

/**
 * Delayed work over a JetStream work queue (docs/architecture.md, Delayed work): one message per item, one
 * durable consumer shared by every node. A run that asks for another one naks its message with that delay, so
 * the item comes back to whichever node pulls next; a finished item is acknowledged and leaves the queue. A
 * node that dies mid-run leaves the message to be redelivered after `ack_wait`, so runs must be safe to
 * repeat. Never `max_ack_pending: 1` here: delayed naks stay pending and would block every other item behind
 * them.
 */
export async function createJetStreamWorkQueue(
  options: JetStreamWorkQueueOptions,
): Promise<WorkScheduler & { close(): Promise<void> }> {
  const { logger } = options;
  const jsm = await jetstreamManager(options.connection);
  await ensureWorkQueueStream(
    jsm,
    {
      name: options.stream,
      subjects: [options.subject],
      replicas: options.replicas,
      duplicateWindowMs: Math.max(120_000, options.itemLifetimeMs + 60_000),
    },
    logger,
  );
  await ensureDurableConsumer(jsm, options.stream, {
    name: options.consumer,
    filterSubject: options.subject,
    maxAckPending: options.maxPending,
    ackWaitMs: options.ackWaitMs,
  });
  const js = jetstream(options.connection);
  const consumer = await js.consumers.get(options.stream, options.consumer);
  const messages: ConsumerMessages = await consumer.consume({
    max_messages: options.concurrency,
    expires: PULL_EXPIRES_MS,
  });

  async function handle(msg: JsMsg): Promise<void> {
    let body: WorkMessage;
    try {
      body = msg.json<WorkMessage>();
      if (typeof body.id !== 'string' || typeof body.not_before !== 'number') throw new Error('bad shape');
    } catch {
      logger.error({ stream: options.stream, seq: msg.seq }, 'malformed work message dropped');
      return msg.term();
    }
    const wait = body.not_before - Date.now();
    if (wait > 0) return msg.nak(wait);
    // Tell JetStream the run is alive (copying a large output or a slow endpoint can take a while).
    const heartbeat = setInterval(() => msg.working(), Math.max(100, options.ackWaitMs / 3));
    let next: 'done' | number = options.retryAfterErrorMs;
    try {
      next = await options.work(body.id);
    } catch (error) {
      logger.error(
        { err: error, stream: options.stream, id: body.id },
        'work item failed; trying again later',
      );
    } finally {
      clearInterval(heartbeat);
    }
    if (next === 'done') msg.ack();
    else msg.nak(next);
  }

  const running = new Set<Promise<void>>();
  const loop = (async () => {
    for await (const msg of messages) {
      const task: Promise<void> = handle(msg)
        .catch((error: unknown) =>
          logger.error({ err: error, stream: options.stream }, 'work message failed'),
        )
        .finally(() => running.delete(task));
      running.add(task);
      if (running.size >= options.concurrency) await Promise.race(running);
    }
  })();

  return {
    schedule(id, delayMs) {
      const message: WorkMessage = { id, not_before: Date.now() + delayMs };
      js.publish(options.subject, JSON.stringify(message), { msgID: id }).catch((error: unknown) =>
        // Every user of this queue has a sweeper that schedules items left unscheduled, so none is lost.
        logger.warn(
          { err: error, stream: options.stream, id },
          'work item not queued; the sweeper will queue it',
        ),
      );
    },
    async close() {
      await messages.close();
      await loop;
      await Promise.allSettled(running);
    },
  };
}
