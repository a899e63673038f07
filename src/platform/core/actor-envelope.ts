import { AppError, ERROR_STATUS } from './errors.ts';
import type { ActorReply } from './actor-transport.ts';

/** A handler's failure as the caller will see it: `AppError`s keep their code; anything else is internal. */
export function errorReply(error: unknown): ActorReply {
  if (error instanceof AppError) {
    return { ok: false, error: { code: error.code, message: error.message, details: error.details } };
  }
  return { ok: false, error: { code: 'internal', message: 'Internal server error' } };
}

/** The caller's side: the value, or the handler's error rethrown as an `AppError`. */
export function unwrapReply(reply: ActorReply): unknown {
  if (reply.ok) return reply.value;
  const code = reply.error.code in ERROR_STATUS ? reply.error.code : 'internal';
  throw new AppError(code, reply.error.message, reply.error.details ?? {});
}

/** JSON on the wire for both transports, so in-process answers have exactly the shape JetStream gives. */
export const encode = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));
export const decode = <T>(bytes: Uint8Array): T => JSON.parse(Buffer.from(bytes).toString('utf8')) as T;
