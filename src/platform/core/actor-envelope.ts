import { AppError, ERROR_STATUS } from './errors.ts';
import { TYPED_ERRORS, type TypedErrorKind } from './actor-errors.ts';
import type { ActorReply, WireError } from './actor-transport.ts';

const TYPED_KINDS = Object.keys(TYPED_ERRORS) as TypedErrorKind[];

/**
 * A handler's failure as the caller will see it: an `AppError` keeps its code, fields and (through `kind`)
 * its subclass; anything else is internal.
 */
export function errorReply(error: unknown): ActorReply {
  if (error instanceof AppError) {
    const wire: WireError = { code: error.code, message: error.message, details: error.details };
    const kind = TYPED_KINDS.find((name) => error instanceof TYPED_ERRORS[name]);
    return { ok: false, error: kind ? { ...wire, kind } : wire };
  }
  return { ok: false, error: { code: 'internal', message: 'Internal server error' } };
}

/** The caller's side: the value, or the handler's error rethrown as an `AppError` of the subclass it was. */
export function unwrapReply(reply: ActorReply): unknown {
  if (reply.ok) return reply.value;
  const { kind, message, details = {} } = reply.error;
  // The wire is input: a kind this node does not know (a newer node's) falls back to its plain code.
  if (typeof kind === 'string' && Object.hasOwn(TYPED_ERRORS, kind)) {
    throw new TYPED_ERRORS[kind](message, details);
  }
  const code = reply.error.code in ERROR_STATUS ? reply.error.code : 'internal';
  throw new AppError(code, message, details);
}

/** JSON on the wire for both transports, so in-process answers have exactly the shape JetStream gives. */
export const encode = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));
export const decode = <T>(bytes: Uint8Array): T => JSON.parse(Buffer.from(bytes).toString('utf8')) as T;
