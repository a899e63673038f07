/** Every error code the service answers with, and the HTTP status each one maps to. */
export const ERROR_STATUS = {
  bad_request: 400,
  invalid_json: 400,
  unauthorized: 401,
  insufficient_credits: 402,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media: 415,
  unprocessable: 422,
  upgrade_required: 426,
  rate_limited: 429,
  internal: 500,
  bad_gateway: 502,
  unavailable: 503,
  timeout: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * The one error type of the service: a code (which fixes the status), a user-facing message, extra fields. It
 * is terminal by type: it is the answer, so the actor runtime hands it to the caller at once, never retrying.
 */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  /** The `{ error, ...fields }` body every error answer carries. */
  toBody(): Record<string, unknown> {
    return { error: this.message, ...this.details };
  }
}

/**
 * The project does not exist (or is not the caller's): 404 `Project not found`. Callers that must tell it
 * from other 404s (a turn that loses its project stops) test for it by type; it keeps its type across the
 * actor wire.
 */
export class ProjectNotFound extends AppError {
  constructor(message = 'Project not found', details: Record<string, unknown> = {}) {
    super('not_found', message, details);
    this.name = 'ProjectNotFound';
  }
}
