export * from './audit/index.ts';
export * from './embedded/index.ts';
export * from './media/index.ts';
export * from './mongo/index.ts';
export * from './nats/index.ts';
export * from './net/index.ts';
export * from './providers/index.ts';
export * from './storage/index.ts';
