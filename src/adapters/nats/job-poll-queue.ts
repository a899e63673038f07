import type { Logger } from 'pino';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import type { PollScheduler } from '../../services/jobs.ts';
import type { PollVerdict } from '../../services/job-completion.ts';
import { ensureDurableConsumer, ensureWorkQueueStream } from './streams.ts';

export const JOBS_STREAM = 'MF_JOBS';
const POLL_SUBJECT = 'mf.jobs.poll';
const CONSUMER = 'mf_job_pollers';
/** Delayed naks stay pending until redelivered, so this bounds the jobs processing at once, cluster-wide. */
const MAX_PROCESSING_JOBS = 100_000;
const PULL_EXPIRES_MS = 5000;

export interface JetStreamPollQueueOptions {
  connection: NatsConnection;
  /** One poll of one job (the completion service). */
  poll(jobId: string): Promise<PollVerdict>;
  /** `PROVIDER_POLL_INTERVAL_MS`: the delay between two polls of one job. */
  intervalMs: number;
  /**
   * The longest a job can be processing (`PROVIDER_TIMEOUT_MS`). Publishes carry the job id as message id
   * and the stream remembers ids this long, so a job is queued once for its whole life however often it is
   * scheduled (submit, restart resume, the sweeper's safety net).
   */
  jobLifetimeMs: number;
  /** `NATS_REPLICAS` of the stream. */
  replicas: number;
  /** A poll unacknowledged this long (its node died) is handed to another node. */
  ackWaitMs: number;
  /** Polls this node runs at once. */
  concurrency: number;
  logger: Logger;
}

interface PollMessage {
  job_id: string;
  /** Epoch ms before which the job is not polled (JetStream 2.9 cannot delay a publish: we nak until then). */
  not_before: number;
}

/**
 * The job poller of cluster mode (DESIGN.md §2): stream `MF_JOBS`, one message per processing job, one
 * durable consumer shared by every node. A poll that says "again" naks its message with the poll interval
 * as delay, so the job comes back to whichever node pulls next; "done" acknowledges it and the job leaves
 * the queue. A node that dies mid-poll leaves the message to be redelivered after `ack_wait`; polls are
 * conditional on `processing`, so a repeated poll is harmless. Never `max_ack_pending: 1` here: delayed naks
 * stay pending and would block every other job behind them.
 */
export async function createJetStreamPollQueue(
  options: JetStreamPollQueueOptions,
): Promise<PollScheduler & { close(): Promise<void> }> {
  const { logger } = options;
  const jsm = await jetstreamManager(options.connection);
  await ensureWorkQueueStream(
    jsm,
    {
      name: JOBS_STREAM,
      subjects: [POLL_SUBJECT],
      replicas: options.replicas,
      duplicateWindowMs: Math.max(120_000, options.jobLifetimeMs + 60_000),
    },
    logger,
  );
  await ensureDurableConsumer(jsm, JOBS_STREAM, {
    name: CONSUMER,
    filterSubject: POLL_SUBJECT,
    maxAckPending: MAX_PROCESSING_JOBS,
    ackWaitMs: options.ackWaitMs,
  });
  const js = jetstream(options.connection);
  const consumer = await js.consumers.get(JOBS_STREAM, CONSUMER);
  const messages: ConsumerMessages = await consumer.consume({
    max_messages: options.concurrency,
    expires: PULL_EXPIRES_MS,
  });

  async function handle(msg: JsMsg): Promise<void> {
    let body: PollMessage;
    try {
      body = msg.json<PollMessage>();
      if (typeof body.job_id !== 'string' || typeof body.not_before !== 'number')
        throw new Error('bad shape');
    } catch {
      logger.error({ subject: msg.subject, seq: msg.seq }, 'malformed job poll message dropped');
      return msg.term();
    }
    const wait = body.not_before - Date.now();
    if (wait > 0) return msg.nak(wait);
    // Tell JetStream the poll is alive (copying a large output can take a while).
    const heartbeat = setInterval(() => msg.working(), Math.max(100, options.ackWaitMs / 3));
    let verdict: PollVerdict = 'again';
    try {
      verdict = await options.poll(body.job_id);
    } catch (error) {
      logger.error({ err: error, job_id: body.job_id }, 'job poll failed; polling again later');
    } finally {
      clearInterval(heartbeat);
    }
    if (verdict === 'done') msg.ack();
    else msg.nak(options.intervalMs);
  }

  const running = new Set<Promise<void>>();
  const loop = (async () => {
    for await (const msg of messages) {
      const task: Promise<void> = handle(msg)
        .catch((error: unknown) => logger.error({ err: error }, 'job poll message handling failed'))
        .finally(() => running.delete(task));
      running.add(task);
      if (running.size >= options.concurrency) await Promise.race(running);
    }
  })();

  return {
    schedule(jobId, delayMs) {
      const message: PollMessage = { job_id: jobId, not_before: Date.now() + delayMs };
      js.publish(POLL_SUBJECT, JSON.stringify(message), { msgID: jobId }).catch((error: unknown) =>
        // The sweeper schedules processing jobs nobody polled for a while, so this job is not lost.
        logger.warn({ err: error, job_id: jobId }, 'job poll not queued; the sweeper will queue it'),
      );
    },
    async close() {
      await messages.close();
      await loop;
      await Promise.allSettled(running);
    },
  };
}
