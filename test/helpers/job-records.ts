import { newJobRecord } from '../../src/jobs/job-submission.ts';
import type { JobRecord } from '../../src/jobs/ports/jobs-repository.ts';

/**
 * A one-image text-to-image job record as the submit protocol writes it (`submitting`, 50 credits), for tests
 * that store jobs directly through the repository.
 */
export function imageJobRecord(fields: { id: string; userId: string; keyId: string; now: Date }): JobRecord {
  return newJobRecord({
    id: fields.id,
    principal: { userId: fields.userId, keyId: fields.keyId },
    type: 'image',
    model: 'imgmodel-2',
    generation: {
      capability: 'text-to-image',
      prompt: 'p',
      num_images: 1,
      aspect_ratio: '1:1',
      seed: 1,
      images: [],
    },
    credits: 50,
    now: fields.now,
    providerTimeoutMs: 10 * 60_000,
  });
}
