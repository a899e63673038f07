import type { Logger } from 'pino';
import type { AuditLog } from '../platform/index.ts';
import { toJobView, type JobRecord } from '../jobs/index.ts';
import type { ApiKeysRepository } from '../accounts/index.ts';
import type {
  WebhookDeliveriesRepository,
  WebhookDelivery,
  WebhookDeliveryState,
} from './ports/webhook-deliveries-repository.ts';
import { WEBHOOK_EVENTS, auditAttempt, judge, sendDelivery, type WebhookSendDeps } from './webhook-send.ts';
import { createTestDeliveries } from './test-deliveries.ts';

/** Sweeps look at work left this long after it was due: by then it is orphaned, not just in progress. */
const SWEEP_GRACE_MS = 60_000;
const SWEEP_BATCH = 500;
/** Pending deliveries rescheduled at a start; any beyond are overdue soon after and the sweeper takes them. */
const RESUME_LIMIT = 100_000;

/**
 * Signed job-completion webhooks (docs/webhooks.md). A job that ends is announced (`jobFinished`, the jobs'
 * `job.finished` subscriber, told again by their outbox until it succeeds): when its key has a URL, a delivery
 * with the body fixed is stored and scheduled, once however often the job is announced. Each attempt reads
 * the key's URL and secret afresh (a cleared URL drops the delivery, a rotated secret signs the next
 * attempt), signs the body with a new timestamp, POSTs it through the egress guard and records the attempt
 * with the delivery and in the audit log. Attempts are independent of each other: a slow endpoint holds only
 * its own.
 */
export interface Webhooks {
  /** Stores and schedules the ended job's delivery when its key has a webhook URL; idempotent by job id. */
  jobFinished(job: JobRecord): Promise<void>;
  /** One attempt of a delivery: 'done', or the delay before the next one. Safe to run twice (redelivery). */
  attempt(deliveryId: string): Promise<'done' | number>;
  /** A test delivery to the key's webhook, sent once and recorded (test-deliveries.ts). */
  sendTest(keyId: string): Promise<WebhookDelivery>;
  /** After a start: schedules every pending delivery at its time (in-process timers forgot them). */
  resume(): Promise<number>;
  /**
   * The safety nets: pending deliveries long overdue (a lost schedule) are scheduled again, and deliveries
   * past retention are removed. (Jobs whose announcement was lost are the jobs' outbox's: job-outbox.ts.)
   */
  sweep(): Promise<void>;
}

export interface WebhooksDeps extends WebhookSendDeps {
  deliveries: WebhookDeliveriesRepository;
  keys: Pick<ApiKeysRepository, 'get'>;
  audit: Pick<AuditLog, 'append'>;
  /** Runs `attempt(id)` after a delay (in-process timers, or the `MF_WEBHOOKS` work queue). */
  schedule(deliveryId: string, delayMs: number): void;
  logger: Logger;
  /** `WEBHOOK_RETRY_DELAYS_MS`: the delay before retry 1, 2, 3. */
  retryDelaysMs: number[];
  /** `JOB_RETENTION_DAYS`: deliveries go with the jobs they announce. */
  retentionDays: number;
}

/** One delivery per job: its id derives from the job's, so announcing a job twice queues nothing new. */
export const deliveryIdOf = (jobId: string) => `dlv_${jobId.replace(/^job_/, '')}`;

/**
 * The body (docs/webhooks.md, The request), `model` being the provider endpoint id; these bytes are sent on
 * every attempt.
 */
export function deliveryBody(job: JobRecord): string {
  const view = toJobView(job);
  return JSON.stringify({
    job_id: view.job_id,
    status: view.status,
    model: job.provider?.endpoint ?? job.model,
    type: view.type,
    credits_consumed: view.credits_consumed,
    created_at: view.created_at,
    completed_at: view.completed_at,
    result: view.result,
    error: view.error,
  });
}

/** The webhooks of the jobs' ended states, and the test deliveries of the keys' webhooks. */
export function createWebhooks(deps: WebhooksDeps): Webhooks {
  const { deliveries, clock, logger } = deps;

  async function jobFinished(job: JobRecord): Promise<void> {
    const status = toJobView(job).status;
    if (status !== 'completed' && status !== 'failed' && status !== 'cancelled') return;
    if (!(await deps.keys.get(job.key_id))?.webhook) return;
    const now = new Date(clock.now());
    const delivery: WebhookDelivery = {
      id: deliveryIdOf(job.id),
      key_id: job.key_id,
      user_id: job.user_id,
      job_id: job.id,
      event: WEBHOOK_EVENTS[status],
      body: deliveryBody(job),
      state: 'pending',
      attempts: [],
      next_attempt_at: now,
      created_at: now,
      updated_at: now,
    };
    if (await deliveries.insert(delivery)) deps.schedule(delivery.id, 0);
  }

  async function attempt(deliveryId: string): Promise<'done' | number> {
    const delivery = await deliveries.get(deliveryId);
    if (!delivery || delivery.state !== 'pending' || !delivery.next_attempt_at) return 'done';
    const early = delivery.next_attempt_at.getTime() - clock.now();
    if (early > 0) return early; // resumed or redelivered before its time
    const webhook = (await deps.keys.get(delivery.key_id))?.webhook;
    if (!webhook) {
      await deliveries.dropPending(delivery.key_id, new Date(clock.now()));
      logger.info(
        { delivery_id: delivery.id, key_id: delivery.key_id },
        'webhook dropped: the URL was cleared',
      );
      return 'done';
    }
    const number = delivery.attempts.length + 1;
    const sent = await sendDelivery(deps, delivery, webhook.url, webhook.secret, number);
    const verdict = judge(sent.status);
    const retryDelay = deps.retryDelaysMs[number - 1];
    const state: WebhookDeliveryState =
      verdict === 'delivered'
        ? 'delivered'
        : verdict === 'retry' && retryDelay !== undefined
          ? 'pending'
          : 'failed';
    const nextAt = state === 'pending' ? new Date(sent.at.getTime() + retryDelay!) : null;
    const recorded = await deliveries.recordAttempt(delivery, sent, state, nextAt);
    await auditAttempt(deps.audit, delivery, sent);
    const fields = {
      delivery_id: delivery.id,
      attempt: number,
      status: sent.status,
      error: sent.error,
      state,
    };
    if (!recorded) {
      logger.info(fields, 'webhook attempt made, but the delivery moved on meanwhile (dropped or repeated)');
      return 'done';
    }
    logger[state === 'failed' ? 'warn' : 'debug'](fields, 'webhook attempt');
    return state === 'pending' ? retryDelay! : 'done';
  }

  return {
    jobFinished,
    attempt,
    sendTest: createTestDeliveries(deps),

    async resume() {
      let resumed = 0;
      for (const delivery of await deliveries.pendingDueBefore(new Date(8.64e15), RESUME_LIMIT)) {
        deps.schedule(delivery.id, Math.max(0, delivery.next_attempt_at!.getTime() - clock.now()));
        resumed++;
      }
      return resumed;
    },

    async sweep() {
      const now = clock.now();
      const overdue = new Date(now - SWEEP_GRACE_MS - deps.timeoutMs);
      for (const delivery of await deliveries.pendingDueBefore(overdue, SWEEP_BATCH))
        deps.schedule(delivery.id, 0);
      await deliveries.deleteCreatedBefore(new Date(now - deps.retentionDays * 24 * 60 * 60 * 1000));
    },
  };
}
