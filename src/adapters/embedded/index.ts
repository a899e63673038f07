export * from './jongodb.ts';
