export * from './actor-transport.ts';
export * from './connect.ts';
export * from './event-bus.ts';
export { createJetStreamEventHistory, type JetStreamEventHistoryOptions } from './event-history.ts';
export { EVENTS_STREAM, ensureEventsStream, type EventsStreamOptions } from './events-stream.ts';
export * from './job-poll-queue.ts';
export * from './streams.ts';
export * from './work-queue.ts';
