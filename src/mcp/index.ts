export * from './editor-tools.ts';
export * from './endpoint.ts';
export * from './job-tools.ts';
export * from './tool-support.ts';
export * from './tool.ts';
export * from './tools.ts';
