export {
  connectMongo,
  detectMongoServer,
  isDuplicateKeyError,
  type MongoConnection,
  type MongoServer,
} from './connect.ts';
export { createMongoUsers } from './users.ts';
export { createMongoApiKeys } from './api-keys.ts';
export { createMongoCreditLedger } from './credit-ledger.ts';
export { createMongoAuditSink, AUDIT_COLLECTION } from './audit-sink.ts';
export { createMongoJobs } from './jobs.ts';
export { createMongoWebhookDeliveries } from './webhook-deliveries.ts';
export { serialisedOnJongodb, jobsOnServer, webhookDeliveriesOnServer } from './jongodb-serial.ts';
