import { TEST_DELIVERY_PREFIX } from '../../schemas/vocabulary.ts';
import type { Logger } from 'pino';
import { AppError, randomBase62, type Clock, type AuditLog } from '../platform/index.ts';
import { webhookSignature } from './webhook-signature.ts';
import { toJobView, type JobRecord } from '../jobs/index.ts';
import type { ApiKeysRepository } from '../accounts/index.ts';
import type {
  WebhookAttempt,
  WebhookDeliveriesRepository,
  WebhookDelivery,
  WebhookDeliveryState,
} from './ports/webhook-deliveries-repository.ts';
import type { WebhookPost } from './ports/webhook-post.ts';

/** The `User-Agent` of every delivery (docs/webhooks.md, The request). */
export const WEBHOOK_USER_AGENT = 'Svc-Webhooks/1.0';
/** An answer body is read up to this and thrown away: a hostile endpoint cannot make us hold more. */
export const WEBHOOK_MAX_ANSWER_BYTES = 64 * 1024;
/** Sweeps look at work left this long after it was due: by then it is orphaned, not just in progress. */
const SWEEP_GRACE_MS = 60_000;
const SWEEP_BATCH = 500;
/** Pending deliveries rescheduled at a start; any beyond are overdue soon after and the sweeper takes them. */
const RESUME_LIMIT = 100_000;

export interface WebhooksDeps {
  deliveries: WebhookDeliveriesRepository;
  keys: Pick<ApiKeysRepository, 'get'>;
  audit: Pick<AuditLog, 'append'>;
  post: WebhookPost;
  /** Runs `attempt(id)` after a delay (in-process timers, or the `MF_WEBHOOKS` work queue). */
  schedule(deliveryId: string, delayMs: number): void;
  clock: Clock;
  logger: Logger;
  /** `WEBHOOK_RETRY_DELAYS_MS`: the delay before retry 1, 2, 3. */
  retryDelaysMs: number[];
  /** `WEBHOOK_TIMEOUT_MS`: one attempt, DNS to the last byte read. */
  timeoutMs: number;
  /** `WEBHOOK_ALLOW_PRIVATE`: loopback/private targets and plain http (tests). */
  allowPrivate: boolean;
  /** `JOB_RETENTION_DAYS`: deliveries go with the jobs they announce. */
  retentionDays: number;
}

/** The `X-Svc-Event` of each terminal status (a cancelled job's: docs/decisions.md, Webhooks). */
const EVENTS = { completed: 'job.completed', failed: 'job.failed', cancelled: 'job.cancelled' } as const;

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

/** Test deliveries' ids: `dlv_test_…`, announcing the made-up job `job_test_…` (docs/webhooks.md). */
const TEST_JOB_PREFIX = 'job_test_';

/** A `job.completed` body of a job that never ran, marked `"test": true` (docs/webhooks.md "Test deliveries"). */
export function testDeliveryBody(jobId: string, at: Date): string {
  return JSON.stringify({
    job_id: jobId,
    status: 'completed',
    model: 'test',
    type: 'image',
    credits_consumed: 0,
    created_at: at.toISOString(),
    completed_at: at.toISOString(),
    result: { images: [] },
    error: null,
    test: true,
  });
}

type Verdict = 'delivered' | 'retry' | 'final';

/**
 * Retries and time-outs (docs/webhooks.md): 2xx ends it; no answer, 3xx (redirects are not followed), 5xx,
 * 408 and 429 retry; other 4xx end it.
 */
function judge(status: number | null): Verdict {
  if (status === null) return 'retry';
  if (status >= 200 && status <= 299) return 'delivered';
  if (status >= 400 && status <= 499 && status !== 408 && status !== 429) return 'final';
  return 'retry';
}

/**
 * Signed job-completion webhooks (docs/webhooks.md). A job that ends is announced (`jobFinished`, the jobs'
 * `job.finished` subscriber, told again by their outbox until it succeeds): when its key has a URL, a delivery
 * with the body fixed is stored and scheduled, once however often the job is announced. Each attempt reads
 * the key's URL and secret afresh (a cleared URL drops the delivery, a rotated secret signs the next
 * attempt), signs the body with a new timestamp, POSTs it through the egress guard and records the attempt
 * with the delivery and in the audit log. Attempts are independent of each other: a slow endpoint holds only
 * its own.
 */
