/** One attempt of a webhook delivery, as kept with the delivery and written to the audit log. */
export interface WebhookAttempt {
  attempt: number;
  at: Date;
  url: string;
  /** The HTTP status answered, or null when there was no answer (`error` says why). */
  status: number | null;
  error: string | null;
  duration_ms: number;
}

/**
 * `pending`: an attempt is due at `next_attempt_at`; `delivered`: a 2xx was answered; `failed`: a final
 * 4xx, or the retries ran out; `dropped`: the key's webhook URL was cleared before it could be delivered.
 */
export type WebhookDeliveryState = 'pending' | 'delivered' | 'failed' | 'dropped';

/** The one delivery of one job's terminal state to the submitting key's webhook (docs/webhooks.md). */
export interface WebhookDelivery {
  id: string;
  key_id: string;
  user_id: string;
  job_id: string;
  /** `job.completed`, `job.failed` or `job.cancelled`. */
  event: string;
  /** The exact body bytes, fixed once: every attempt sends and signs these. */
  body: string;
  state: WebhookDeliveryState;
  attempts: WebhookAttempt[];
  next_attempt_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** Webhook deliveries storage (port). Changes are conditional on the delivery still being pending. */
export interface WebhookDeliveriesRepository {
  /** False when a delivery with this id exists already (the job was announced before). */
  insert(delivery: WebhookDelivery): Promise<boolean>;
  get(id: string): Promise<WebhookDelivery | null>;
  /**
   * Appends attempt number `attempts.length + 1` of a pending delivery and moves it to `state`; false when
   * the delivery is no longer pending or another attempt was recorded meanwhile (nothing changes then).
   */
  recordAttempt(
    delivery: WebhookDelivery,
    attempt: WebhookAttempt,
    state: WebhookDeliveryState,
    nextAttemptAt: Date | null,
  ): Promise<boolean>;
  /** Pending deliveries of the key become `dropped` (its URL was cleared). */
  dropPending(keyId: string, now: Date): Promise<number>;
  /** The key's deliveries, newest first. */
  listForKey(keyId: string, limit: number): Promise<WebhookDelivery[]>;
  /** Pending deliveries due before `before`, soonest first (restart resume, the sweeper's safety net). */
  pendingDueBefore(before: Date, limit: number): Promise<WebhookDelivery[]>;
  /** Removes deliveries created before `before` (retention); returns how many. */
  deleteCreatedBefore(before: Date): Promise<number>;
}
