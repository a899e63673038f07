// Virtual actors (DESIGN.md §2): the user actor (credit ledger) and the project actor (timeline, turn queue),
// over NATS JetStream or in-process. They arrive with the actor-runtime issue; today credit changes go through
// the ledger port directly (src/adapters/mongo/credit-ledger.ts), which the user actor will own.
export {};
