import type { Dispatch } from './dispatcher.ts';
import type { ActorMessage, ActorReply } from './envelope.ts';

/**
 * How messages reach actors (port). Both transports give the same guarantees: the messages of one key are
 * handled one at a time, in the order they were sent; different keys run concurrently; a message is handled
 * at least once, so handlers are idempotent by `op_id`.
 */
export interface ActorTransport {
  /** Starts handling messages of these actor kinds on this node with `dispatch`. */
  start(kinds: readonly string[], dispatch: Dispatch): Promise<void>;
  /** Sends a message and waits for the handler's reply, or rejects after `timeoutMs`. */
  ask(kind: string, key: string, message: ActorMessage, timeoutMs: number): Promise<ActorReply>;
  /** Sends a message; resolves once it is accepted (stored, for JetStream), not when it is handled. */
  tell(kind: string, key: string, message: ActorMessage): Promise<void>;
  /** Stops taking messages, lets the running handlers finish, and releases connections. */
  close(): Promise<void>;
}

/** Rejected `ask`: no reply within its time-out. The message may still be handled later (idempotently). */
export class AskTimeoutError extends Error {
  constructor(kind: string, key: string, timeoutMs: number) {
    super(`no reply from actor ${kind}/${key} within ${timeoutMs} ms`);
    this.name = 'AskTimeoutError';
  }
}
