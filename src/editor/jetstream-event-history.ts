import type { Logger } from 'pino';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  type ConsumerMessages,
  type JetStreamManager,
} from '@nats-io/jetstream';
import type { EventHistory, EventsSince, ProjectEvent } from '../../actors/index.ts';
import { eventSubject } from '../platform/index.ts';
import { EVENTS_STREAM } from './events-stream.ts';

/** Options of {@link createJetStreamEventHistory}. */
export interface JetStreamEventHistoryOptions {
  connection: NatsConnection;
  /** The source of truth (MongoDB): every write goes there, and every replay JetStream cannot prove. */
  durable: EventHistory;
  logger: Logger;
  /** How long a replay waits for JetStream before asking the durable history (default 2 000 ms). */
  readTimeoutMs?: number;
}

const decoder = new TextDecoder();
/** A read's consumer outlives it only if its delete is lost; the server then drops it after this. */
const CONSUMER_IDLE_MS = 30_000;
/** The smallest pull expiry the client accepts; our own timer cuts the read shorter. */
const MIN_PULL_EXPIRES_MS = 1000;
/** Characters that would make a project id more (or less) than one subject token. */
const NOT_A_TOKEN = /[.*>\s]/;

const isProjectEvent = (value: unknown): value is ProjectEvent =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as ProjectEvent).type === 'string' &&
  Number.isSafeInteger((value as ProjectEvent).seq);

/**
 * The project event history in cluster mode: writes go to the durable (MongoDB) history only — `MF_EVENTS`
 * fills itself from the bus's publishes — and replays come from `MF_EVENTS` when what it holds provably covers
 * every event after the asked seq, so reconnect storms on any node stay off MongoDB. Anything JetStream cannot
 * prove (nothing kept, an older start, a hole, an error or a time-out) is asked of the durable history.
 */
export function createJetStreamEventHistory(options: JetStreamEventHistoryOptions): EventHistory {
  const { connection, durable, logger } = options;
  const readTimeoutMs = options.readTimeoutMs ?? 2000;
  const js = jetstream(connection, { timeout: readTimeoutMs });
  let managerPromise: Promise<JetStreamManager> | undefined;
  // No account check: it would be one more round trip, and a failing JetStream shows up on the first request.
  const jsm = () => (managerPromise ??= js.jetstreamManager(false));
  const subjectOf = (projectId: string) =>
    // An id that is not exactly one subject token would read (or purge) other projects' subjects.
    projectId !== '' && !NOT_A_TOKEN.test(projectId) ? eventSubject(`project.${projectId}`) : undefined;

  /** Every kept event of the project with seq > afterSeq, in stored order; stops early when `signal` aborts. */
  async function readStream(projectId: string, subject: string, afterSeq: number, signal: AbortSignal) {
    const manager = await jsm();
    // A plain ephemeral pull consumer, not the client's ordered consumer: it skips the ordered consumer's
    // stream-info request, and the contiguity check below already catches anything lost on the way.
    // One `filter_subject` (2.9 has no `filter_subjects`), memory-backed and R1: it lives for one read.
    const info = await manager.consumers.add(EVENTS_STREAM, {
      filter_subject: subject,
      deliver_policy: DeliverPolicy.All,
      ack_policy: AckPolicy.None,
      mem_storage: true,
      num_replicas: 1,
      inactive_threshold: nanos(CONSUMER_IDLE_MS),
    });
    const events: ProjectEvent[] = [];
    let messages: ConsumerMessages | undefined;
    const stop = () => messages?.stop();
    try {
      if (info.num_pending === 0 || signal.aborted) return events;
      messages = await js.consumers.getConsumerFromInfo(info).fetch({
        max_messages: info.num_pending,
        expires: Math.max(MIN_PULL_EXPIRES_MS, readTimeoutMs),
      });
      signal.addEventListener('abort', stop, { once: true });
      let received = 0;
      let drained = false;
      for await (const message of messages) {
        received++;
        let event: unknown;
        try {
          event = JSON.parse(decoder.decode(message.data));
        } catch {
          event = undefined;
        }
        if (isProjectEvent(event)) {
          if (event.seq > afterSeq) events.push(event);
        } else {
          logger.warn({ project_id: projectId, stream_seq: message.seq }, 'unreadable replay event skipped');
        }
        // Events published after the consumer was made need not be waited for: live delivery brings them.
        if (message.info.pending === 0 || received === info.num_pending) {
          drained = true;
          break;
        }
      }
      // A pull that ended short would pass the hole check yet miss the newest events.
      if (!drained) throw new Error('JetStream replay ended before the last kept event');
      return events;
    } finally {
      signal.removeEventListener('abort', stop);
      manager.consumers.delete(EVENTS_STREAM, info.name).catch(() => undefined);
    }
  }

  /** What JetStream can prove: every event from afterSeq + 1 on, without a hole; else undefined. */
  async function fromStream(projectId: string, afterSeq: number): Promise<ProjectEvent[] | undefined> {
    const subject = subjectOf(projectId);
    if (!subject) return undefined;
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), readTimeoutMs);
    });
    const reading = readStream(projectId, subject, afterSeq, abort.signal);
    try {
      const events = await Promise.race([reading, timedOut]);
      if (events === 'timeout') {
        abort.abort();
        reading.catch(() => undefined); // it ends on its own; its failure no longer matters
        logger.warn({ project_id: projectId, timeout_ms: readTimeoutMs }, 'JetStream replay timed out');
        return undefined;
      }
      // Publishes from two nodes (an actor that moved) may be stored out of order: seq order is the truth.
      events.sort((a, b) => a.seq - b.seq);
      const contiguous = events.every((event, i) => event.seq === afterSeq + 1 + i);
      return events.length > 0 && contiguous ? events : undefined;
    } catch (error) {
      logger.warn({ err: error, project_id: projectId }, 'JetStream replay failed');
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    append: (projectId, events, now) => durable.append(projectId, events, now),

    async since(projectId, afterSeq): Promise<EventsSince> {
      const events = await fromStream(projectId, afterSeq);
      return events ? { events, complete: true } : durable.since(projectId, afterSeq);
    },

    async deleteProject(projectId) {
      await durable.deleteProject(projectId);
      const subject = subjectOf(projectId);
      if (!subject) return;
      try {
        await (await jsm()).streams.purge(EVENTS_STREAM, { filter: subject });
      } catch (error) {
        // The stream's age limit removes them anyway; the project is gone from the source of truth.
        logger.warn({ err: error, project_id: projectId }, 'could not purge project events from JetStream');
      }
    },
  };
}
