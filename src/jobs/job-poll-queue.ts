import type { Logger } from 'pino';
import type { NatsConnection } from '@nats-io/transport-node';
import { type WorkScheduler, type PollVerdict, createJetStreamWorkQueue } from '../platform/index.ts';

export const JOBS_STREAM = 'MF_JOBS';
/** Delayed naks stay pending until redelivered, so this bounds the jobs processing at once, cluster-wide. */
const MAX_PROCESSING_JOBS = 100_000;

export interface JetStreamPollQueueOptions {
  connection: NatsConnection;
  /** One poll of one job (the completion service). */
  poll(jobId: string): Promise<PollVerdict>;
  /** `PROVIDER_POLL_INTERVAL_MS`: the delay between two polls of one job. */
  intervalMs: number;
  /** The longest a job can be processing (`PROVIDER_TIMEOUT_MS`): a job is queued once over this time. */
  jobLifetimeMs: number;
  /** `NATS_REPLICAS` of the stream. */
  replicas: number;
  /** A poll unacknowledged this long (its node died) is handed to another node. */
  ackWaitMs: number;
  /** Polls this node runs at once. */
  concurrency: number;
  logger: Logger;
}

/**
 * The job poller of cluster mode: stream `MF_JOBS`, one message per processing job. A poll that says "again"
 * comes back after the poll interval on whichever node pulls next; polls are conditional on `processing`,
 * so a poll repeated after a node's death is harmless.
 */
export function createJetStreamPollQueue(
  options: JetStreamPollQueueOptions,
): Promise<WorkScheduler & { close(): Promise<void> }> {
  return createJetStreamWorkQueue({
    connection: options.connection,
    stream: JOBS_STREAM,
    subject: 'mf.jobs.poll',
    consumer: 'mf_job_pollers',
    work: async (jobId) => ((await options.poll(jobId)) === 'done' ? 'done' : options.intervalMs),
    retryAfterErrorMs: options.intervalMs,
    itemLifetimeMs: options.jobLifetimeMs,
    maxPending: MAX_PROCESSING_JOBS,
    replicas: options.replicas,
    ackWaitMs: options.ackWaitMs,
    concurrency: options.concurrency,
    logger: options.logger,
  });
}
