export * from './account.ts';
export * from './admin.ts';
export * from './common.ts';
export * from './jobs.ts';
export * from './media.ts';
export * from './models.ts';
export * from './validate.ts';
