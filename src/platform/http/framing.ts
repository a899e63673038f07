// Where a request's body ends must be beyond doubt (docs/api.md#http-rules): when two readers of the same bytes
// (a proxy in front, this service) can find different ends, a second request can hide inside the first body
// ("request smuggling"). uWebSockets.js refuses most ambiguous forms itself; it takes the first of repeated
// Content-Length fields and accepts some transfer codings it does not decode, which these rules refuse.

/** The header fields that delimit a request body, each value as often as the field came. */
export interface FramingFields {
  contentLength: string[];
  transferEncoding: string[];
}

/** The messages of the 400 answers (docs/errors.md). */
export const FRAMING_MESSAGES = {
  repeatedLength: 'Ambiguous request: more than one Content-Length header',
  lengthAndChunks: 'Ambiguous request: both Content-Length and Transfer-Encoding',
  transferCoding: 'Unsupported Transfer-Encoding: only a single chunked coding is accepted',
} as const;

/**
 * Why the request's framing is refused, or undefined when it is sound: at most one Content-Length (even a
 * repeat of the same value is refused, as its list form `3, 3` is), never with Transfer-Encoding, and a
 * Transfer-Encoding only as one field whose value is `chunked` (any case).
 */
export function framingProblem({ contentLength, transferEncoding }: FramingFields): string | undefined {
  if (contentLength.length > 1) return FRAMING_MESSAGES.repeatedLength;
  if (transferEncoding.length === 0) return undefined;
  if (contentLength.length > 0) return FRAMING_MESSAGES.lengthAndChunks;
  const [only] = transferEncoding;
  if (transferEncoding.length > 1 || only!.trim().toLowerCase() !== 'chunked')
    return FRAMING_MESSAGES.transferCoding;
  return undefined;
}
