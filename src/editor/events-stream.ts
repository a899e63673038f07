import { nanos, type NatsConnection } from '@nats-io/transport-node';
import {
  DiscardPolicy,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from '@nats-io/jetstream';

/** The stream that keeps recent project events for `since=` replay from any node (docs/architecture.md). */
export const EVENTS_STREAM = 'MF_EVENTS';
/** The server's own default. */
const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;

/** How long and how much of each project's events `MF_EVENTS` keeps. */
export interface EventsStreamOptions {
  /** `NATS_REPLICAS`. */
  replicas: number;
  /** Events older than this are dropped. */
  maxAgeMs: number;
  /** At most this many of a project's newest events are kept (one subject per project). */
  maxPerProject: number;
}

/**
 * Creates `MF_EVENTS`, or brings an existing one to these limits; safe when many nodes start at once. It captures
 * the event bus's plain core-NATS publishes on `mf.events.project.*`, so the publisher is unchanged, and it is
 * only a replay cache: the MongoDB history stays the source of truth, so old events are simply discarded.
 */
export async function ensureEventsStream(
  connection: NatsConnection,
  options: EventsStreamOptions,
): Promise<void> {
  if (!(options.maxAgeMs > 0)) throw new Error('events stream: maxAgeMs must be a positive number');
  if (!Number.isInteger(options.maxPerProject) || options.maxPerProject < 1) {
    throw new Error('events stream: maxPerProject must be a positive integer');
  }
  const jsm = await jetstreamManager(connection);
  const tunable = {
    num_replicas: options.replicas,
    max_age: nanos(options.maxAgeMs),
    max_msgs_per_subject: options.maxPerProject,
    // The publishes carry no message id, so the window dedupes nothing; but the server refuses one longer than
    // max_age, and an update keeps the window the stream was created with.
    duplicate_window: nanos(Math.min(options.maxAgeMs, DEFAULT_DUPLICATE_WINDOW_MS)),
  } satisfies Partial<StreamConfig>;
  try {
    // An identical config is accepted again, so nodes racing with the same settings all succeed here.
    await jsm.streams.add({
      name: EVENTS_STREAM,
      subjects: ['mf.events.project.*'],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      ...tunable,
    });
  } catch (error) {
    const existing = await jsm.streams.info(EVENTS_STREAM).catch(() => undefined);
    if (!existing) throw error;
    const current = existing.config;
    if (
      current.num_replicas === tunable.num_replicas &&
      current.max_age === tunable.max_age &&
      current.max_msgs_per_subject === tunable.max_msgs_per_subject &&
      current.duplicate_window === tunable.duplicate_window
    ) {
      return;
    }
    await jsm.streams.update(EVENTS_STREAM, { ...current, ...tunable });
  }
}
