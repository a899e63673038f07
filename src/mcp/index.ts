export * from './endpoint.ts';
export * from './tool.ts';
export * from './tools.ts';
