import type { Logger } from 'pino';
import { nanos } from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamManager,
} from '@nats-io/jetstream';

/** A work-queue stream of ours: what it is called, what it holds, how it is kept. */
export interface WorkQueueStream {
  name: string;
  subjects: string[];
  /** `NATS_REPLICAS`. */
  replicas: number;
  /** How long a message id is remembered, so a repeated publish with the same id is dropped. */
  duplicateWindowMs: number;
}

/**
 * Creates the stream, or brings an existing one to our replicas and duplicate window; safe when many nodes
 * start at once. Work-queue retention: an acknowledged message is gone, the stream holds only pending work.
 */
export async function ensureWorkQueueStream(jsm: JetStreamManager, stream: WorkQueueStream, logger: Logger) {
  const config = {
    name: stream.name,
    subjects: stream.subjects,
    storage: StorageType.File,
    retention: RetentionPolicy.Workqueue,
    num_replicas: stream.replicas,
    duplicate_window: nanos(stream.duplicateWindowMs),
  };
  try {
    await jsm.streams.add(config);
  } catch (error) {
    const existing = await jsm.streams.info(stream.name).catch(() => undefined);
    if (!existing) throw error;
    const current = existing.config;
    if (
      current.num_replicas !== config.num_replicas ||
      current.duplicate_window !== config.duplicate_window
    ) {
      logger.warn(
        { stream: stream.name, replicas: config.num_replicas, duplicate_window_ms: stream.duplicateWindowMs },
        'updating stream settings',
      );
      await jsm.streams.update(stream.name, {
        ...current,
        num_replicas: config.num_replicas,
        duplicate_window: config.duplicate_window,
      });
    }
  }
}

/** The settings of one durable pull consumer that may differ between deployments. */
export interface DurableConsumer {
  name: string;
  filterSubject: string;
  maxAckPending: number;
  ackWaitMs: number;
}

/**
 * Creates the durable pull consumer (explicit acks, no delivery limit: poison messages are our handlers'
 * business), or brings an existing one of that name to these settings.
 */
export async function ensureDurableConsumer(
  jsm: JetStreamManager,
  stream: string,
  consumer: DurableConsumer,
) {
  const tunable: Partial<ConsumerConfig> = {
    max_ack_pending: consumer.maxAckPending,
    ack_wait: nanos(consumer.ackWaitMs),
    max_deliver: -1,
  };
  try {
    await jsm.consumers.add(stream, {
      durable_name: consumer.name,
      filter_subject: consumer.filterSubject,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ...tunable,
    });
  } catch (error) {
    // Same name, other settings (say, a changed ack_wait): bring it to ours.
    const existing = await jsm.consumers.info(stream, consumer.name).catch(() => undefined);
    if (!existing) throw error;
    await jsm.consumers.update(stream, consumer.name, tunable);
  }
}
