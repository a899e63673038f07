export * from './admin.ts';
export * from './serve.ts';
