import type { KeyDeliveries } from '../accounts/index.ts';
import { deliveryView } from './delivery-view.ts';
import type { WebhookDeliveriesRepository } from './ports/webhook-deliveries-repository.ts';

/** A key's deliveries as the admin API reads and clears them: the delivery log's view of each. */
export function keyDeliveries(deliveries: WebhookDeliveriesRepository): KeyDeliveries {
  return {
    dropPending: (keyId, at) => deliveries.dropPending(keyId, at),
    listForKey: async (keyId, limit) => (await deliveries.listForKey(keyId, limit)).map(deliveryView),
  };
}
