import type { AuditLog, Clock } from '../platform/index.ts';
import { webhookSignature } from './webhook-signature.ts';
import type { WebhookAttempt, WebhookDelivery } from './ports/webhook-deliveries-repository.ts';
import type { WebhookPost } from './ports/webhook-post.ts';

/** The `User-Agent` of every delivery (docs/webhooks.md, The request). */
export const WEBHOOK_USER_AGENT = 'Svc-Webhooks/1.0';
/** An answer body is read up to this and thrown away: a hostile endpoint cannot make us hold more. */
export const WEBHOOK_MAX_ANSWER_BYTES = 64 * 1024;

/** The `X-Svc-Event` of each terminal status (a cancelled job's: docs/decisions.md, Webhooks). */
export const WEBHOOK_EVENTS = {
  completed: 'job.completed',
  failed: 'job.failed',
  cancelled: 'job.cancelled',
} as const;

/** What sending one attempt needs. */
export interface WebhookSendDeps {
  post: WebhookPost;
  clock: Clock;
  /** `WEBHOOK_TIMEOUT_MS`: one attempt, DNS to the last byte read. */
  timeoutMs: number;
  /** `WEBHOOK_ALLOW_PRIVATE`: loopback/private targets and plain http (tests). */
  allowPrivate: boolean;
}

/**
 * One attempt of `delivery` to `url` (docs/webhooks.md, The request): its fixed body, signed with `secret`
 * and a new timestamp, POSTed through the egress guard. Never rejects: no answer is an attempt with an error.
 */
export async function sendDelivery(
  deps: WebhookSendDeps,
  delivery: WebhookDelivery,
  url: string,
  secret: string,
  number: number,
): Promise<WebhookAttempt> {
  const { clock } = deps;
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

/** Writes an attempt to the audit log (`webhook_attempt`), as it is kept with its delivery. */
export function auditAttempt(
  audit: Pick<AuditLog, 'append'>,
  delivery: WebhookDelivery,
  sent: WebhookAttempt,
): Promise<void> {
  return audit.append({
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

/** What an attempt's answer means for its delivery. */
export type Verdict = 'delivered' | 'retry' | 'final';

/**
 * Retries and time-outs (docs/webhooks.md): 2xx ends it; no answer, 3xx (redirects are not followed), 5xx,
 * 408 and 429 retry; other 4xx end it.
 */
export function judge(status: number | null): Verdict {
  if (status === null) return 'retry';
  if (status >= 200 && status <= 299) return 'delivered';
  if (status >= 400 && status <= 499 && status !== 408 && status !== 429) return 'final';
  return 'retry';
}
