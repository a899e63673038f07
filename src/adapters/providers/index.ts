export * from './fal-download.ts';
export * from './fal-http.ts';
export * from './fal-input.ts';
export * from './fal.ts';
export * from './sandbox/index.ts';
