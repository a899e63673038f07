import type { Logger } from 'pino';
import type { UserCredits } from '../../actors/index.ts';
import { type Clock, type PollVerdict, extensionFor, type MediaStore } from '../platform/index.ts';
import { settleRefund } from './job-refunds.ts';
import type { MediaProvider, ProviderOutput } from './ports/media-provider.ts';
import type { JobOutcome, JobRecord, JobsRepository } from './ports/jobs-repository.ts';

export interface JobCompletionDeps {
  jobs: JobsRepository;
  credits: Pick<UserCredits, 'refund'>;
  provider: MediaProvider;
  store: MediaStore;
  clock: Clock;
  logger: Logger;
  publicBaseUrl: string;
  newMediaId(extension: string): string;
  /** Told once of each job a poll made `completed` or, through its confirmed refund, `failed` (the outbox). */
  onFinished?(job: JobRecord): void;
}

/** Largest single output we copy from a provider. */
const OUTPUT_MAX_BYTES = 1024 * 1024 * 1024;

/**
 * One poll of one processing job (docs/api.md, States): still running → poll again; finished → copy the
 * outputs into our store and complete; provider failure, empty output or time-out → fail and refund. Every
 * move is conditional on `processing`, so a cancel that won the race leaves the poll with nothing to do.
 */
export interface JobCompletion {
  /** Polls the provider once for `jobId`. Errors talking to the provider mean "try again later". */
  poll(jobId: string): Promise<PollVerdict>;
}

/** The job poll the poll queue runs (the in-process timers or JetStream `MF_JOBS`). */
export function createJobCompletion(deps: JobCompletionDeps): JobCompletion {
  const { jobs, provider, clock, logger } = deps;

  async function finish(job: JobRecord, outcome: JobOutcome): Promise<PollVerdict> {
    const finished = await jobs.finish(job.id, ['processing'], outcome, new Date(clock.now()));
    if (!finished) {
      // Someone else (a cancel, another node's poll) moved it first: drop the files we copied for nothing.
      await Promise.all((outcome.media_ids ?? []).map((id) => deps.store.delete(id).catch(() => undefined)));
      return 'done';
    }
    if (finished.status === 'failing') {
      // `failed` (and its announcement) comes with the confirmed refund, here or from the sweeper.
      await settleRefund(deps, finished, finished.refunded_credits);
      return 'done';
    }
    logger.info({ job_id: job.id, status: finished.status }, 'job finished');
    deps.onFinished?.(finished);
    return 'done';
  }

  const fail = (job: JobRecord, error: string) =>
    finish(job, { status: 'failing', error, refund: job.credits });

  /** Copies the provider's files into our store (so URLs outlive the provider's), newest job's ids. */
  async function copyOutputs(outputs: ProviderOutput[]): Promise<string[]> {
    const ids: string[] = [];
    try {
      for (const output of outputs) {
        const contentType = output.contentType.split(';')[0]!.trim().toLowerCase();
        const id = deps.newMediaId(extensionFor(contentType));
        await deps.store.put(id, await output.open(), contentType, { maxBytes: OUTPUT_MAX_BYTES });
        ids.push(id);
      }
      return ids;
    } catch (error) {
      await Promise.all(ids.map((id) => deps.store.delete(id).catch(() => undefined)));
      throw error;
    }
  }

  return {
    async poll(jobId) {
      const job = await jobs.get(jobId);
      if (!job || job.status !== 'processing' || !job.provider) return 'done';
      const log = logger.child({ job_id: job.id });
      const handle = job.provider;
      if (clock.now() >= job.deadline_at.getTime()) {
        void provider.cancel(handle).catch(() => false);
        const limit = job.deadline_at.getTime() - job.created_at.getTime();
        return fail(job, `The provider did not finish within ${limit} ms`);
      }
      try {
        const status = await provider.status(handle);
        if (status.state === 'queued' || status.state === 'running') return 'again';
        if (status.state === 'failed') return await fail(job, status.error);
        const result = await provider.result(handle);
        if (!result.ok) return await fail(job, result.error);
        if (result.outputs.length === 0) return await fail(job, 'The provider finished without any output');
        const mediaIds = await copyOutputs(result.outputs);
        const urls = mediaIds.map((id) => `${deps.publicBaseUrl}/media/${id}`);
        return await finish(job, {
          status: 'completed',
          media_ids: mediaIds,
          result: job.type === 'video' ? { video: urls[0]! } : { images: urls },
        });
      } catch (error) {
        log.warn({ err: error }, 'provider poll failed; retrying at the next poll');
        return 'again';
      }
    },
  };
}
