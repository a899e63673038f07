// Virtual actors (DESIGN.md §2). `runtime/` holds the transport-independent runtime, the in-process transport
// and the in-process event bus; the JetStream transport is an adapter (src/adapters/nats/actor-transport.ts).
export * from './user.ts';
export * from './runtime/index.ts';
export * from './project.ts';
export * from './project-bounds.ts';
export * from './project-commit.ts';
export * from './project-edits.ts';
export * from './project-exports.ts';
export * from './project-timeline.ts';
export * from './project-turns.ts';
export * from './project-views.ts';
