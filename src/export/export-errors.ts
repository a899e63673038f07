import { AppError, type ErrorCode } from '../platform/index.ts';

// The export's errors (docs/errors.md, Export errors): a stable code in `error`, a message safe to show, and
// nothing of ffmpeg's own output (that goes to the log, as the error's cause).

export const EXPORT_ERRORS = {
  no_video_clips: 'bad_request',
  corrupt_source: 'unprocessable',
  unsupported_feature: 'unprocessable',
  rate_limited: 'rate_limited',
  ffmpeg_failed: 'internal',
  export_failed: 'internal',
  source_fetch_failed: 'bad_gateway',
  storage_unconfigured: 'unavailable',
  export_timeout: 'timeout',
  ffmpeg_timeout: 'timeout',
} as const satisfies Record<string, ErrorCode>;

export type ExportErrorCode = keyof typeof EXPORT_ERRORS;

/** `{ error: <code>, message }` with the code's status; `cause` stays in the log. */
export function exportError(
  code: ExportErrorCode,
  message: string,
  cause?: unknown,
  headers: Record<string, string> = {},
): AppError {
  const failure = new AppError(EXPORT_ERRORS[code], code, { message }, headers);
  if (cause !== undefined) failure.cause = cause;
  return failure;
}

/** The export code an error answers with, if it is one of them. */
export function exportErrorCode(error: unknown): ExportErrorCode | undefined {
  if (!(error instanceof AppError)) return undefined;
  return Object.hasOwn(EXPORT_ERRORS, error.message) ? (error.message as ExportErrorCode) : undefined;
}
