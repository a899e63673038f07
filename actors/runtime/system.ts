import { AppError } from '../../src/domain/errors.ts';
import { createDispatcher, type DispatcherOptions } from './dispatcher.ts';
import { unwrapReply } from './envelope.ts';
import { type ActorMessage } from '../../src/ports/actor-transport.ts';
import { AskTimeoutError } from './ask-timeout.ts';
import { type ActorTransport } from '../../src/ports/actor-transport.ts';

/** Callers' view of the actors: `ask` waits for the answer, `tell` only for acceptance. */
export interface ActorSystem {
  /** The handler's answer; its `AppError` rethrown; 503 `unavailable` when no reply comes in time. */
  ask<T = unknown>(
    kind: string,
    key: string,
    message: ActorMessage,
    options?: { timeoutMs?: number },
  ): Promise<T>;
  tell(kind: string, key: string, message: ActorMessage): Promise<void>;
  close(): Promise<void>;
}

export const DEFAULT_ASK_TIMEOUT_MS = 10_000;

/** Starts handling the given actor kinds on this node and returns the callers' interface. */
export async function createActorSystem<Ports>(
  options: DispatcherOptions<Ports> & { transport: ActorTransport },
): Promise<ActorSystem> {
  const { transport } = options;
  await transport.start(
    options.actors.map((actor) => actor.kind),
    createDispatcher(options),
  );
  return {
    async ask<T>(kind: string, key: string, message: ActorMessage, askOptions: { timeoutMs?: number } = {}) {
      try {
        return unwrapReply(
          await transport.ask(kind, key, message, askOptions.timeoutMs ?? DEFAULT_ASK_TIMEOUT_MS),
        ) as T;
      } catch (error) {
        if (error instanceof AskTimeoutError) {
          options.logger.warn({ actor: kind, actor_key: key, op_id: message.op_id }, error.message);
          throw new AppError('unavailable', 'Service temporarily unavailable, try again');
        }
        throw error;
      }
    },
    tell: (kind, key, message) => transport.tell(kind, key, message),
    close: () => transport.close(),
  };
}
