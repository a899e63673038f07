import type { Logger } from 'pino';
import type { UserCredits } from '../../actors/index.ts';
import {
  AppError,
  newId,
  type Clock,
  type KeyPrincipal,
  type MediaStore,
  type WorkScheduler,
} from '../platform/index.ts';
import { discardFetchedInputs } from './inbound-images.ts';
import { debitOpId, undoSubmit } from './job-refunds.ts';
import {
  ProviderRejection,
  type Generation,
  type MediaProvider,
  type ProviderHandle,
} from './ports/media-provider.ts';
import type { JobOrigin, JobRecord, JobsRepository } from './ports/jobs-repository.ts';

/** What the submit protocol works with. */
export interface JobSubmissionDeps {
  jobs: JobsRepository;
  credits: Pick<UserCredits, 'debit' | 'refund'>;
  /**
   * The user's balance as stored now: read before anything costly (fetching input images) to refuse a user
   * who cannot pay at once. Only a pre-check: the user actor's debit stays the authority on the balance.
   */
  balanceOf(userId: string): Promise<number>;
  provider: MediaProvider;
  store: MediaStore;
  /** Schedules a processing job's next provider poll (the in-process timer queue or JetStream `MF_JOBS`). */
  poller: WorkScheduler;
  clock: Clock;
  logger: Logger;
  providerTimeoutMs: number;
  pollIntervalMs: number;
}

/** The 202 answer of a submit (docs/api.md, POST /api/v1/video/vidmodel-2/generate). */
export interface SubmitAnswer {
  job_id: string;
  status: 'processing';
  model: string;
  credits_consumed: number;
  credits_remaining: number;
  poll_url: string;
}

/** Options of a submit beyond its body. */
export interface SubmitOptions {
  /** The editor turn the job is generated for. */
  origin?: JobOrigin;
}

/** A submit body priced for its model: what the protocol needs before anything is fetched or charged. */
export interface JobRequest {
  /** The model id (`vidmodel-2.0`, `vidmodel-2.0-fast`, `imgmodel-2`). */
  model: string;
  type: JobRecord['type'];
  /** The credits the job is charged (docs/api.md, Pricing). */
  cost: number;
  /** The provider request, input images fetched into our store: built only once the user can pay. */
  buildGeneration(): Promise<Generation>;
}

/** A job as the submit protocol first writes it: `submitting` (invisible), naming the debit to come. */
export function newJobRecord(fields: {
  id: string;
  principal: Pick<KeyPrincipal, 'userId' | 'keyId'>;
  type: JobRecord['type'];
  model: string;
  generation: Generation;
  credits: number;
  now: Date;
  providerTimeoutMs: number;
  origin?: JobOrigin;
}): JobRecord {
  const { id, now } = fields;
  return {
    id,
    user_id: fields.principal.userId,
    key_id: fields.principal.keyId,
    type: fields.type,
    model: fields.model,
    status: 'submitting',
    generation: fields.generation,
    credits: fields.credits,
    refunded_credits: 0,
    debit_op_id: debitOpId(id),
    provider: null,
    result: null,
    media_ids: [],
    error: null,
    refund_due: false,
    notify_due: false,
    created_at: now,
    updated_at: now,
    completed_at: null,
    deadline_at: new Date(now.getTime() + fields.providerTimeoutMs),
    ...(fields.origin ? { origin: fields.origin } : {}),
  };
}

/**
 * The submit protocol (docs/architecture.md): the job is written first (`submitting`, naming its debit),
 * then the debit, then the provider call, then `processing`. A crash anywhere leaves a `submitting` job
 * that the sweeper refunds (only if the debit happened) and removes, so no credit is ever lost.
 */
export async function submitJob(
  deps: JobSubmissionDeps,
  principal: KeyPrincipal,
  request: JobRequest,
  options: SubmitOptions,
): Promise<SubmitAnswer> {
  const { jobs, credits, clock, logger } = deps;
  const { model, type, cost } = request;
  // A user who cannot pay is refused before the inputs are fetched (up to 20 MiB each), with the debit's
  // own answer; a balance spent between this read and the debit is still refused by the debit below.
  const balance = await deps.balanceOf(principal.userId);
  if (balance < cost) throw insufficientCredits(cost, balance);
  const generation = await request.buildGeneration(); // input images fetched before anything is charged
  const job = newJobRecord({
    id: newId('job', 14),
    principal,
    type,
    model,
    generation,
    credits: cost,
    now: new Date(clock.now()),
    providerTimeoutMs: deps.providerTimeoutMs,
    ...(options.origin ? { origin: options.origin } : {}),
  });
  const id = job.id;
  try {
    await jobs.insert(job);
  } catch (error) {
    await discardFetchedInputs(deps.store, generation);
    throw error;
  }
  const log = logger.child({ job_id: id, user_id: principal.userId });

  const debit = await credits.debit(principal.userId, {
    op_id: job.debit_op_id,
    amount: cost,
    reason: 'job',
    job_id: id,
  });
  if (!debit.ok) {
    if (await jobs.removeIf(id, 'submitting')) await discardFetchedInputs(deps.store, generation);
    throw insufficientCredits(debit.credits_required, debit.credits_remaining);
  }

  const handle = await startAtProvider(deps, job, log);
  deps.poller.schedule(id, deps.pollIntervalMs);
  log.info({ model, credits: cost, endpoint: handle.endpoint }, 'job submitted');
  return {
    job_id: id,
    status: 'processing',
    model,
    credits_consumed: cost,
    credits_remaining: debit.credits_remaining,
    poll_url: `/api/v1/jobs/${id}`,
  };
}

/**
 * The protocol's last steps for a charged job: the provider call, then `processing`. Either failing undoes the
 * submit (refund, job and input copies removed) and answers 502.
 */
async function startAtProvider(
  deps: JobSubmissionDeps,
  job: JobRecord,
  log: Logger,
): Promise<ProviderHandle> {
  const { jobs, provider, clock } = deps;
  let handle;
  try {
    handle = await provider.submit(job.generation);
  } catch (error) {
    log.warn({ err: error }, 'provider refused the submission; refunding');
    await undoSubmit(deps, job);
    const reason = error instanceof ProviderRejection ? `: ${error.message}` : '';
    throw new AppError('bad_gateway', `Provider submission failed${reason}`);
  }
  if (!(await jobs.markProcessing(job.id, handle, new Date(clock.now())))) {
    // The sweeper took the job for abandoned (only after minutes): undo upstream and here.
    void provider.cancel(handle).catch(() => false);
    await undoSubmit(deps, job);
    throw new AppError('bad_gateway', 'Provider submission failed: the request took too long');
  }
  return handle;
}

/** 402 as docs/errors.md has it: `{ error, credits_required, credits_remaining }`. */
function insufficientCredits(required: number, remaining: number): AppError {
  return new AppError('insufficient_credits', 'Insufficient credits', {
    credits_required: required,
    credits_remaining: remaining,
  });
}
