import {
  type Config,
  guardedPost,
  startPeriodicTask,
  type PeriodicTask,
  type Feature,
  createScheduler,
  type Platform,
  type DomainEvents,
} from '../platform/index.ts';
import type { JobEvents } from '../jobs/index.ts';
import type { ApiKeysRepository } from '../accounts/index.ts';
import type { WebhookDeliveriesRepository } from './ports/webhook-deliveries-repository.ts';
import type { WebhookPost } from './ports/webhook-post.ts';
import { createWebhooks } from './webhooks-service.ts';
import { webhookTestRoutes } from './test-delivery-route.ts';

/**
 * Job webhooks: a subscriber of `job.finished` that stores and schedules each ended job's delivery, and the
 * attempts' scheduling and sweeps. The jobs' outbox tells it again of a job whose delivery it could not
 * store (its promise rejected), until it has.
 */
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
    repositories: { deliveries: WebhookDeliveriesRepository; keys: ApiKeysRepository };
    /** The jobs' announcements: every job that ends gets its delivery. */
    jobEvents: Pick<DomainEvents<JobEvents>, 'subscribe'>;
  },
  /** How an attempt is sent: the egress guard (a benchmark times it). */
  post: WebhookPost = guardedPost,
): Promise<Feature> {
  const log = platform.log.child({ component: 'webhooks' });
  const { webhookRetryDelaysMs: retryDelaysMs, webhookTimeoutMs: timeoutMs, tuning } = config;
  const webhooks = createWebhooks({
    deliveries: platform.repositories.deliveries,
    keys: platform.repositories.keys,
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
  // Resolves once the delivery is stored and scheduled (or the key has no URL); a rejection leaves the job
  // flagged in the jobs' outbox, which announces it again. Never unsubscribed, not even at stop: a job that
  // ends during the shutdown must find its subscriber failing (the scheduler is closed: the flag stays), not
  // missing (the outbox would confirm an announcement nobody heard).
  platform.jobEvents.subscribe('job.finished', (job) => webhooks.jobFinished(job));
  let sweep: PeriodicTask | undefined;
  return {
    routes: webhookTestRoutes({ webhooks, keys: platform.repositories.keys }),
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
