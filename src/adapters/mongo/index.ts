export * from './api-keys.ts';
export * from './audit-sink.ts';
export * from './connect.ts';
export * from './credit-ledger.ts';
export * from './jobs.ts';
export * from './jongodb-serial.ts';
export * from './users.ts';
export * from './webhook-deliveries.ts';
