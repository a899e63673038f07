export { createFsMediaStore } from './fs-store.ts';
export { createGridFsMediaStore } from './gridfs-store.ts';
