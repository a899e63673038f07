import type { Logger } from 'pino';
import type { Clock } from '../../src/ports/clock.ts';
import { AppError } from '../../src/domain/errors.ts';
import type { ActorDefinition } from './define.ts';
import { errorReply } from './envelope.ts';
import { classifyHandlerError } from './errors.ts';
import type { ActorMetrics } from '../../src/ports/actor-metrics.ts';
import type { Dispatch } from '../../src/ports/actor-transport.ts';

/** Bounded in-handler retries for transient failures (never a delayed nak: DESIGN.md §2). */
export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelayMs: 25 };

/** The actor kinds a node handles and everything their handlers need. */
export interface DispatcherOptions<Ports> {
  actors: readonly ActorDefinition<Ports>[];
  ports: Ports;
  logger: Logger;
  clock: Clock;
  metrics?: ActorMetrics;
  retry?: RetryPolicy;
}

/** The transport-independent half of the runtime: handler lookup, context, retries, metrics. */
export function createDispatcher<Ports>(options: DispatcherOptions<Ports>): Dispatch {
  const { ports, clock, metrics } = options;
  const retry = options.retry ?? DEFAULT_RETRY;
  const actors = new Map(options.actors.map((actor) => [actor.kind, actor]));

  return async function dispatch(kind, key, message) {
    const type = typeof message?.type === 'string' ? message.type : '';
    const handlers = actors.get(kind)?.handlers;
    const handler = handlers && Object.hasOwn(handlers, type) ? handlers[type] : undefined; // not `toString`
    if (!handler) {
      metrics?.record(kind, 'unknown', 'error', 0);
      return errorReply(new AppError('bad_request', `Unknown command "${type}" for actor "${kind}"`));
    }
    const opId = typeof message.op_id === 'string' ? message.op_id : undefined;
    const logger = options.logger.child({ actor: kind, actor_key: key, ...(opId ? { op_id: opId } : {}) });
    const context = { key, opId, logger, clock, ports };
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      try {
        const value = await handler(context, message);
        metrics?.record(kind, type, 'ok', (performance.now() - started) / 1000);
        return { ok: true, value: value ?? null };
      } catch (error) {
        const seconds = (performance.now() - started) / 1000;
        const transient = classifyHandlerError(error) === 'transient';
        if (transient && attempt < retry.attempts) {
          metrics?.record(kind, type, 'retry', seconds);
          logger.warn({ err: error, attempt }, 'actor handler failed transiently; retrying');
          await sleep(retry.baseDelayMs * 4 ** (attempt - 1) * (0.5 + Math.random()));
          continue;
        }
        metrics?.record(kind, type, 'error', seconds);
        if (!(error instanceof AppError)) logger.error({ err: error, attempt }, 'actor handler failed');
        return errorReply(
          transient ? new AppError('unavailable', 'Service temporarily unavailable, try again') : error,
        );
      }
    }
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
