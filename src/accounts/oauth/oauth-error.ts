/** An error answered as RFC 6749 §5.2 / RFC 7591 §3.2.2 `{ error, error_description }`. */
export class OAuthError extends Error {
  constructor(
    readonly code: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}
