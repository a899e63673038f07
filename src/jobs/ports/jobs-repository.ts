import type { Generation, ProviderHandle } from './media-provider.ts';

/**
 * Where a job is in its life (docs/api.md, States). Two states are internal and never shown: `submitting`
 * (written before the debit) and `failing` (failed, refund not yet confirmed; shown as `processing`, so that
 * a job the API calls `failed` has always been refunded).
 */
export type JobStatus = 'submitting' | 'processing' | 'failing' | 'completed' | 'failed' | 'cancelled';

/** A finished job's files, as public URLs (docs/api.md, The Job object). */
export type JobResult = { video: string } | { images: string[] };

/** The editor turn a job was made for (docs/editor.md, Agent turns): its media become project assets. */
export interface JobOrigin {
  project_id: string;
  video_id: string;
  turn_id: string;
}

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
   * Terminal, and not every `job.finished` subscriber (webhooks, the editor's generated assets) has handled
   * it yet: the outbox flag, set in the same write that ends the job and cleared once they all have
   * (job-outbox.ts). The outbox sweep announces flagged jobs again, so a crash right after a job ends loses
   * no webhook and no asset.
   */
  notify_due: boolean;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  /** When the job fails for good if the provider has not finished (`PROVIDER_TIMEOUT_MS`). */
  deadline_at: Date;
  /** Set for media an editor turn generated. */
  origin?: JobOrigin;
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
  /** Clears `notify_due` (one write for the whole batch; nothing for none). */
  notified(ids: string[]): Promise<void>;
  /** Jobs created before `before` (retention), oldest first. */
  createdBefore(before: Date, limit: number): Promise<JobRecord[]>;
  delete(id: string): Promise<void>;
}
