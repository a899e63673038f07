import type { Logger } from 'pino';
import type { UserCredits } from '../../actors/index.ts';
import type { Clock, WorkScheduler, MediaStore } from '../platform/index.ts';
import { discardFetchedInputs } from './inbound-images.ts';
import { settleRefund, undoSubmit } from './job-refunds.ts';
import type { JobRecord, JobsRepository } from './ports/jobs-repository.ts';

const BATCH = 100;
const DAY_MS = 24 * 60 * 60_000;

export interface JobSweeperDeps {
  jobs: JobsRepository;
  credits: Pick<UserCredits, 'refund'>;
  store: MediaStore;
  poller: WorkScheduler;
  clock: Clock;
  logger: Logger;
  retentionDays: number;
  /** A `submitting` job older than this was left by a crash (a submit takes seconds: debit, provider call). */
  abandonedSubmitMs: number;
  pollIntervalMs: number;
  /** Told of a `failing` job whose refund the sweeper confirmed, making it `failed`. */
  onFinished?(job: JobRecord): void;
}

/**
 * The background repairs of the job lifecycle, driven by the `Clock` port (jongodb never enforces TTL
 * indexes): refunds and removes jobs a crash left in `submitting`, finishes refunds that were not confirmed,
 * re-schedules polls of processing jobs nobody is polling, and removes jobs (with their media) past retention.
 * Safe on every node at once: every step is conditional or idempotent.
 */
export function createJobSweeper(deps: JobSweeperDeps) {
  const { jobs, clock, logger } = deps;

  async function abandonedSubmits(): Promise<number> {
    const stale = await jobs.inStatus('submitting', new Date(clock.now() - deps.abandonedSubmitMs), BATCH);
    let repaired = 0;
    for (const job of stale) {
      // The refund names the debit, so it gives back only what was taken (nothing if the crash came first).
      if (await undoSubmit(deps, job)) repaired++;
    }
    if (repaired > 0) logger.warn({ jobs: repaired }, 'refunded and removed jobs a crash left in submitting');
    return repaired;
  }

  async function unconfirmedRefunds(): Promise<number> {
    let settled = 0;
    for (const job of await jobs.refundsDue(BATCH)) {
      if (await settleRefund(deps, job, job.refunded_credits)) settled++;
    }
    return settled;
  }

  /** Schedules a poll of every job processing since before `before` (a no-op where one is scheduled). */
  async function pollProcessing(before: Date, limit: number): Promise<number> {
    const processing = await jobs.inStatus('processing', before, limit);
    for (const job of processing) deps.poller.schedule(job.id, 0);
    return processing.length;
  }

  async function expired(): Promise<number> {
    const old = await jobs.createdBefore(new Date(clock.now() - deps.retentionDays * DAY_MS), BATCH);
    for (const job of old) {
      if (job.status === 'processing' || job.status === 'submitting' || job.refund_due) continue;
      for (const id of job.media_ids) await deps.store.delete(id);
      await discardFetchedInputs(deps.store, job.generation);
      await jobs.delete(job.id);
    }
    return old.length;
  }

  return {
    /** At start-up: polls every job still processing (a restart forgot the timers). */
    resume: () => pollProcessing(new Date(clock.now() + 1), 10_000),
    /** One pass of every repair; returns what each did (for tests and logs). */
    async sweep() {
      return {
        abandoned: await abandonedSubmits(),
        refunds: await unconfirmedRefunds(),
        // Processing jobs that nobody polled for a while (a node that held their timers died).
        polls: await pollProcessing(new Date(clock.now() - 3 * deps.pollIntervalMs), 1000),
        expired: await expired(),
      };
    },
  };
}
