import type { WebhookDelivery } from './ports/webhook-deliveries-repository.ts';

/** A delivery as the delivery log shows it (docs/webhooks.md "Delivery history and audit"). */
export function deliveryView(delivery: WebhookDelivery) {
  return {
    id: delivery.id,
    job_id: delivery.job_id,
    event: delivery.event,
    state: delivery.state,
    attempts: delivery.attempts.map((attempt) => ({ ...attempt, at: attempt.at.toISOString() })),
    next_attempt_at: delivery.next_attempt_at?.toISOString() ?? null,
    created_at: delivery.created_at.toISOString(),
  };
}

export type DeliveryView = ReturnType<typeof deliveryView>;
