export { createMongoCreditLedger, type BalanceDoc } from './mongo-ledger.ts';
