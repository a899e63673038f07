import type { Logger } from 'pino';
import type { Clock, DomainEvents } from '../platform/index.ts';
import type { JobRecord, JobsRepository } from './ports/jobs-repository.ts';

/** What the jobs slice tells the rest of the service (`JobEvents` channel, created by the app). */
export type JobEvents = {
  /**
   * A job reached `completed`, `failed` (its refund confirmed) or `cancelled`. Told at least once per job,
   * on the node that ended it, and again by the outbox sweep (any node) until every subscriber handled it:
   * subscribers must be idempotent, and one whose work must not be lost returns a promise that rejects when
   * it is not done.
   */
  'job.finished': JobRecord;
};

/** Jobs that ended this long ago and are still unconfirmed are announced again (the live call had time). */
export const OUTBOX_GRACE_MS = 60_000;
const OUTBOX_BATCH = 500;

export interface JobOutboxDeps {
  jobs: Pick<JobsRepository, 'notifyDue' | 'notified'>;
  events: Pick<DomainEvents<JobEvents>, 'publish'>;
  clock: Clock;
  logger: Logger;
}

/**
 * The ended-job outbox: how `job.finished` reaches its subscribers (the webhooks, the editor's generated
 * assets) exactly as surely as the job ended. Crash-safety, step by step:
 * (1) the write that ends a job (`finish`, or `refundConfirmed` for `failed`) sets `notify_due` in the same
 * single-document write: a job is never terminal without its flag;
 * (2) `announce` publishes `job.finished` to every subscriber, each idempotent by the job id;
 * (3) only once every subscriber has handled it is the flag cleared, the last step.
 * The process dying after (1) — before (2), during it, or between (2) and (3) — leaves the flag set; so does
 * a subscriber failing. The sweep (every node) announces every job still flagged a minute after it ended and
 * clears the flags of those all subscribers handled: a job is announced at least once, and announcing it
 * again changes nothing. The grace keeps the sweep from racing a live announcement in progress.
 */
export interface JobOutbox {
  /** Steps (2) and (3) for one job that just ended. Never rejects: the sweep takes over on a failure. */
  announce(job: JobRecord): Promise<void>;
  /** Announces again the jobs ended before the grace and still unconfirmed; answers how many it confirmed. */
  sweep(): Promise<number>;
}

/** The outbox over the jobs' `notify_due` flags and the `job.finished` channel. */
export function createJobOutbox(deps: JobOutboxDeps): JobOutbox {
  const { jobs, events, clock, logger } = deps;

  return {
    async announce(job) {
      try {
        if (await events.publish('job.finished', job)) await jobs.notified([job.id]);
      } catch (error) {
        logger.warn(
          { err: error, job_id: job.id },
          'job end not confirmed; the outbox sweep announces it again',
        );
      }
    },

    async sweep() {
      const before = new Date(clock.now() - OUTBOX_GRACE_MS);
      let confirmed = 0;
      for (;;) {
        const due = await jobs.notifyDue(before, OUTBOX_BATCH);
        const handled: string[] = [];
        for (const job of due) if (await events.publish('job.finished', job)) handled.push(job.id);
        await jobs.notified(handled); // one write for the batch
        confirmed += handled.length;
        // A batch with an unconfirmed job is not read again now: it would come back first, again and again.
        if (due.length < OUTBOX_BATCH || handled.length < due.length) return confirmed;
      }
    },
  };
}
