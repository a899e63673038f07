/** Why an outbound request was refused or failed; callers map these to API messages or retry decisions. */
export type RefusalReason =
  'scheme' | 'address' | 'too_large' | 'timeout' | 'status' | 'network' | 'redirects';

/** An outbound request that was refused by the guard or failed; the message is short and safe to show. */
export class FetchRefused extends Error {
  constructor(
    message: string,
    readonly reason: RefusalReason,
  ) {
    super(message);
    this.name = 'FetchRefused';
  }
}

/** A readable, safe reason for any error thrown by the guarded fetch (unknown errors stay vague). */
export function describeRefusal(error: unknown): string {
  return error instanceof FetchRefused ? error.message : 'the URL could not be fetched';
}
