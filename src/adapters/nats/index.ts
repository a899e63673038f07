export * from './actor-transport.ts';
export * from './connect.ts';
export * from './event-bus.ts';
export * from './job-poll-queue.ts';
export * from './streams.ts';
export * from './work-queue.ts';
