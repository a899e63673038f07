export * from './pool.ts';
