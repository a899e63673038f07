export * from './common.ts';
export * from './fs-store.ts';
export * from './gridfs-store.ts';
