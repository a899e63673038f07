import type { Logger } from 'pino';
import {
  type Clock,
  ActorUnavailableError,
  AppError,
  errorReply,
  classifyHandlerError,
  type ActorMetrics,
  type Dispatch,
  type EventBus,
} from '../../src/platform/core/index.ts';
import { createChecker } from '../../schemas/validate.ts';
import { actorTopic, type ActorSettings, type AnyActorDefinition, type HandlerContext } from './define.ts';

/** One actor kind this node handles: its definition, its own ports and its resolved settings. */
export interface HostedKind {
  actor: AnyActorDefinition;
  ports: unknown;
  settings: ActorSettings;
}

/** The actor kinds a node handles and everything their handlers need. */
export interface DispatcherOptions {
  kinds: readonly HostedKind[];
  logger: Logger;
  clock: Clock;
  metrics?: ActorMetrics;
  /** Where `context.emit` goes; without it, a handler that emits fails (500). */
  events?: EventBus;
}

interface Command {
  check: ReturnType<typeof createChecker>['check'];
  handler: (context: HandlerContext<unknown>, message: unknown) => Promise<unknown>;
}

/**
 * The transport-independent half of the runtime: command lookup, schema check, context, retries, events,
 * metrics. A message that fails its command's schema is answered 400 `bad_request` before any handler runs.
 * A handler's failure is retried with back-off when it is retryable (`classifyHandlerError`: a
 * `RetryableError` or a driver's hiccup), up to the kind's attempts, then answered `ActorUnavailableError`;
 * any other failure is answered at once (an `AppError` as it is, anything else as 500).
 */
export function createDispatcher(options: DispatcherOptions): Dispatch {
  const { clock, metrics, events } = options;
  const kinds = new Map(
    options.kinds.map(({ actor, ports, settings }) => {
      const commands = new Map<string, Command>(
        Object.entries(actor.commands).map(([name, schema]) => [
          name,
          { check: createChecker(schema).check, handler: actor.handlers[name] },
        ]),
      );
      return [actor.kind, { commands, ports, settings }] as const;
    }),
  );

  return async function dispatch(kind, key, message) {
    const type = typeof message?.type === 'string' ? message.type : '';
    const hosted = kinds.get(kind);
    const command = hosted?.commands.get(type); // a Map: `toString` is not a command
    if (!hosted || !command) {
      metrics?.record(kind, 'unknown', 'error', 0);
      return errorReply(new AppError('bad_request', `Unknown command "${type}" for actor "${kind}"`));
    }
    const { type: _type, ...fields } = message;
    const checked = command.check(fields);
    if (!checked.ok) {
      metrics?.record(kind, type, 'error', 0);
      options.logger.debug(
        { actor: kind, actor_key: key, command: type },
        `invalid command: ${checked.message}`,
      );
      return errorReply(new AppError('bad_request', checked.message));
    }
    const opId = typeof message.op_id === 'string' ? message.op_id : undefined;
    const logger = options.logger.child({ actor: kind, actor_key: key, ...(opId ? { op_id: opId } : {}) });
    const { retry } = hosted.settings;
    for (let attempt = 1; ; attempt++) {
      // Each run buffers its own events: only the run that succeeds publishes.
      const emitted: unknown[] = [];
      let running = true;
      const context: HandlerContext<unknown> = {
        key,
        opId,
        logger,
        clock,
        ports: hosted.ports,
        emit(event) {
          if (!events) throw new Error(`actor ${kind}: emit needs an event bus (createActorSystem's events)`);
          if (!running) throw new Error(`actor ${kind}: emit after its handler finished`);
          emitted.push(event);
        },
      };
      const started = performance.now();
      try {
        const value = await command.handler(context, checked.value);
        running = false;
        metrics?.record(kind, type, 'ok', (performance.now() - started) / 1000);
        if (emitted.length > 0) await publish(kind, key, emitted, logger);
        return { ok: true, value: value ?? null };
      } catch (error) {
        running = false;
        const seconds = (performance.now() - started) / 1000;
        const retryable = classifyHandlerError(error) === 'retryable';
        if (retryable && attempt < retry.attempts) {
          metrics?.record(kind, type, 'retry', seconds);
          logger.warn({ err: error, attempt }, 'actor handler failed transiently; retrying');
          await sleep(retry.baseDelayMs * 4 ** (attempt - 1) * (0.5 + Math.random()));
          continue;
        }
        metrics?.record(kind, type, 'error', seconds);
        if (!(error instanceof AppError)) logger.error({ err: error, attempt }, 'actor handler failed');
        // Retries spent: the caller hears that the actor is unavailable, never the hiccup's own text.
        return errorReply(retryable ? new ActorUnavailableError() : error);
      }
    }
  };

  /**
   * After the handler succeeded, in emission order. The handler's state change stands either way, so a bus
   * failure is logged, not answered: the handler's own records (say, a project's events with their `seq`) are
   * what a subscriber that missed an event catches up from.
   */
  async function publish(kind: string, key: string, emitted: unknown[], logger: Logger) {
    const topic = actorTopic(kind, key);
    for (const [index, event] of emitted.entries()) {
      try {
        await events!.publish(topic, event);
      } catch (error) {
        logger.error(
          { err: error, topic, unpublished: emitted.length - index },
          'actor events not published; the handler succeeded',
        );
        return;
      }
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
