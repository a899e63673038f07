import type { JobView } from '../../schemas/jobs.ts';
import { MODEL_NAMES, type ModelId } from '../../schemas/models-catalog.ts';
import type { JobRecord } from './ports/jobs-repository.ts';

/**
 * The internal states are never shown: a `submitting` job is listed nowhere yet (the routes hide it), a
 * `failing` one is still processing from the caller's view until its refund is confirmed.
 */
function shownStatus(job: JobRecord): JobView['status'] {
  return job.status === 'submitting' || job.status === 'failing' ? 'processing' : job.status;
}

/**
 * A stored job as the API shows it (docs/api.md, The Job object): every field in every state, `model` as the
 * display name.
 */
export function toJobView(job: JobRecord): JobView {
  return {
    job_id: job.id,
    status: shownStatus(job),
    model: MODEL_NAMES[job.model as ModelId] ?? job.model,
    type: job.type,
    credits_consumed: job.credits,
    refunded_credits: job.refunded_credits,
    created_at: job.created_at.toISOString(),
    completed_at:
      job.completed_at && shownStatus(job) !== 'processing' ? job.completed_at.toISOString() : null,
    result: job.status === 'completed' ? job.result : null,
    error: job.status === 'failed' ? job.error : null,
  };
}
