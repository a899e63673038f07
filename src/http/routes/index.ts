export * from './admin.ts';
export * from './editor.ts';
export * from './events.ts';
export * from './jobs.ts';
export * from './media.ts';
export * from './metrics.ts';
export * from './public.ts';
export * from './export.ts';
