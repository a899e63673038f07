import { randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import type { ImageGenerateRequest, JobView, VideoGenerateRequest } from '../../schemas/jobs.ts';
import type { UserCredits } from '../../actors/index.ts';
import {
  AppError,
  newId,
  type Clock,
  type KeyPrincipal,
  type MediaStore,
  type WorkScheduler,
} from '../platform/index.ts';
import { MODEL_IDS, imageCost, videoCost } from '../../schemas/models-catalog.ts';
import { discardFetchedInputs, type InboundImages } from './inbound-images.ts';
import { toJobView } from './job-view.ts';
import { debitOpId, settleRefund, undoSubmit } from './job-refunds.ts';
import { ProviderRejection, type Generation, type MediaProvider } from './ports/media-provider.ts';
import type { JobOrigin, JobRecord, JobsRepository, JobStatus } from './ports/jobs-repository.ts';

/** Schedules a processing job's next provider poll (the in-process timer queue or JetStream `MF_JOBS`). */

export interface JobsServiceDeps {
  jobs: JobsRepository;
  credits: Pick<UserCredits, 'debit' | 'refund'>;
  /**
   * The user's balance as stored now: read before anything costly (fetching input images) to refuse a user
   * who cannot pay at once. Only a pre-check: the user actor's debit stays the authority on the balance.
   */
  balanceOf(userId: string): Promise<number>;
  provider: MediaProvider;
  inbound: InboundImages;
  store: MediaStore;
  poller: WorkScheduler;
  /** Told of a job this service ended (a cancel): the outbox announces it. */
  onFinished?(job: JobRecord): void;
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

const SEED_MAX = 2 ** 31 - 1;

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

/** Options of a submit beyond its body. */
export interface SubmitOptions {
  /** The editor turn the job is generated for. */
  origin?: JobOrigin;
}

/** Submitting, reading, listing and cancelling generation jobs (docs/api.md, Routes; States). */
export function createJobsService(deps: JobsServiceDeps) {
  const { jobs, credits, provider, clock, logger } = deps;

  /**
   * The submit protocol (docs/architecture.md): the job is written first (`submitting`, naming its debit),
   * then the debit, then the provider call, then `processing`. A crash anywhere leaves a `submitting` job
   * that the sweeper refunds (only if the debit happened) and removes, so no credit is ever lost.
   */
  async function submit(
    principal: KeyPrincipal,
    model: string,
    type: JobRecord['type'],
    cost: number,
    buildGeneration: () => Promise<Generation>,
    options: SubmitOptions,
  ): Promise<SubmitAnswer> {
    // A user who cannot pay is refused before the inputs are fetched (up to 20 MiB each), with the debit's
    // own answer; a balance spent between this read and the debit is still refused by the debit below.
    const balance = await deps.balanceOf(principal.userId);
    if (balance < cost) throw insufficientCredits(cost, balance);
    const generation = await buildGeneration(); // input images fetched before anything is charged
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

    let handle;
    try {
      handle = await provider.submit(generation);
    } catch (error) {
      log.warn({ err: error }, 'provider refused the submission; refunding');
      await undoSubmit(deps, job);
      const reason = error instanceof ProviderRejection ? `: ${error.message}` : '';
      throw new AppError('bad_gateway', `Provider submission failed${reason}`);
    }
    if (!(await jobs.markProcessing(id, handle, new Date(clock.now())))) {
      // The sweeper took the job for abandoned (only after minutes): undo upstream and here.
      void provider.cancel(handle).catch(() => false);
      await undoSubmit(deps, job);
      throw new AppError('bad_gateway', 'Provider submission failed: the request took too long');
    }
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

  async function owned(userId: string, jobId: string): Promise<JobRecord> {
    const job = await jobs.get(jobId);
    if (!job || job.user_id !== userId || job.status === 'submitting') {
      throw new AppError('not_found', 'Job not found');
    }
    return job;
  }

  return {
    /** `POST /api/v1/video/vidmodel-2/generate` with a body validated by its schema and rules (schemas/jobs.ts). */
    async submitVideo(
      principal: KeyPrincipal,
      body: VideoGenerateRequest,
      options: SubmitOptions = {},
    ): Promise<SubmitAnswer> {
      const model = body.fast ? MODEL_IDS.videoFast : MODEL_IDS.video;
      const cost = videoCost({
        fast: body.fast,
        resolution: body.resolution,
        durationSeconds: body.duration_seconds,
        generateAudio: body.generate_audio,
      });
      return submit(
        principal,
        model,
        'video',
        cost,
        async () => ({
          capability: body.fast ? 'fast-text-to-video' : body.image_url ? 'image-to-video' : 'text-to-video',
          prompt: body.prompt,
          duration_seconds: body.duration_seconds,
          aspect_ratio: body.aspect_ratio,
          resolution: body.resolution,
          generate_audio: body.generate_audio,
          seed: body.seed ?? randomInt(SEED_MAX),
          ...(body.image_url ? { image: await deps.inbound.resolve(body.image_url, 'image_url') } : {}),
        }),
        options,
      );
    },

    /** `POST /api/v1/image/nano-banana/generate` with a body validated by its schema and rules (schemas/jobs.ts). */
    async submitImage(
      principal: KeyPrincipal,
      body: ImageGenerateRequest,
      options: SubmitOptions = {},
    ): Promise<SubmitAnswer> {
      return submit(
        principal,
        MODEL_IDS.image,
        'image',
        imageCost(body.num_images),
        async () => ({
          capability: body.image_urls.length > 0 ? 'image-edit' : 'text-to-image',
          prompt: body.prompt,
          num_images: body.num_images,
          aspect_ratio: body.aspect_ratio,
          seed: body.seed ?? randomInt(SEED_MAX),
          images: await deps.inbound.resolveAll(body.image_urls, 'image_urls'),
        }),
        options,
      );
    },

    /** `GET /api/v1/jobs/<job_id>`: 404 for unknown jobs and for other users' jobs alike. */
    async get(userId: string, jobId: string): Promise<JobView> {
      return toJobView(await owned(userId, jobId));
    },

    /** `GET /api/v1/jobs` (docs/api.md): newest first, with an opaque cursor. */
    async list(userId: string, query: { limit: number; status?: JobStatus; cursor?: string }) {
      const after = query.cursor ? decodeCursor(query.cursor) : undefined;
      const page = await jobs.list(userId, {
        limit: query.limit + 1,
        ...(query.status ? { status: query.status } : {}),
        ...(after ? { after } : {}),
      });
      const more = page.length > query.limit;
      const shown = page.slice(0, query.limit);
      const last = shown.at(-1);
      return { jobs: shown.map(toJobView), next_cursor: more && last ? encodeCursor(last) : null };
    },

    /** `DELETE /api/v1/jobs/<job_id>`: processing → cancelled with a full refund; 409 from any other state. */
    async cancel(userId: string, jobId: string) {
      const job = await owned(userId, jobId);
      // A `failing` job still shows as processing, so it can be cancelled: both owe the same full refund.
      const cancelled = await jobs.finish(
        job.id,
        ['processing', 'failing'],
        { status: 'cancelled', refund: job.credits },
        new Date(clock.now()),
      );
      if (!cancelled)
        throw new AppError('conflict', `Job is already ${(await jobs.get(job.id))?.status ?? job.status}`);
      await settleRefund({ credits, jobs, logger }, cancelled, cancelled.refunded_credits);
      deps.onFinished?.(cancelled);
      if (cancelled.provider) {
        const handle = cancelled.provider;
        void provider.cancel(handle).catch((error: unknown) => {
          logger.warn({ err: error, job_id: job.id }, 'provider cancel failed');
        });
      }
      return { job_id: job.id, status: 'cancelled' as const, refunded_credits: cancelled.refunded_credits };
    },
  };
}

export type JobsService = ReturnType<typeof createJobsService>;

/** 402 as docs/errors.md has it: `{ error, credits_required, credits_remaining }`. */
function insufficientCredits(required: number, remaining: number): AppError {
  return new AppError('insufficient_credits', 'Insufficient credits', {
    credits_required: required,
    credits_remaining: remaining,
  });
}

function encodeCursor(job: JobRecord): string {
  return Buffer.from(`${job.created_at.getTime()}:${job.id}`).toString('base64url');
}

function decodeCursor(cursor: string): { created_at: Date; id: string } {
  const match = /^(\d{1,15}):(job_[0-9A-Za-z]{1,40})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match) throw new AppError('bad_request', 'cursor is invalid');
  return { created_at: new Date(Number(match[1])), id: match[2]! };
}
