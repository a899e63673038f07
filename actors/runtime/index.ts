export { defineActor, type ActorDefinition, type Handler, type HandlerContext } from './define.ts';
export { createActorSystem, DEFAULT_ASK_TIMEOUT_MS, type ActorSystem } from './system.ts';
export { createInProcessTransport } from './in-process.ts';
export { AskTimeoutError } from './ask-timeout.ts';
export { createDispatcher, DEFAULT_RETRY, type DispatcherOptions, type RetryPolicy } from './dispatcher.ts';
export { encode, decode, errorReply, unwrapReply } from './envelope.ts';
export { classifyHandlerError, type HandlerErrorClass } from './errors.ts';
export { fnv1a32, partitionOf } from './partition.ts';
