import { STATUS_CODES } from 'node:http';
import * as uws from 'uWebSockets.js';
import type { Logger } from 'pino';
import { AppError } from '../domain/errors.ts';

/** A request copied out of uWebSockets.js: safe to use after awaits (DESIGN.md §4). */
export interface IncomingRequest {
  method: string;
  path: string;
  rawQuery: string;
  headers: Record<string, string>;
  remoteAddress: string;
  /** The whole body (bounded); rejects with a 413 AppError when it is too large. */
  body(): Promise<Buffer>;
  /** True once the client has gone away; nothing may be written then. */
  readonly aborted: boolean;
}

/** A finished answer for the front to write. */
export interface OutgoingResponse {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
  /** Close the connection after this answer (used when an unread body is left on the wire). */
  closeConnection?: boolean;
}

export type RequestHandler = (request: IncomingRequest) => Promise<OutgoingResponse>;

/** A running HTTP front. */
export interface HttpServer {
  port: number;
  /** Stops accepting connections, waits (bounded) for in-flight requests, then closes every socket. */
  close(graceMs: number): Promise<void>;
  readonly inFlight: number;
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const decoder = new TextDecoder();

/** Starts the uWebSockets.js front on host:port (port 0 picks a free one). */
export function startHttpServer(options: {
  host: string;
  port: number;
  maxBodyBytes: number;
  handle: RequestHandler;
  log: Logger;
}): Promise<HttpServer> {
  const { handle, log, maxBodyBytes } = options;
  const app = uws.App();
  let inFlight = 0;
  let idle: (() => void) | undefined;

  app.any('/*', (res, req) => {
    // Everything from `req` is copied now: it is invalid after this function returns.
    const headers: Record<string, string> = {};
    req.forEach((key, value) => {
      headers[key] = key in headers ? `${headers[key]}, ${value}` : value;
    });
    const method = req.getCaseSensitiveMethod().toUpperCase();
    const path = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const remoteAddress = decoder.decode(res.getRemoteAddressAsText());
    const body = METHODS_WITH_BODY.has(method) ? readBody(res, headers, maxBodyBytes) : emptyBody;
    // A plain property, not a getter: an object literal with a per-request accessor closure gets a hidden
    // class of its own every time, which V8 keeps, and garbage collection pauses grew to several ms.
    const request: IncomingRequest & { aborted: boolean } = {
      method,
      path,
      rawQuery,
      headers,
      remoteAddress,
      body: body.read,
      aborted: false,
    };
    res.onAborted(() => {
      request.aborted = true;
      body.abort(); // a handler waiting for the rest of the body must not wait forever
    });
    inFlight++;
    handle(request)
      .then((response) => {
        // An answer given before the body arrived (401, 413, ...) leaves bytes on the wire: close after it.
        if (!request.aborted) write(res, body.complete() ? response : { ...response, closeConnection: true });
      })
      .catch((error: unknown) => {
        log.error({ err: error }, 'request handler failed outside the pipeline');
        if (!request.aborted)
          write(res, { status: 500, headers: {}, body: '{"error":"Internal server error"}' });
      })
      .finally(() => {
        inFlight--;
        if (inFlight === 0) idle?.();
      });
  });

  return new Promise((resolve, reject) => {
    app.listen(options.host, options.port, (token) => {
      if (!token) return reject(new Error(`cannot listen on ${options.host}:${options.port}`));
      const port = uws.us_socket_local_port(token as unknown as uws.us_socket);
      resolve({
        port,
        get inFlight() {
          return inFlight;
        },
        async close(graceMs) {
          uws.us_listen_socket_close(token);
          if (inFlight > 0) {
            await new Promise<void>((done) => {
              const timer = setTimeout(done, graceMs);
              idle = () => {
                clearTimeout(timer);
                done();
              };
            });
          }
          app.close();
        },
      });
    });
  });
}

interface BodyReader {
  read(): Promise<Buffer>;
  complete(): boolean;
  abort(): void;
}

const emptyBody: BodyReader = {
  read: () => Promise.resolve(Buffer.alloc(0)),
  complete: () => true,
  abort: () => undefined,
};

/** Raised to a handler still reading the body of a request whose client has gone. */
export class ClientGoneError extends Error {
  constructor() {
    super('client closed the connection');
  }
}

/** Starts buffering the body at once (uWebSockets.js needs onData attached synchronously). */
function readBody(res: uws.HttpResponse, headers: Record<string, string>, limit: number): BodyReader {
  let complete = false;
  let abort: () => void = () => undefined;
  const declared = Number(headers['content-length']);
  const tooLarge = () => new AppError('payload_too_large', `Request body too large (max ${limit} bytes)`);
  const promise = new Promise<Buffer>((resolve, reject) => {
    abort = () => reject(new ClientGoneError());
    if (Number.isFinite(declared) && declared > limit) {
      // Do not read what was announced as too large; the connection is closed after the 413.
      res.onData(() => undefined);
      return reject(tooLarge());
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    res.onData((chunk, isLast) => {
      if (failed) return;
      size += chunk.byteLength;
      if (size > limit) {
        failed = true;
        return reject(tooLarge());
      }
      chunks.push(Buffer.from(chunk.slice(0))); // the ArrayBuffer is reused by uWebSockets.js after this call
      if (isLast) {
        complete = true;
        resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
      }
    });
  });
  promise.catch(() => undefined); // a handler that never reads the body must not leave an unhandled rejection
  return { read: () => promise, complete: () => complete, abort: () => abort() };
}

function write(res: uws.HttpResponse, response: OutgoingResponse): void {
  res.cork(() => {
    res.writeStatus(`${response.status} ${STATUS_CODES[response.status] ?? ''}`.trimEnd());
    const headers = response.headers;
    for (const name in headers) res.writeHeader(name, headers[name]!);
    res.end(response.body, response.closeConnection ?? false);
  });
}
