import type { Logger } from 'pino';
import type { UserCredits } from '../../actors/index.ts';
import { discardFetchedInputs } from './inbound-images.ts';
import type { MediaStore } from '../platform/index.ts';
import type { JobRecord, JobsRepository } from './ports/jobs-repository.ts';

/** The op_id of a job's one debit and of its one refund: each happens at most once (the ledger's op_id rule). */
export const debitOpId = (jobId: string) => `${jobId}:debit`;
export const refundOpId = (jobId: string) => `${jobId}:refund`;

/**
 * Gives back a job's refund through the user actor. The refund names the debit it reverses, so it never
 * hands out credits that were not taken, and its op_id makes a repeat (a sweeper, a redelivery) harmless.
 * Returns false when it could not be confirmed now; the job keeps `refund_due` and the sweeper retries.
 * A `failing` job becomes `failed` only here, once its credits are back.
 */
export async function settleRefund(
  deps: {
    credits: Pick<UserCredits, 'refund'>;
    jobs: JobsRepository;
    logger: Logger;
    /** Told of a `failing` job this refund made `failed`. */
    onFinished?(job: JobRecord): void;
  },
  job: Pick<JobRecord, 'id' | 'user_id' | 'debit_op_id'>,
  amount: number,
): Promise<boolean> {
  try {
    const refunded = await deps.credits.refund(job.user_id, {
      op_id: refundOpId(job.id),
      amount,
      reason: 'refund',
      job_id: job.id,
      reverses: job.debit_op_id,
    });
    if (!refunded.ok) deps.logger.info({ job_id: job.id }, 'no refund: the job was never charged');
    const failed = await deps.jobs.refundConfirmed(job.id);
    if (failed) {
      deps.logger.info({ job_id: failed.id, error: failed.error }, 'job failed and refunded');
      deps.onFinished?.(failed);
    }
    return true;
  } catch (error) {
    deps.logger.error({ err: error, job_id: job.id }, 'refund not confirmed; the sweeper will retry it');
    return false;
  }
}

/**
 * Undoes a submit that never reached `processing` (the provider refused it, or a crash left it): refunds what
 * was taken (nothing if the debit never happened), removes the job, then the input copies fetched for it.
 * False when the refund is not confirmed yet or the job moved on meanwhile; the sweeper tries again.
 */
export async function undoSubmit(
  deps: { credits: Pick<UserCredits, 'refund'>; jobs: JobsRepository; logger: Logger; store: MediaStore },
  job: JobRecord,
): Promise<boolean> {
  if (!(await settleRefund(deps, job, job.credits))) return false;
  if (!(await deps.jobs.removeIf(job.id, 'submitting'))) return false;
  await discardFetchedInputs(deps.store, job.generation);
  return true;
}