export function createWebhooks(deps: WebhooksDeps) {
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
      event: EVENTS[status],
      body: deliveryBody(job),
      state: 'pending',
      attempts: [],
      next_attempt_at: now,
      created_at: now,
      updated_at: now,
    };
    if (await deliveries.insert(delivery)) deps.schedule(delivery.id, 0);
  }

  async function send(delivery: WebhookDelivery, url: string, secret: string, number: number) {
    const timestamp = Math.floor(clock.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      'x-svc-event': delivery.event,
      'x-svc-timestamp': String(timestamp),
      'x-svc-signature': webhookSignature(secret, timestamp, delivery.body),
      'x-svc-delivery-id': delivery.id,
    };
    const started = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    try {
      ({ status } = await deps.post(url, delivery.body, headers, {
        allowPrivate: deps.allowPrivate,
        timeoutMs: deps.timeoutMs,
        maxBytes: WEBHOOK_MAX_ANSWER_BYTES,
        userAgent: WEBHOOK_USER_AGENT,
      }));
    } catch (failure) {
      error = failure instanceof Error ? failure.message : 'the request failed';
    }
    const attempt: WebhookAttempt = {
      attempt: number,
      at: new Date(clock.now()),
      url,
      status,
      error,
      duration_ms: Math.round(performance.now() - started),
    };
    return attempt;
  }

  function auditAttempt(delivery: WebhookDelivery, sent: WebhookAttempt): Promise<void> {
    return deps.audit.append({
      kind: 'webhook_attempt',
      ts: sent.at.toISOString(),
      key_id: delivery.key_id,
      user_id: delivery.user_id,
      delivery_id: delivery.id,
      job_id: delivery.job_id,
      event: delivery.event,
      attempt: sent.attempt,
      url: sent.url,
      status: sent.status,
      error: sent.error,
      duration_ms: sent.duration_ms,
    });
  }

  /** Keys with a test delivery under way: one at a time per key, so a button held down sends one. */
  const testsUnderWay = new Set<string>();

  /**
   * A test delivery to the key's webhook (docs/webhooks.md "Test deliveries"): a sample body, signed and sent
   * as every delivery is, exactly once (no retries), then recorded in the key's delivery log and the audit
   * log like any attempt. Answers the recorded delivery, whatever the receiver said.
   */
  async function sendTest(keyId: string): Promise<WebhookDelivery> {
    const key = await deps.keys.get(keyId);
    if (!key) throw new AppError('not_found', 'API key not found');
    if (!key.webhook) throw new AppError('conflict', 'This key has no webhook URL: set one first');
    if (testsUnderWay.has(key.id)) {
      throw new AppError('conflict', 'A test delivery of this key is under way');
    }
    testsUnderWay.add(key.id);
    try {
      const now = new Date(clock.now());
      const suffix = randomBase62(16);
      const jobId = TEST_JOB_PREFIX + suffix;
      const delivery: WebhookDelivery = {
        id: TEST_DELIVERY_PREFIX + suffix,
        key_id: key.id,
        user_id: key.user_id,
        job_id: jobId,
        event: EVENTS.completed,
        body: testDeliveryBody(jobId, now),
        state: 'pending',
        attempts: [],
        next_attempt_at: null,
        created_at: now,
        updated_at: now,
      };
      const sent = await send(delivery, key.webhook.url, key.webhook.secret, 1);
      // Stored once, already final: nothing is ever pending, so no sweep or restart sends it again.
      const recorded: WebhookDelivery = {
        ...delivery,
        state: judge(sent.status) === 'delivered' ? 'delivered' : 'failed',
        attempts: [sent],
        updated_at: sent.at,
      };
      await deliveries.insert(recorded);
      await auditAttempt(recorded, sent);
      logger.info(
        { delivery_id: recorded.id, key_id: key.id, status: sent.status, error: sent.error },
        'webhook test delivery',
      );
      return recorded;
    } finally {
      testsUnderWay.delete(key.id);
    }
  }

  /** One attempt of a delivery: 'done', or the delay before the next one. Safe to run twice (redelivery). */
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
    const sent = await send(delivery, webhook.url, webhook.secret, number);
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
    await auditAttempt(delivery, sent);
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
    sendTest,

    /** After a start: schedules every pending delivery at its time (in-process timers forgot them). */
    async resume(): Promise<number> {
      let resumed = 0;
      for (const delivery of await deliveries.pendingDueBefore(new Date(8.64e15), RESUME_LIMIT)) {
        deps.schedule(delivery.id, Math.max(0, delivery.next_attempt_at!.getTime() - clock.now()));
        resumed++;
      }
      return resumed;
    },

    /**
     * The safety nets: pending deliveries long overdue (a lost schedule) are scheduled again, and deliveries
     * past retention are removed. (Jobs whose announcement was lost are the jobs' outbox's: job-outbox.ts.)
     */
    async sweep(): Promise<void> {
      const now = clock.now();
      const overdue = new Date(now - SWEEP_GRACE_MS - deps.timeoutMs);
      for (const delivery of await deliveries.pendingDueBefore(overdue, SWEEP_BATCH))
        deps.schedule(delivery.id, 0);
      await deliveries.deleteCreatedBefore(new Date(now - deps.retentionDays * 24 * 60 * 60 * 1000));
    },
  };
}

export type Webhooks = ReturnType<typeof createWebhooks>;
