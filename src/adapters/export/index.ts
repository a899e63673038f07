export * from './child-records.ts';
export * from './pool.ts';
export * from './workspace.ts';
