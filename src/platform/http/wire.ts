import type { Readable } from 'node:stream';

// The front's request and answer as plain values: what the pipeline and handlers see, without loading the
// native uWebSockets.js binding (server.ts does that).

/** A request copied out of uWebSockets.js: safe after awaits (docs/architecture.md, uWebSockets.js rules). */
export interface IncomingRequest {
  method: string;
  path: string;
  rawQuery: string;
  headers: Record<string, string>;
  remoteAddress: string;
  /** The whole body (bounded); rejects with a 413 AppError when it is too large. */
  body(): Promise<Buffer>;
  /**
   * The body as a stream read with backpressure (uploads), at most `maxBytes` (else it fails with a 413
   * AppError; one announced larger throws at once). A body is read once: by `body()` or by this.
   */
  bodyStream(maxBytes: number): Readable;
  /** True once the client has gone away; nothing may be written then. */
  readonly aborted: boolean;
}

/**
 * A body read from a stream of known length, written with backpressure. The front owns the stream: it
 * destroys it once the answer is written, when the client goes away, or unread for HEAD.
 */
export class StreamedBody {
  constructor(
    readonly stream: Readable,
    /** Its size (`Content-Length`); undefined: sent chunked as it comes (an event stream). */
    readonly length: number | undefined,
  ) {}
}

/**
 * The answer to a WebSocket handshake the route accepted: the front upgrades the connection and hands `data`
 * to the socket's handlers. Only a route served on a socket pattern (HttpServer.sockets) may answer it.
 */
export class SocketUpgrade {
  constructor(readonly data: unknown) {}
}

/** A finished answer for the front to write (for HEAD: its headers only, with the body's length). */
export interface OutgoingResponse {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer | StreamedBody | SocketUpgrade;
  /** Close the connection after this answer (used when an unread body is left on the wire). */
  closeConnection?: boolean;
}

export type RequestHandler = (request: IncomingRequest) => Promise<OutgoingResponse>;

/** Raised to a handler still reading the body of a request whose client has gone. */
export class ClientGoneError extends Error {
  constructor() {
    super('client closed the connection');
  }
}
