import { AppError } from './errors.ts';

/**
 * What to do when a handler throws.
 * - `transient`: the infrastructure hiccuped (a dropped database connection, a transaction that lost a
 *   write conflict, a time-out); the same command may well succeed a moment later, so it is retried inside
 *   the handler with back-off.
 * - `permanent`: the command itself is wrong (a validation or business error, an unknown command, a bug);
 *   retrying gives the same answer, so the caller gets it at once.
 */
export type HandlerErrorClass = 'transient' | 'permanent';

// Error names the MongoDB driver and Node use for failures that say nothing about the command itself.
const TRANSIENT_NAMES = new Set([
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoServerSelectionError',
  'MongoPoolClearedError',
  'MongoWriteConcernError',
  'MongoNotConnectedError',
  'TimeoutError',
]);
const TRANSIENT_LABELS = ['TransientTransactionError', 'RetryableWriteError', 'ResetPool'];
const TRANSIENT_SYSCALL_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN']);
// MongoDB server codes: NotWritablePrimary, PrimarySteppedDown, ShutdownInProgress, WriteConflict, …
const TRANSIENT_SERVER_CODES = new Set([6, 7, 89, 91, 112, 189, 251, 262, 9001, 10107, 11600, 11602, 13435]);

/** Classifies a handler failure by its shape (no driver import: actors stay driver-free). */
export function classifyHandlerError(error: unknown): HandlerErrorClass {
  if (error instanceof AppError) return error.code === 'unavailable' ? 'transient' : 'permanent';
  if (typeof error !== 'object' || error === null) return 'permanent';
  const candidate = error as {
    name?: unknown;
    code?: unknown;
    hasErrorLabel?: (label: string) => boolean;
    errorLabels?: unknown;
  };
  if (typeof candidate.name === 'string' && TRANSIENT_NAMES.has(candidate.name)) return 'transient';
  const labels = Array.isArray(candidate.errorLabels) ? (candidate.errorLabels as unknown[]) : [];
  if (TRANSIENT_LABELS.some((label) => candidate.hasErrorLabel?.(label) || labels.includes(label)))
    return 'transient';
  if (typeof candidate.code === 'string' && TRANSIENT_SYSCALL_CODES.has(candidate.code)) return 'transient';
  if (typeof candidate.code === 'number' && TRANSIENT_SERVER_CODES.has(candidate.code)) return 'transient';
  return 'permanent';
}
