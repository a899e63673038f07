export * from './agent.ts';
export * from './chat-client.ts';
export * from './completion.ts';
export * from './prompt.ts';
export * from './sse.ts';
