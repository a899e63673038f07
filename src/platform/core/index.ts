export { AskTimeoutError } from './actor-ask-timeout.ts';
export { decode, encode, errorReply, unwrapReply } from './actor-envelope.ts';
export {
  ActorUnavailableError,
  classifyHandlerError,
  RetryableError,
  type HandlerErrorClass,
} from './actor-errors.ts';
export type { ActorMetrics } from './actor-metrics.ts';
export type { ActorMessage, ActorReply, ActorTransport, Dispatch } from './actor-transport.ts';
export type { Clock } from './clock.ts';
export { AppError, ProjectNotFound } from './errors.ts';
export type { EventBus } from './event-bus.ts';
export { createKeyedSerial } from './keyed-serial.ts';
export { diedUnborn, niceAutogroup, restartingUnborn, tiedToThisThread } from './tied-child.ts';
