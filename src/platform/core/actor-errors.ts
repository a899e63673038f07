import { AppError, ProjectNotFound } from './errors.ts';

/**
 * What to do when a handler throws, decided by the error's type (docs/architecture.md, "Actors"):
 * - `retryable`: the infrastructure hiccuped (a dropped database connection, a transaction that lost a write
 *   conflict, a lost race on a document's version, a time-out); the same command may well succeed a moment
 *   later, so the runtime reruns the handler with back-off.
 * - `terminal`: the command's answer (an `AppError`: a validation or business error) or a command that can
 *   never succeed (an unknown command, a bug); retrying gives the same answer, so the caller gets it at once.
 */
export type HandlerErrorClass = 'retryable' | 'terminal';

/**
 * Thrown by a handler (or its ports) when the infrastructure hiccuped and a rerun may succeed: the runtime
 * retries the handler with back-off, and once the retries are spent the caller gets `ActorUnavailableError`.
 * Never an answer itself. `cause` keeps the failure underneath, for the log.
 */
export class RetryableError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'RetryableError';
  }
}

/**
 * 503 `unavailable`: the actor could not answer — its retries were spent, no reply came in time, or the
 * transport could not take or deliver the message. The command may still run, so the caller may repeat it
 * with the same `op_id`. Keeps its type across the actor wire, so callers test for it with `instanceof`.
 */
export class ActorUnavailableError extends AppError {
  constructor(message = 'Service temporarily unavailable, try again', details: Record<string, unknown> = {}) {
    super('unavailable', message, details);
    this.name = 'ActorUnavailableError';
  }
}

/**
 * The `AppError` subclasses callers test for by type, under the `kind` each one crosses the actor wire as.
 * A fixed list, not registered at run time: both ends of the wire must agree on it.
 */
export const TYPED_ERRORS = {
  project_not_found: ProjectNotFound,
  actor_unavailable: ActorUnavailableError,
} satisfies Record<string, new (message?: string, details?: Record<string, unknown>) => AppError>;

/** How a typed `AppError` subclass is named on the actor wire. */
export type TypedErrorKind = keyof typeof TYPED_ERRORS;

// The adapter boundary: errors of the MongoDB driver and Node, which know nothing of `RetryableError`, are
// recognised by their shape. Error names that say nothing about the command itself:
const RETRYABLE_NAMES = new Set([
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoServerSelectionError',
  'MongoPoolClearedError',
  'MongoWriteConcernError',
  'MongoNotConnectedError',
  'TimeoutError',
]);
const RETRYABLE_LABELS = ['TransientTransactionError', 'RetryableWriteError', 'ResetPool'];
const RETRYABLE_SYSCALL_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN']);
// MongoDB server codes: NotWritablePrimary, PrimarySteppedDown, ShutdownInProgress, WriteConflict, …
const RETRYABLE_SERVER_CODES = new Set([6, 7, 89, 91, 112, 189, 251, 262, 9001, 10107, 11600, 11602, 13435]);

/**
 * Classifies a handler failure: by type first (`RetryableError` is retried; an `AppError` is the answer),
 * then a driver's error by its shape (no driver import: actors stay driver-free); anything else is terminal.
 */
export function classifyHandlerError(error: unknown): HandlerErrorClass {
  if (error instanceof RetryableError) return 'retryable';
  if (error instanceof AppError) return 'terminal';
  return isRetryableDriverError(error) ? 'retryable' : 'terminal';
}

/** Whether an error of the MongoDB driver or of Node's sockets reports an infrastructure hiccup. */
function isRetryableDriverError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const candidate = error as {
    name?: unknown;
    code?: unknown;
    hasErrorLabel?: (label: string) => boolean;
    errorLabels?: unknown;
  };
  if (typeof candidate.name === 'string' && RETRYABLE_NAMES.has(candidate.name)) return true;
  const labels = Array.isArray(candidate.errorLabels) ? (candidate.errorLabels as unknown[]) : [];
  if (RETRYABLE_LABELS.some((label) => candidate.hasErrorLabel?.(label) || labels.includes(label)))
    return true;
  if (typeof candidate.code === 'string' && RETRYABLE_SYSCALL_CODES.has(candidate.code)) return true;
  return typeof candidate.code === 'number' && RETRYABLE_SERVER_CODES.has(candidate.code);
}
