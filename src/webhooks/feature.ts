import {
  type Config,
  guardedPost,
  startPeriodicTask,
  type PeriodicTask,
  type Feature,
  createScheduler,
  type Platform,
} from '../platform/index.ts';
import type { JobRecord, JobsRepository } from '../jobs/index.ts';
import type { ApiKeysRepository } from '../accounts/index.ts';
import type { WebhookDeliveriesRepository } from './ports/webhook-deliveries-repository.ts';
import type { WebhookPost } from './ports/webhook-post.ts';
import { createWebhooks } from './webhooks-service.ts';
import { webhookTestRoutes } from './test-delivery-route.ts';

/** Job webhooks: the announcement hook for jobs, and the attempts' scheduling and sweeps. */
export interface WebhooksFeature extends Feature {
  /** A job ended: announce it (if this fails, the sweeper announces it from the job's `notify_due` flag). */
  jobFinished(job: JobRecord): void;
  /**
   * Makes `listener` part of the ended-job outbox: the sweep tells it of every job whose end is not confirmed
   * yet (after a crash, or when its own live call failed), and confirms the job only once it succeeded.
   */
  alsoTell(listener: (job: JobRecord) => Promise<void>): void;
}

export async function webhooksFeature(
  config: Pick<
    Config,
    | 'webhookRetryDelaysMs'
    | 'webhookTimeoutMs'
    | 'webhookAllowPrivate'
    | 'jobRetentionDays'
    | 'jobSweepIntervalMs'
    | 'natsReplicas'
    | 'tuning'
  >,
  platform: Pick<Platform, 'log' | 'clock' | 'audit' | 'nats'> & {
    repositories: { deliveries: WebhookDeliveriesRepository; keys: ApiKeysRepository; jobs: JobsRepository };
  },
  /** How an attempt is sent: the egress guard (a benchmark times it). */
  post: WebhookPost = guardedPost,
): Promise<WebhooksFeature> {
  const log = platform.log.child({ component: 'webhooks' });
  const { webhookRetryDelaysMs: retryDelaysMs, webhookTimeoutMs: timeoutMs, tuning } = config;
  const alsoTell: Array<(job: JobRecord) => Promise<void>> = [];
  const webhooks = createWebhooks({
    alsoTell,
    deliveries: platform.repositories.deliveries,
    keys: platform.repositories.keys,
    jobs: platform.repositories.jobs,
    audit: platform.audit,
    post,
    // Called only once a job ends, by then the scheduler below exists.
    schedule: (id, delayMs) => scheduler.schedule(id, delayMs),
    clock: platform.clock,
    logger: log,
    retryDelaysMs,
    timeoutMs,
    allowPrivate: config.webhookAllowPrivate,
    retentionDays: config.jobRetentionDays,
  });
  const scheduler = await createScheduler({
    nats: platform.nats?.connection,
    replicas: config.natsReplicas,
    queue: {
      stream: 'MF_WEBHOOKS',
      subject: 'mf.webhooks.attempt',
      consumer: 'mf_webhook_senders',
      // The longest a delivery can be pending: every retry delay and every attempt's time-out.
      itemLifetimeMs:
        retryDelaysMs.reduce((sum, delay) => sum + delay, 0) + (retryDelaysMs.length + 1) * timeoutMs,
      maxPending: tuning.maxPendingWebhooks,
      ackWaitMs: Math.max(tuning.webhookMinAckWaitMs, 2 * timeoutMs),
      concurrency: tuning.webhookAttemptsPerNode,
    },
    work: (id) => webhooks.attempt(id),
    retryAfterErrorMs: retryDelaysMs[0] ?? tuning.webhookMinAckWaitMs,
    label: 'webhook attempt',
    logger: log,
  });
  let sweep: PeriodicTask | undefined;
  return {
    routes: webhookTestRoutes({ webhooks, keys: platform.repositories.keys }),
    alsoTell: (listener) => void alsoTell.push(listener),
    jobFinished(job) {
      webhooks.jobFinished(job).catch((error: unknown) => {
        log.warn({ err: error, job_id: job.id }, 'webhook not queued yet; the sweeper will queue it');
      });
    },
    async start() {
      await webhooks.resume(); // a restart forgot the timers; the deliveries are all in MongoDB
      sweep = startPeriodicTask({
        name: 'webhook sweep',
        intervalMs: config.jobSweepIntervalMs,
        logger: log,
        run: () => webhooks.sweep(),
      });
    },
    async stop() {
      await sweep?.stop();
      await scheduler.close();
    },
  };
}
