export * from './checked-target.ts';
export * from './fetch-refused.ts';
export * from './guarded-fetch.ts';
