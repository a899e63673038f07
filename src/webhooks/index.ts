export { deliveryView } from './delivery-view.ts';
export { webhooksFeature } from './feature.ts';
export { createMongoWebhookDeliveries } from './mongo-deliveries.ts';
export type { WebhookDeliveriesRepository } from './ports/webhook-deliveries-repository.ts';
export { keyDeliveries } from './key-deliveries.ts';
export { webhookDeliveriesOnServer } from './mongo-deliveries.ts';
