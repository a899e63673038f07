export {
  defineActor,
  resolveSettings,
  actorTopic,
  DEFAULT_ACTOR_SETTINGS,
  type ActorDefinition,
  type AnyActorDefinition,
  type ActorSettings,
  type CommandSchemas,
  type Handler,
  type HandlerContext,
  type HandlersFor,
  type PortsOf,
  type RetryPolicy,
} from './define.ts';
export {
  createActorSystem,
  DEFAULT_ASK_TIMEOUT_MS,
  type ActorKind,
  type ActorSystem,
  type ActorSystemOptions,
} from './system.ts';
export { actorClient, type ActorClient, type AskOptions, type Json, type Reply } from './client.ts';
export { createInProcessTransport } from './in-process.ts';
export { createInProcessEventBus } from './event-bus.ts';
export { AskTimeoutError } from './ask-timeout.ts';
export { createDispatcher, type DispatcherOptions, type HostedKind } from './dispatcher.ts';
export { encode, decode, errorReply, unwrapReply } from './envelope.ts';
export { classifyHandlerError, type HandlerErrorClass } from './errors.ts';
export { fnv1a32, partitionOf } from './partition.ts';
