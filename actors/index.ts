// Virtual actors (DESIGN.md §2). `runtime/` holds the transport-independent runtime, the in-process transport
// and the in-process event bus; the JetStream transport is an adapter (src/adapters/nats/actor-transport.ts).
export * from './user.ts';
export * from './runtime/index.ts';
