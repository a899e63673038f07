export * from './dimensions.ts';
export * from './markers.ts';
export * from './provider.ts';
export * from './render-args.ts';
export * from './render.ts';
