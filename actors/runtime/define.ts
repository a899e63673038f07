import type { Logger } from 'pino';
import type { Clock } from '../../src/ports/clock.ts';
import type { ActorMessage } from '../../src/ports/actor-transport.ts';

/** What a handler gets besides its message. */
export interface HandlerContext<Ports> {
  /** The actor's key (a user id, a project id). */
  key: string;
  /** The command's `op_id`, when it carries one. */
  opId: string | undefined;
  /** A child logger bound to the actor kind, key and op id. */
  logger: Logger;
  clock: Clock;
  ports: Ports;
}

/**
 * One command's handler. Handlers are short: they record state transitions and return a JSON-serialisable
 * answer (DESIGN.md §2). They may run again for the same message after a crash, so every change they make
 * must be idempotent by `op_id`.
 */
export type Handler<Ports, M extends ActorMessage = ActorMessage> = (
  context: HandlerContext<Ports>,
  message: M,
) => Promise<unknown>;

/** An actor kind and its command handlers, keyed by message `type`. */
export interface ActorDefinition<Ports> {
  kind: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each handler narrows its own message type
  handlers: Record<string, Handler<Ports, any>>;
}

/** Declares an actor kind (identity function: it exists for the types and for reading). */
export function defineActor<Ports>(definition: ActorDefinition<Ports>): ActorDefinition<Ports> {
  if (!/^[a-z][a-z0-9_]*$/.test(definition.kind)) {
    throw new Error(`actor kind must be a NATS subject token in lower case: ${definition.kind}`);
  }
  return definition;
}
