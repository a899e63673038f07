import type { Logger } from 'pino';
import type { Static, TSchema } from 'typebox';
import type { Clock } from '../../src/platform/core/index.ts';

/** Bounded in-handler retries of retryable failures (never a delayed nak: docs/architecture.md, "Actors"). */
export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
}

/** How the runtime treats one actor kind. Each has a default; a definition and a system may override it. */
export interface ActorSettings {
  /** How long `ask` waits for an answer when the caller names no time-out (then `ActorUnavailableError`). */
  askTimeoutMs: number;
  /** Retryable handler failures: how many runs in all, and the first back-off (×4 per attempt, jittered). */
  retry: RetryPolicy;
  /** JetStream: how long a delivered message may stay unacknowledged before it is redelivered (node death). */
  ackWaitMs: number;
}

export const DEFAULT_ACTOR_SETTINGS: Readonly<ActorSettings> = Object.freeze({
  askTimeoutMs: 10_000,
  retry: Object.freeze({ attempts: 4, baseDelayMs: 25 }),
  ackWaitMs: 30_000,
});

/** What a handler gets besides its message. */
export interface HandlerContext<Ports> {
  /** The actor's key (a user id, a project id). */
  key: string;
  /** The command's `op_id`, when it carries one. */
  opId: string | undefined;
  /** A child logger bound to the actor kind, key and op id. */
  logger: Logger;
  clock: Clock;
  /** This kind's ports, as given to `createActorSystem`. */
  ports: Ports;
  /**
   * Queues an event for the system's event bus, on topic `<kind>.<key>` (`actorTopic`). Events are published
   * in order once the handler has succeeded; a run that throws (even one retried later) publishes none.
   */
  emit(event: unknown): void;
}

/**
 * One command's handler. Handlers are short: they record state transitions and return a JSON-serialisable
 * answer (docs/architecture.md, "Actors"). They may run again for the same message after a crash, so every
 * change they make must be idempotent by `op_id`. The message has passed its command's schema (defaults
 * applied).
 */
export type Handler<Ports, Message, Result = unknown> = (
  context: HandlerContext<Ports>,
  message: Message,
) => Promise<Result>;

/** Each command's message schema: the message without its `type` (the command's name). */
export type CommandSchemas = Record<string, TSchema>;

/** One handler per command, each receiving its schema's static type. */
export type HandlersFor<Ports, Commands extends CommandSchemas> = {
  [Name in keyof Commands]: Handler<Ports, Static<Commands[Name]>>;
};

/** An actor kind: its commands' schemas, their handlers and its settings. `Ports` is what handlers get. */
export interface ActorDefinition<
  Ports = unknown,
  Commands extends CommandSchemas = CommandSchemas,
  Handlers extends HandlersFor<Ports, Commands> = HandlersFor<Ports, Commands>,
> {
  kind: string;
  commands: Commands;
  handlers: Handlers;
  settings?: Partial<ActorSettings>;
}

/** Any actor definition, whatever its ports and commands (what the runtime stores). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- erases each kind's own types at the runtime's edge
export type AnyActorDefinition = ActorDefinition<any, CommandSchemas, any>;

/** The ports type a definition's handlers expect. */
export type PortsOf<Definition> =
  Definition extends ActorDefinition<infer Ports, CommandSchemas, infer _H> ? Ports : never;

/**
 * Declares an actor kind: `defineActor<Ports>()({ kind, commands, handlers, settings })`. `commands` maps each
 * command name to the TypeBox schema of its message; `handlers` has one handler per command, typed from it.
 * (Curried so that `Ports` is named while the commands and handlers are inferred.)
 */
export function defineActor<Ports>() {
  return <Commands extends CommandSchemas, Handlers extends HandlersFor<Ports, Commands>>(definition: {
    kind: string;
    commands: Commands;
    handlers: Handlers & Record<Exclude<keyof Handlers, keyof Commands>, never>;
    settings?: Partial<ActorSettings>;
  }): ActorDefinition<Ports, Commands, Handlers> => {
    if (!/^[a-z][a-z0-9_]*$/.test(definition.kind)) {
      throw new Error(`actor kind must be a NATS subject token in lower case: ${definition.kind}`);
    }
    for (const name of Object.keys(definition.handlers)) {
      if (!Object.hasOwn(definition.commands, name)) {
        throw new Error(`actor ${definition.kind}: handler "${name}" has no command schema`);
      }
    }
    for (const name of Object.keys(definition.commands)) {
      if (typeof (definition.handlers as Record<string, unknown>)[name] !== 'function') {
        throw new Error(`actor ${definition.kind}: command "${name}" has no handler`);
      }
    }
    validateSettings(definition.kind, definition.settings);
    return definition;
  };
}

/** A definition's settings over the defaults, then the system's per-kind overrides over those. */
export function resolveSettings(
  definition: AnyActorDefinition,
  overrides: Partial<ActorSettings> = {},
): ActorSettings {
  validateSettings(definition.kind, overrides);
  return {
    ...DEFAULT_ACTOR_SETTINGS,
    ...definition.settings,
    ...overrides,
  };
}

function validateSettings(kind: string, settings: Partial<ActorSettings> = {}) {
  const positive = (value: number | undefined) =>
    value === undefined || (Number.isFinite(value) && value > 0);
  const { askTimeoutMs, ackWaitMs, retry } = settings;
  if (!positive(askTimeoutMs) || !positive(ackWaitMs)) {
    throw new Error(`actor ${kind}: askTimeoutMs and ackWaitMs must be positive numbers of milliseconds`);
  }
  if (retry && (!Number.isInteger(retry.attempts) || retry.attempts < 1 || !(retry.baseDelayMs >= 0))) {
    throw new Error(`actor ${kind}: retry needs attempts >= 1 and baseDelayMs >= 0`);
  }
}

/** The event-bus topic of one actor: `<kind>.<key>` (a project's events: `project.<project id>`). */
export const actorTopic = (kind: string, key: string) => `${kind}.${key}`;
