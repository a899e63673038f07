export { connectMongo, isDuplicateKeyError, type MongoConnection } from './connect.ts';
export { createMongoUsers } from './users.ts';
export { createMongoApiKeys } from './api-keys.ts';
export { createMongoCreditLedger } from './credit-ledger.ts';
export { createMongoAuditSink, AUDIT_COLLECTION } from './audit-sink.ts';
