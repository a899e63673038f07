import type { Scope } from '../domain/scopes.ts';
import type { Generation, ProviderHandle } from './media-ports.ts';

/** A user account as stored. */
export interface UserRecord {
  id: string;
  email: string;
  credits: number;
  created_at: Date;
}

/** An API key as stored: never the key itself, only its hash and display prefix. */
export interface ApiKeyRecord {
  id: string;
  user_id: string;
  name: string;
  scopes: Scope[];
  hash: string;
  prefix: string;
  created_at: Date;
  revoked_at: Date | null;
  webhook: { url: string; secret: string } | null;
}

/** One credit change, as the ledger keeps it. */
export interface LedgerEntry {
  id: string;
  user_id: string;
  op_id: string;
  seq: number;
  delta: number;
  balance_after: number;
  reason: string;
  job_id?: string;
  created_at: Date;
}

/** A credit change request: applied at most once per (user, op_id). */
export interface CreditChange {
  userId: string;
  opId: string;
  delta: number;
  reason: string;
  jobId?: string;
  /**
   * The op_id of the change this one gives back (a refund names its debit): applied only once that change is
   * in the ledger, so a refund can never hand out credits that were never taken.
   */
  reverses?: string;
}

export type CreditChangeResult =
  | { kind: 'applied'; entry: LedgerEntry; replayed: boolean }
  | { kind: 'insufficient'; credits_required: number; credits_remaining: number }
  | { kind: 'nothing_to_reverse'; credits_remaining: number }
  | { kind: 'no_user' };

/** Users storage (port). */
export interface UsersRepository {
  create(user: UserRecord): Promise<'created' | 'email_taken'>;
  get(id: string): Promise<UserRecord | null>;
  /** A page ordered by creation; `after` is the last user of the previous page. */
  list(limit: number, after?: { created_at: Date; id: string }): Promise<UserRecord[]>;
}

/** API keys storage (port). */
export interface ApiKeysRepository {
  create(key: ApiKeyRecord): Promise<void>;
  get(id: string): Promise<ApiKeyRecord | null>;
  findByHash(hash: string): Promise<ApiKeyRecord | null>;
  listForUser(userId: string): Promise<ApiKeyRecord[]>;
  revoke(id: string, at: Date): Promise<ApiKeyRecord | null>;
  setWebhook(id: string, webhook: { url: string; secret: string } | null): Promise<void>;
}

/** The credit ledger (port): balance and entry change together, once per op_id. */
export interface CreditLedger {
  apply(change: CreditChange): Promise<CreditChangeResult>;
  entries(userId: string, limit: number): Promise<LedgerEntry[]>;
}

/**
 * Where a job is in its life (spec §3.1). Two states are internal and never shown: `submitting` (written
 * before the debit) and `failing` (failed, refund not yet confirmed; shown as `processing`, so that a job the
 * API calls `failed` has always been refunded).
 */
export type JobStatus = 'submitting' | 'processing' | 'failing' | 'completed' | 'failed' | 'cancelled';

/** A finished job's files, as public URLs (spec §2.3). */
export type JobResult = { video: string } | { images: string[] };

/** A generation job as stored. */
export interface JobRecord {
  id: string;
  user_id: string;
  key_id: string;
  type: 'video' | 'image';
  /** The model id (`vidmodel-2.0`, `vidmodel-2.0-fast`, `imgmodel-2`). */
  model: string;
  status: JobStatus;
  /** What the provider is asked for, defaults and seed fixed (input images already in our store). */
  generation: Generation;
  /** The charge (`credits_consumed`), and how much of it was given back. */
  credits: number;
  refunded_credits: number;
  /** The op_id of the debit; refunds name it (`reverses`), so they can never exceed what was taken. */
  debit_op_id: string;
  /** Set once the provider accepted the request. */
  provider: ProviderHandle | null;
  result: JobResult | null;
  /** Media ids of the result files in our store (removed with the job). */
  media_ids: string[];
  error: string | null;
  /** A terminal state that owes a refund not yet confirmed by the user actor (a sweeper finishes it). */
  refund_due: boolean;
  /**
   * Terminal, and the webhook service has not yet been told for sure (an outbox flag, set in the same write
   * that ends the job): the sweeper tells it again, so a crash right after a job ends loses no webhook.
   */
  notify_due: boolean;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  /** When the job fails for good if the provider has not finished (`PROVIDER_TIMEOUT_MS`). */
  deadline_at: Date;
}

/** A move out of `processing`: terminal, or `failing` until the refund is confirmed. */
export interface JobOutcome {
  status: 'completed' | 'failing' | 'cancelled';
  result?: JobResult;
  media_ids?: string[];
  error?: string;
  /** Credits to give back; sets `refund_due` until the refund is confirmed. */
  refund?: number;
}

/** Jobs storage (port). Every state change is conditional on the state it leaves. */
export interface JobsRepository {
  insert(job: JobRecord): Promise<void>;
  get(id: string): Promise<JobRecord | null>;
  /** The user's jobs, newest first; `after` is the last job of the previous page. */
  list(
    userId: string,
    options: { limit: number; status?: JobStatus; after?: { created_at: Date; id: string } },
  ): Promise<JobRecord[]>;
  /** `submitting` → `processing` with the provider's handle; false when the job is no longer submitting. */
  markProcessing(id: string, handle: ProviderHandle, now: Date): Promise<boolean>;
  /** Leaves one of `from` for `outcome`; null when the job was in none of them (someone else moved it). */
  finish(id: string, from: JobStatus[], outcome: JobOutcome, now: Date): Promise<JobRecord | null>;
  /**
   * The job's refund is confirmed: clears `refund_due`, and a `failing` job becomes `failed`. Returns the job
   * when this call made it `failed` (so the caller announces it), null otherwise.
   */
  refundConfirmed(id: string): Promise<JobRecord | null>;
  /** Removes a job still in `status` (the submitting sweeper); false when it moved on meanwhile. */
  removeIf(id: string, status: JobStatus): Promise<boolean>;
  /** Jobs in `status` last changed before `before`, oldest first. */
  inStatus(status: JobStatus, before: Date, limit: number): Promise<JobRecord[]>;
  /** Failing or terminal jobs whose refund is not confirmed yet. */
  refundsDue(limit: number): Promise<JobRecord[]>;
  /** Terminal jobs with `notify_due` that ended before `before`, oldest first. */
  notifyDue(before: Date, limit: number): Promise<JobRecord[]>;
  /** Clears `notify_due` (one write for the whole batch). */
  notified(ids: string[]): Promise<void>;
  /** Jobs created before `before` (retention), oldest first. */
  createdBefore(before: Date, limit: number): Promise<JobRecord[]>;
  delete(id: string): Promise<void>;
}

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

/** The one delivery of one job's terminal state to the submitting key's webhook (spec §6). */
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
