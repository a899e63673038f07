export * from './file-sink.ts';
