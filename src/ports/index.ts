// Every port (DESIGN.md §5.3): the interfaces services, actors and adapters meet at, one file each.
export * from './actor-metrics.ts';
export * from './actor-transport.ts';
export * from './api-keys-repository.ts';
export * from './audit-sink.ts';
export * from './clock.ts';
export * from './credit-ledger.ts';
export * from './event-bus.ts';
export * from './jobs-repository.ts';
export * from './media-provider.ts';
export * from './media-store.ts';
export * from './users-repository.ts';
export * from './webhook-deliveries-repository.ts';
export * from './webhook-post.ts';
export * from './work-scheduler.ts';
