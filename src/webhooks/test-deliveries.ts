import type { Logger } from 'pino';
import { TEST_DELIVERY_PREFIX } from '../../schemas/vocabulary.ts';
import { AppError, randomBase62, type AuditLog } from '../platform/index.ts';
import type { ApiKeysRepository } from '../accounts/index.ts';
import type { WebhookDeliveriesRepository, WebhookDelivery } from './ports/webhook-deliveries-repository.ts';
import { WEBHOOK_EVENTS, auditAttempt, judge, sendDelivery, type WebhookSendDeps } from './webhook-send.ts';

/** Test deliveries' ids: `dlv_test_…`, announcing the made-up job `job_test_…` (docs/webhooks.md). */
const TEST_JOB_PREFIX = 'job_test_';

/** What test deliveries need: a key's webhook, the sending, and the logs they are recorded in. */
export interface TestDeliveriesDeps extends WebhookSendDeps {
  deliveries: Pick<WebhookDeliveriesRepository, 'insert'>;
  keys: Pick<ApiKeysRepository, 'get'>;
  audit: Pick<AuditLog, 'append'>;
  logger: Logger;
}

/** A `job.completed` body of a job that never ran, marked `"test": true` (docs/webhooks.md "Test deliveries"). */
export function testDeliveryBody(jobId: string, at: Date): string {
  return JSON.stringify({
    job_id: jobId,
    status: 'completed',
    model: 'test',
    type: 'image',
    credits_consumed: 0,
    created_at: at.toISOString(),
    completed_at: at.toISOString(),
    result: { images: [] },
    error: null,
    test: true,
  });
}

/**
 * A test delivery to the key's webhook (docs/webhooks.md "Test deliveries"): a sample body, signed and sent
 * as every delivery is, exactly once (no retries), then recorded in the key's delivery log and the audit
 * log like any attempt. Answers the recorded delivery, whatever the receiver said.
 */
export function createTestDeliveries(deps: TestDeliveriesDeps): (keyId: string) => Promise<WebhookDelivery> {
  const { deliveries, clock, logger } = deps;

  /** Keys with a test delivery under way: one at a time per key, so a button held down sends one. */
  const testsUnderWay = new Set<string>();

  return async function sendTest(keyId) {
    const key = await deps.keys.get(keyId);
    if (!key) throw new AppError('not_found', 'API key not found');
    if (!key.webhook) throw new AppError('conflict', 'This key has no webhook URL: set one first');
    if (testsUnderWay.has(key.id)) {
      throw new AppError('conflict', 'A test delivery of this key is under way');
    }
    testsUnderWay.add(key.id);
    try {
      const now = new Date(clock.now());
      const suffix = randomBase62(16);
      const jobId = TEST_JOB_PREFIX + suffix;
      const delivery: WebhookDelivery = {
        id: TEST_DELIVERY_PREFIX + suffix,
        key_id: key.id,
        user_id: key.user_id,
        job_id: jobId,
        event: WEBHOOK_EVENTS.completed,
        body: testDeliveryBody(jobId, now),
        state: 'pending',
        attempts: [],
        next_attempt_at: null,
        created_at: now,
        updated_at: now,
      };
      const sent = await sendDelivery(deps, delivery, key.webhook.url, key.webhook.secret, 1);
      // Stored once, already final: nothing is ever pending, so no sweep or restart sends it again.
      const recorded: WebhookDelivery = {
        ...delivery,
        state: judge(sent.status) === 'delivered' ? 'delivered' : 'failed',
        attempts: [sent],
        updated_at: sent.at,
      };
      await deliveries.insert(recorded);
      await auditAttempt(deps.audit, recorded, sent);
      logger.info(
        { delivery_id: recorded.id, key_id: key.id, status: sent.status, error: sent.error },
        'webhook test delivery',
      );
      return recorded;
    } finally {
      testsUnderWay.delete(key.id);
    }
  };
}
