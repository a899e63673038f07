import type { ImageGenerateRequest, JobView, VideoGenerateRequest } from '../../schemas/jobs.ts';
import { AppError, type KeyPrincipal } from '../platform/index.ts';
import type { InboundImages } from './inbound-images.ts';
import { toJobView } from './job-view.ts';
import { settleRefund } from './job-refunds.ts';
import { imageRequest, videoRequest } from './generation-requests.ts';
import {
  submitJob,
  type JobSubmissionDeps,
  type SubmitAnswer,
  type SubmitOptions,
} from './job-submission.ts';
import type { JobRecord, JobStatus } from './ports/jobs-repository.ts';

/** Submitting, reading, listing and cancelling generation jobs (docs/api.md, Routes; States). */
export interface JobsService {
  /**
   * `POST /api/v1/video/vidmodel-2/generate` with a body validated by its schema and rules (schemas/jobs.ts):
   * charged, handed to the provider and `processing` when it answers.
   */
  submitVideo(
    principal: KeyPrincipal,
    body: VideoGenerateRequest,
    options?: SubmitOptions,
  ): Promise<SubmitAnswer>;
  /** `POST /api/v1/image/nano-banana/generate` with a body validated by its schema and rules (schemas/jobs.ts). */
  submitImage(
    principal: KeyPrincipal,
    body: ImageGenerateRequest,
    options?: SubmitOptions,
  ): Promise<SubmitAnswer>;
  /** `GET /api/v1/jobs/<job_id>`: 404 for unknown jobs and for other users' jobs alike. */
  get(userId: string, jobId: string): Promise<JobView>;
  /** `GET /api/v1/jobs` (docs/api.md): newest first, with an opaque cursor. */
  list(userId: string, query: JobListOptions): Promise<JobPage>;
  /** `DELETE /api/v1/jobs/<job_id>`: processing → cancelled with a full refund; 409 from any other state. */
  cancel(userId: string, jobId: string): Promise<CancelAnswer>;
}

/** The query of `GET /api/v1/jobs`, defaults filled in. */
export interface JobListOptions {
  limit: number;
  status?: JobStatus;
  /** The previous page's `next_cursor`. */
  cursor?: string;
}

// The two answers below are object types, not interfaces: MCP tools return them as structured content,
// which must be assignable to a record.

/** One page of `GET /api/v1/jobs`: `next_cursor` is null on the last page. */
export type JobPage = {
  jobs: JobView[];
  next_cursor: string | null;
};

/** The answer of `DELETE /api/v1/jobs/<job_id>`. */
export type CancelAnswer = {
  job_id: string;
  status: 'cancelled';
  refunded_credits: number;
};

/** What the jobs service works with: the submit protocol's needs, the inbound images and the outbox. */
export interface JobsServiceDeps extends JobSubmissionDeps {
  inbound: InboundImages;
  /** Told of a job this service ended (a cancel): the outbox announces it. */
  onFinished?(job: JobRecord): void;
}

/** The jobs service: submits go through the submit protocol (job-submission.ts), the rest reads and cancels. */
export function createJobsService(deps: JobsServiceDeps): JobsService {
  const { jobs, credits, provider, clock, logger } = deps;

  async function owned(userId: string, jobId: string): Promise<JobRecord> {
    const job = await jobs.get(jobId);
    if (!job || job.user_id !== userId || job.status === 'submitting') {
      throw new AppError('not_found', 'Job not found');
    }
    return job;
  }

  return {
    async submitVideo(principal, body, options = {}) {
      return submitJob(deps, principal, videoRequest(body, deps.inbound), options);
    },

    async submitImage(principal, body, options = {}) {
      return submitJob(deps, principal, imageRequest(body, deps.inbound), options);
    },

    async get(userId, jobId) {
      return toJobView(await owned(userId, jobId));
    },

    async list(userId, query) {
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

    async cancel(userId, jobId) {
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
      return { job_id: job.id, status: 'cancelled', refunded_credits: cancelled.refunded_credits };
    },
  };
}

function encodeCursor(job: JobRecord): string {
  return Buffer.from(`${job.created_at.getTime()}:${job.id}`).toString('base64url');
}

function decodeCursor(cursor: string): { created_at: Date; id: string } {
  const match = /^(\d{1,15}):(job_[0-9A-Za-z]{1,40})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match) throw new AppError('bad_request', 'cursor is invalid');
  return { created_at: new Date(Number(match[1])), id: match[2]! };
}
