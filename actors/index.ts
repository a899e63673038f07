// Virtual actors (DESIGN.md §2). `runtime/` holds the transport-independent runtime and the in-process
// transport; the JetStream transport is an adapter (src/adapters/nats/actor-transport.ts).
export * from './runtime/index.ts';
export {
  userActor,
  userCredits,
  USER_ACTOR,
  type CreditResult,
  type ChargeResult,
  type RefundResult,
  type CreditApplied,
  type UserCredits,
  type UserActorPorts,
  type LedgerEntryView,
} from './user.ts';
