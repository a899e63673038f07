export * from './accounts.ts';
export * from './editor.ts';
export * from './feature.ts';
export * from './jobs.ts';
export * from './meta.ts';
export * from './platform.ts';
export * from './scheduler.ts';
export * from './webhooks.ts';
