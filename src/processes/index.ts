export * from './tied-child.ts';
