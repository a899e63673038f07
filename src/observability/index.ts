export * from './actor-metrics.ts';
export * from './metrics.ts';
export * from './process-metrics.ts';
