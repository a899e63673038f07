import type { ErrorCode } from './errors.ts';
import type { TypedErrorKind } from './actor-errors.ts';

// How messages reach actors, and their envelope: the same on both transports (in-process, JetStream).

/** A command sent to an actor: `type` names the handler; `op_id` (when present) makes it idempotent. */
export interface ActorMessage {
  type: string;
  op_id?: string;
  [field: string]: unknown;
}

/** An error as it crosses the wire: enough to rebuild the `AppError` the handler threw, subclass included. */
export interface WireError {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  /** Which `AppError` subclass it was, for those callers test by type (absent: a plain `AppError`). */
  kind?: TypedErrorKind;
}

/** What the handler answered, as both transports carry it back to the caller. */
export type ActorReply = { ok: true; value: unknown } | { ok: false; error: WireError };

/** Runs one message through its handler and turns the outcome into the caller's reply. */
export type Dispatch = (kind: string, key: string, message: ActorMessage) => Promise<ActorReply>;

/** One actor kind as a transport needs to know it. */
export interface TransportKind {
  kind: string;
  /** JetStream: how long a delivered message may go unacknowledged before it is redelivered (node death). */
  ackWaitMs: number;
}

/**
 * How messages reach actors (port). Both transports give the same guarantees: the messages of one key are
 * handled one at a time, in the order they were sent; different keys run concurrently; a message is handled
 * at least once, so handlers are idempotent by `op_id`.
 */
export interface ActorTransport {
  /** Starts handling messages of these actor kinds on this node with `dispatch`. */
  start(kinds: readonly TransportKind[], dispatch: Dispatch): Promise<void>;
  /** Sends a message and waits for the handler's reply, or rejects after `timeoutMs`. */
  ask(kind: string, key: string, message: ActorMessage, timeoutMs: number): Promise<ActorReply>;
  /** Sends a message; resolves once it is accepted (stored, for JetStream), not when it is handled. */
  tell(kind: string, key: string, message: ActorMessage): Promise<void>;
  /** Stops taking messages, lets the running handlers finish, and releases connections. */
  close(): Promise<void>;
}
