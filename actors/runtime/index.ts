export { defineActor, type ActorDefinition, type Handler, type HandlerContext } from './define.ts';
export { createActorSystem, DEFAULT_ASK_TIMEOUT_MS, type ActorSystem } from './system.ts';
export { createInProcessTransport } from './in-process.ts';
export { AskTimeoutError, type ActorTransport } from './transport.ts';
export {
  createDispatcher,
  DEFAULT_RETRY,
  type ActorMetrics,
  type DispatcherOptions,
  type Dispatch,
  type HandlerOutcome,
  type RetryPolicy,
} from './dispatcher.ts';
export {
  encode,
  decode,
  errorReply,
  unwrapReply,
  type ActorMessage,
  type ActorReply,
  type WireError,
} from './envelope.ts';
export { classifyHandlerError, type HandlerErrorClass } from './errors.ts';
export { fnv1a32, partitionOf } from './partition.ts';
