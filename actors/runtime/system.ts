import type { Logger } from 'pino';
import {
  type Clock,
  type ActorMetrics,
  type EventBus,
  ActorUnavailableError,
  unwrapReply,
  type ActorMessage,
  type ActorTransport,
  AskTimeoutError,
} from '../../src/platform/core/index.ts';
import { createDispatcher, type HostedKind } from './dispatcher.ts';
import {
  DEFAULT_ACTOR_SETTINGS,
  resolveSettings,
  type ActorDefinition,
  type ActorSettings,
  type CommandSchemas,
} from './define.ts';

/** Callers' view of the actors: `ask` waits for the answer, `tell` only for acceptance. */
export interface ActorSystem {
  /**
   * The handler's answer; its `AppError` rethrown (subclass included); `ActorUnavailableError` (503) when no
   * reply comes in time (default: the kind's `askTimeoutMs` when this node hosts it, else 10 s). Typed calls:
   * `actorClient(system, actor)`.
   */
  ask<T = unknown>(
    kind: string,
    key: string,
    message: ActorMessage,
    options?: { timeoutMs?: number },
  ): Promise<T>;
  tell(kind: string, key: string, message: ActorMessage): Promise<void>;
  /** The settings this node runs a kind with (defaults for a kind it does not host). */
  settingsOf(kind: string): ActorSettings;
  close(): Promise<void>;
}

export const DEFAULT_ASK_TIMEOUT_MS = DEFAULT_ACTOR_SETTINGS.askTimeoutMs;

/** One kind this node handles: the definition, the ports its handlers get, and overrides of its settings. */
export interface ActorKind<Ports = unknown> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any commands and handlers of these ports
  actor: ActorDefinition<Ports, CommandSchemas, any>;
  ports: NoInfer<Ports>;
  settings?: Partial<ActorSettings>;
}

export interface ActorSystemOptions<Kinds extends readonly unknown[]> {
  transport: ActorTransport;
  /** Each kind with its own ports (checked against its definition) and optional settings overrides. */
  kinds: { [I in keyof Kinds]: ActorKind<Kinds[I]> };
  logger: Logger;
  clock: Clock;
  metrics?: ActorMetrics;
  /** Where handlers' `context.emit` goes (optional until a hosted kind emits). */
  events?: EventBus;
}

/** Starts handling the given actor kinds on this node and returns the callers' interface. */
export async function createActorSystem<const Kinds extends readonly unknown[]>(
  options: ActorSystemOptions<Kinds>,
): Promise<ActorSystem> {
  const { transport } = options;
  const hosted: HostedKind[] = (options.kinds as readonly ActorKind[]).map((entry) => ({
    actor: entry.actor,
    ports: entry.ports,
    settings: resolveSettings(entry.actor, entry.settings),
  }));
  const kinds = new Set<string>();
  for (const { actor } of hosted) {
    if (kinds.has(actor.kind)) throw new Error(`actor kind ${actor.kind} given twice`);
    kinds.add(actor.kind);
  }
  const settings = new Map(hosted.map((kind) => [kind.actor.kind, kind.settings]));
  const settingsOf = (kind: string): ActorSettings => settings.get(kind) ?? DEFAULT_ACTOR_SETTINGS;

  await transport.start(
    hosted.map(({ actor, settings: { ackWaitMs } }) => ({ kind: actor.kind, ackWaitMs })),
    createDispatcher({
      kinds: hosted,
      logger: options.logger,
      clock: options.clock,
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.events ? { events: options.events } : {}),
    }),
  );
  return {
    async ask<T>(kind: string, key: string, message: ActorMessage, askOptions: { timeoutMs?: number } = {}) {
      try {
        return unwrapReply(
          await transport.ask(kind, key, message, askOptions.timeoutMs ?? settingsOf(kind).askTimeoutMs),
        ) as T;
      } catch (error) {
        if (error instanceof AskTimeoutError) {
          options.logger.warn({ actor: kind, actor_key: key, op_id: message.op_id }, error.message);
          throw new ActorUnavailableError();
        }
        throw error;
      }
    },
    tell: (kind, key, message) => transport.tell(kind, key, message),
    settingsOf,
    close: () => transport.close(),
  };
}
