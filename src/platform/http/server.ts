import { STATUS_CODES } from 'node:http';
import { Readable } from 'node:stream';
import * as uws from 'uWebSockets.js';
import type { Logger } from 'pino';
import { AppError } from '../core/errors.ts';
import { framingProblem, type FramingFields } from './framing.ts';
import {
  ClientGoneError,
  SocketUpgrade,
  StreamedBody,
  type IncomingRequest,
  type OutgoingResponse,
  type RequestHandler,
} from './wire.ts';

/** A running HTTP front. */
export interface HttpServer {
  port: number;
  /** Hands every request from now on to `handle` (until then: 503 `Service starting`). */
  serve(handle: RequestHandler): void;
  /** Serves a WebSocket route (its handshake runs through the request handler like any request). */
  sockets<T>(pattern: string, behavior: SocketBehavior<T>): void;
  /** Sends a text message to every socket subscribed to `topic` (uWS pub/sub); false when none is. */
  publish(topic: string, message: string): boolean;
  /**
   * Waits (bounded) for in-flight requests, still accepting connections (a draining node answers its probes,
   * and refuses other requests itself), then stops listening and closes every socket.
   */
  close(graceMs: number): Promise<void>;
  readonly inFlight: number;
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const decoder = new TextDecoder();

/** What a socket route sees of a uWS WebSocket (the native binding stays in this module). */
export type ServerSocket<T> = Pick<
  uws.WebSocket<T>,
  'getUserData' | 'send' | 'end' | 'subscribe' | 'getBufferedAmount'
>;

/** What a WebSocket route does once its handshake was accepted. */
export interface SocketBehavior<T> {
  /** A larger client message drops the connection (uWS closes it without a close frame). */
  maxPayloadLength: number;
  /**
   * uWS pings a socket silent for half of this many seconds and drops one silent for all of them (keeps idle
   * sockets alive through proxies, and finds dead peers).
   */
  idleTimeoutSec: number;
  open(ws: ServerSocket<T>): void;
  close(ws: ServerSocket<T>, code: number): void;
}

const JSON_TYPE = 'application/json; charset=utf-8';
/** The only WebSocket version there is (RFC 6455); a handshake asking for another is refused. */
const WEBSOCKET_VERSION = '13';
const UPGRADE_HEADERS = {
  'content-type': JSON_TYPE,
  upgrade: 'websocket',
  'sec-websocket-version': WEBSOCKET_VERSION,
};

const NOT_AN_UPGRADE: OutgoingResponse = {
  status: 426,
  headers: UPGRADE_HEADERS,
  body: '{"error":"This route is a WebSocket: connect with a WebSocket client"}',
};

/** A handshake whose Sec-WebSocket-Version is missing or not 13 (RFC 6455 §4.4): nothing is upgraded. */
const WRONG_WEBSOCKET_VERSION: OutgoingResponse = {
  status: 426,
  headers: UPGRADE_HEADERS,
  body: `{"error":"Unsupported WebSocket version: send Sec-WebSocket-Version: ${WEBSOCKET_VERSION}"}`,
};

/** A request whose body framing is ambiguous (framing.ts): refused, and its connection closed. */
const badFraming = (message: string): OutgoingResponse => ({
  status: 400,
  headers: { 'content-type': JSON_TYPE },
  body: JSON.stringify({ error: message }),
  closeConnection: true,
});

/** Answers every request while the service is still being wired (readiness: not yet). */
const starting: RequestHandler = async () => ({
  status: 503,
  headers: { 'content-type': JSON_TYPE, 'retry-after': '1' },
  body: '{"error":"Service starting"}',
});

/** What the request and handshake paths of one front share. */
interface Front {
  /** The request handler (503 `Service starting` until `serve`). */
  handle: RequestHandler;
  /** Requests and handshakes being answered (downloads until their last byte). */
  inFlight: number;
  /** Called when `inFlight` drops to 0 (a graceful close waiting). */
  idle: (() => void) | undefined;
  log: Logger;
  maxBodyBytes: number;
}

/** One request or handshake is answered. */
function settle(front: Front): void {
  front.inFlight--;
  if (front.inFlight === 0) front.idle?.();
}

/**
 * Starts the uWebSockets.js front on host:port (port 0 picks a free one). Without `handle` it binds first and
 * answers 503 until `serve(handle)`: the service learns its own URL (PORT=0) before it wires anything.
 */
export function startHttpServer(options: {
  host: string;
  port: number;
  maxBodyBytes: number;
  handle?: RequestHandler;
  log: Logger;
}): Promise<HttpServer> {
  const front: Front = {
    handle: options.handle ?? starting,
    inFlight: 0,
    idle: undefined,
    log: options.log,
    maxBodyBytes: options.maxBodyBytes,
  };
  const app = uws.App();
  app.any('/*', (res, req) => answerRequest(front, res, req));

  return new Promise((resolve, reject) => {
    app.listen(options.host, options.port, (token) => {
      if (!token) return reject(new Error(`cannot listen on ${options.host}:${options.port}`));
      const port = uws.us_socket_local_port(token as unknown as uws.us_socket);
      let listening = true;
      const stopListening = () => {
        if (listening) uws.us_listen_socket_close(token);
        listening = false;
      };
      resolve({
        serve(next) {
          front.handle = next;
        },
        sockets: (pattern, behavior) => socketRoute(front, app, pattern, behavior),
        publish: (topic, message) => app.publish(topic, message),
        port,
        get inFlight() {
          return front.inFlight;
        },
        async close(graceMs) {
          if (front.inFlight > 0) {
            await new Promise<void>((done) => {
              const timer = setTimeout(done, graceMs);
              front.idle = () => {
                clearTimeout(timer);
                done();
              };
            });
          }
          stopListening();
          app.close();
        },
      });
    });
  });
}

/**
 * Answers a request the front refuses by itself (ambiguous framing, wrong WebSocket version) and closes its
 * connection. Answered on the next turn of the event loop, never inside the uWS handler: a request pipelined
 * behind this one in the same read then finds a response pending, and uWS drops the connection instead of
 * dispatching it; answered at once, uWS would go on to parse and run whatever followed (a smuggled request).
 */
function refuse(res: uws.HttpResponse, response: OutgoingResponse): void {
  let aborted = false;
  res.onAborted(() => (aborted = true));
  setImmediate(() => {
    if (!aborted) write(res, { ...response, closeConnection: true });
  });
}

/** Hands one HTTP request to the handler, and writes its answer (streamed bodies chunk by chunk). */
function answerRequest(front: Front, res: uws.HttpResponse, req: uws.HttpRequest): void {
  const { log } = front;
  const { request, body, framing } = copyRequest(res, req, front.maxBodyBytes);
  if (framing) {
    log.warn(
      { remote_address: request.remoteAddress, reason: framing },
      'request refused: ambiguous framing',
    );
    return refuse(res, badFraming(framing));
  }
  let stopStreaming: (() => void) | undefined;
  res.onAborted(() => {
    request.aborted = true;
    body.abort(); // a handler waiting for the rest of the body must not wait forever
    stopStreaming?.();
  });
  front.inFlight++;
  front
    .handle(request)
    .then((answer): Promise<void> | void => {
      // A socket route reached without a WebSocket handshake (uWS hands those to `any`).
      const response = answer.body instanceof SocketUpgrade ? NOT_AN_UPGRADE : answer;
      const streamed = response.body instanceof StreamedBody ? response.body : undefined;
      const head = request.method === 'HEAD';
      if (streamed && (request.aborted || head)) streamed.stream.destroy();
      if (request.aborted) return;
      body.release();
      // An answer given before the body arrived (401, 413, ...) leaves bytes on the wire: close after it.
      const complete = body.complete() ? response : { ...response, closeConnection: true };
      if (!streamed || head) return write(res, complete, head);
      // Counted in flight until the last byte is written, so a graceful close waits for downloads too.
      const streaming =
        streamed.length === undefined
          ? streamChunked(res, complete, streamed.stream, log)
          : streamBody(res, complete, streamed as StreamedBody & { length: number }, log);
      stopStreaming = streaming.abort;
      return streaming.done;
    })
    .catch((error: unknown) => {
      log.error({ err: error }, 'request handler failed outside the pipeline');
      if (request.aborted) return;
      body.release();
      write(res, { status: 500, headers: {}, body: '{"error":"Internal server error"}' });
    })
    .finally(() => settle(front));
}

/**
 * A WebSocket route: the handshake goes through the same pipeline as every request (authentication, limits,
 * the route's checks, audit); a route that accepts answers `SocketUpgrade`, anything else is written as an
 * HTTP answer and the connection closed.
 */
function socketRoute<T>(
  front: Front,
  app: uws.TemplatedApp,
  pattern: string,
  behavior: SocketBehavior<T>,
): void {
  const { log } = front;
  app.ws<T>(pattern, {
    maxPayloadLength: behavior.maxPayloadLength,
    idleTimeout: behavior.idleTimeoutSec,
    sendPingsAutomatically: true,
    // No limit of uWS's own: past it uWS silently drops messages, and even the close frame. The owner
    // enforces its limit by closing a slow socket while its close frame still fits (events-socket.ts).
    maxBackpressure: 0,
    upgrade: (res, req, context) => {
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      const { request, framing } = copyRequest(res, req, 0);
      if (framing) {
        log.warn(
          { remote_address: request.remoteAddress, reason: framing },
          'handshake refused: ambiguous framing',
        );
        return refuse(res, badFraming(framing));
      }
      // Missing, repeated (joined into "13, 8") or another number: no upgrade, whatever else the request says.
      if (request.headers['sec-websocket-version'] !== WEBSOCKET_VERSION)
        return refuse(res, WRONG_WEBSOCKET_VERSION);
      moveAccessToken(request);
      res.onAborted(() => {
        request.aborted = true;
      });
      front.inFlight++;
      front
        .handle(request)
        .then((response) => {
          if (request.aborted) return;
          const accepted = response.body instanceof SocketUpgrade ? response.body : undefined;
          if (!accepted) return write(res, { ...response, closeConnection: true });
          // Not corked, unlike every other asynchronous write: uWS's cork() can take a socket upgraded inside
          // it for the HTTP response it was and close it (uNetworking/uWebSockets#1928, fixed upstream by PR
          // #1929, not in this build); the maintainers' workaround is an uncorked upgrade. uWS prints a warning
          // about it to stderr, a few times per process.
          res.upgrade(accepted.data as T, key, protocol, extensions, context);
        })
        .catch((error: unknown) => {
          log.error({ err: error }, 'socket handshake failed outside the pipeline');
          if (request.aborted) return;
          write(res, {
            status: 500,
            headers: {},
            body: '{"error":"Internal server error"}',
            closeConnection: true,
          });
        })
        .finally(() => settle(front));
    },
    open: (ws) => behavior.open(ws),
    message: () => undefined, // the stream is one-way; clients' messages are ignored
    close: (ws, code) => behavior.close(ws, code),
  });
}

/**
 * Copies everything from `req` now: it is invalid once the uWS handler returns. A request
 * whose framing is refused (`framing`: why) gets no body reader: its body is never read.
 */
function copyRequest(res: uws.HttpResponse, req: uws.HttpRequest, maxBodyBytes: number) {
  const headers: Record<string, string> = {};
  const fields: FramingFields = { contentLength: [], transferEncoding: [] };
  req.forEach((key, value) => {
    headers[key] = key in headers ? `${headers[key]}, ${value}` : value;
    if (key === 'content-length') fields.contentLength.push(value);
    else if (key === 'transfer-encoding') fields.transferEncoding.push(value);
  });
  const framing = framingProblem(fields);
  const method = req.getCaseSensitiveMethod().toUpperCase();
  const body = METHODS_WITH_BODY.has(method) && !framing ? readBody(res, headers, maxBodyBytes) : emptyBody;
  // A plain property, not a getter: an object literal with a per-request accessor closure gets a hidden
  // class of its own every time, which V8 keeps, and garbage collection pauses grew to several ms.
  const request: IncomingRequest & { aborted: boolean } = {
    method,
    path: req.getUrl(),
    rawQuery: req.getQuery() ?? '',
    headers,
    remoteAddress: decoder.decode(res.getRemoteAddressAsText()),
    body: body.read,
    bodyStream: body.stream,
    aborted: false,
  };
  return { request, body, framing };
}

/**
 * Browsers cannot set headers on a WebSocket handshake, so a socket's key may come as `?access_token=`
 * (docs/api.md, Authentication): it becomes the Authorization header (unless one was sent) and leaves the
 * query, so no query schema, log line or audit entry sees it.
 */
function moveAccessToken(request: IncomingRequest): void {
  if (!request.rawQuery.includes('access_token=')) return;
  const query = new URLSearchParams(request.rawQuery);
  const token = query.get('access_token');
  query.delete('access_token');
  request.rawQuery = query.toString();
  if (token && request.headers.authorization === undefined) request.headers.authorization = `Bearer ${token}`;
}

interface BodyReader {
  read(): Promise<Buffer>;
  stream(maxBytes: number): Readable;
  complete(): boolean;
  /**
   * Resumes a socket still paused for this body; called as the answer goes out. uWS delivers what it had
   * read after `pause()`, the last chunk included, so a body can end paused: left so, the next request on the
   * keep-alive connection would stall until the idle timeout resets it. Not resumed earlier, because
   * `resume()` re-arms that timeout, which would then close a connection whose answer takes a while.
   */
  release(): void;
  abort(): void;
}

const emptyBody: BodyReader = {
  read: () => Promise.resolve(Buffer.alloc(0)),
  stream: () => Readable.from([]),
  complete: () => true,
  release: () => undefined,
  abort: () => undefined,
};

/** How much of a body is buffered ahead of its reader before the socket is paused. */
const BODY_HIGH_WATER_MARK = 256 * 1024;

/**
 * The body as a stream with backpressure (uWebSockets.js needs onData attached synchronously): chunks are
 * copied into a Readable, and the socket is paused while the reader is behind, so an upload of any size
 * holds at most about `BODY_HIGH_WATER_MARK` in memory. A route reads it once: whole (`read`, JSON bodies,
 * at most `limit`) or as a stream (`stream(maxBytes)`, uploads). A body announced larger than its reader's
 * limit is refused (413) without being read; the connection is closed after the answer.
 */
function readBody(res: uws.HttpResponse, headers: Record<string, string>, limit: number): BodyReader {
  let complete = false;
  let paused = false;
  let gone = false;
  const declared = Number(headers['content-length']);
  const tooLarge = (max: number) =>
    new AppError('payload_too_large', `Request body too large (max ${max} bytes)`);
  const release = () => {
    if (paused && !gone) {
      paused = false;
      res.resume();
    }
  };
  const source = new Readable({ highWaterMark: BODY_HIGH_WATER_MARK, read: release });
  source.on('error', () => undefined); // the reader hears of failures through its own promise or stream
  res.onData((chunk, isLast) => {
    if (source.destroyed) return;
    // The ArrayBuffer is reused by uWebSockets.js after this call: copy it.
    const accepted = chunk.byteLength === 0 || source.push(Buffer.from(chunk.slice(0)));
    if (isLast) {
      complete = true;
      source.push(null);
    } else if (!accepted && !paused) {
      paused = true;
      res.pause();
    }
  });
  let taken = false;
  /** The body, at most `max` bytes, for its one reader. */
  function take(max: number): AsyncGenerator<Buffer> {
    if (taken) throw new Error('the request body was already read');
    taken = true;
    if (Number.isFinite(declared) && declared > max) {
      source.destroy();
      throw tooLarge(max);
    }
    let size = 0;
    return (async function* limited() {
      for await (const chunk of source as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > max) {
          source.destroy();
          throw tooLarge(max);
        }
        yield chunk;
      }
    })();
  }
  return {
    async read() {
      const chunks: Buffer[] = [];
      for await (const chunk of take(limit)) chunks.push(chunk);
      return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    },
    // Uploads read it as a stream; JSON bodies (`read`) skip that wrapper.
    stream: (max) => Readable.from(take(max), { objectMode: false }),
    complete: () => complete,
    release,
    abort: () => {
      gone = true;
      source.destroy(new ClientGoneError());
    },
  };
}

// Answers that never carry a body, nor a Content-Length (RFC 9110 §8.6).
const BODILESS_STATUS = new Set([204, 304]);

function writeHead(res: uws.HttpResponse, response: OutgoingResponse): void {
  res.writeStatus(`${response.status} ${STATUS_CODES[response.status] ?? ''}`.trimEnd());
  const headers = response.headers;
  for (const name in headers) res.writeHeader(name, headers[name]!);
}

function write(res: uws.HttpResponse, response: OutgoingResponse, head = false): void {
  const { body } = response;
  const close = response.closeConnection ?? false;
  res.cork(() => {
    writeHead(res, response);
    if (BODILESS_STATUS.has(response.status) && !close) {
      res.endWithoutBody();
    } else if (head) {
      // This uWS build closes the connection after `endWithoutBody(length)`; without a length it writes no
      // Content-Length and keeps the connection, so the header is ours. (HEAD never leaves a body unread.)
      const length = body instanceof StreamedBody ? body.length : Buffer.byteLength(body as string | Buffer);
      if (length !== undefined) res.writeHeader('content-length', String(length));
      res.endWithoutBody();
    } else {
      // `end` also for a bodiless answer that must close: `endWithoutBody(undefined, true)` writes a bogus
      // Content-Length.
      res.end(body as string | Buffer, close);
    }
  });
}

/**
 * Writes a streamed body with backpressure: each chunk goes out through `tryEnd`; a chunk the socket did
 * not take pauses the source, and `onWritable` resends the rest of it from the offset the socket reached.
 * The status line and headers go out with the first chunk, so a source that fails before producing
 * anything still gets a clean 500. A source that fails later, or ends short, closes the connection: the
 * client sees a truncated body rather than a wrong one. `abort` (client gone) destroys the source.
 */
function streamBody(
  res: uws.HttpResponse,
  response: OutgoingResponse,
  body: StreamedBody & { length: number },
  log: Logger,
): { done: Promise<void>; abort(): void } {
  const { stream, length } = body;
  let settled = false;
  let started = false;
  let received = 0; // bytes taken from the source
  let pending: Buffer | undefined; // the part of a chunk the socket has not taken yet
  let pendingOffset = 0; // the response's write offset at the start of `pending`
  let ended = false;
  const { done, finish } = settlement(res, stream, () => (settled = true));
  /** Offers `chunk` to the socket; true when it took all of it. */
  const offer = (chunk: Buffer): boolean => {
    pendingOffset = res.getWriteOffset();
    const [ok, complete] = res.tryEnd(chunk, length);
    if (complete) {
      finish('complete');
      return true;
    }
    pending = ok ? undefined : chunk;
    return ok;
  };
  const checkShort = () => {
    if (settled || pending || !ended) return;
    log.error({ expected: length, received }, 'streamed body ended short; connection closed');
    finish('close');
  };

  if (length === 0) {
    write(res, { ...response, body: '' });
    finish('complete');
    return { done, abort: () => finish('aborted') };
  }
  res.onWritable((offset) => {
    if (settled || !pending) return true;
    const rest = pending.subarray(offset - pendingOffset);
    const ok = offer(rest);
    if (ok && !settled) {
      stream.resume();
      checkShort();
    }
    return ok;
  });
  stream.on('data', (data: Buffer) => {
    if (settled) return;
    const chunk = data.subarray(0, length - received); // never more than announced
    received += chunk.length;
    if (chunk.length === 0) return;
    if (pending) {
      // Paused sources should not emit, but if one does, its bytes simply queue behind the refused ones.
      pending = Buffer.concat([pending, chunk]);
      return;
    }
    let ok = true;
    res.cork(() => {
      if (!started) writeHead(res, response);
      started = true;
      ok = offer(chunk);
    });
    if (!ok) stream.pause();
  });
  stream.on('end', () => {
    ended = true;
    checkShort();
  });
  stream.on('error', (error) => {
    if (settled) return;
    log.error({ err: error }, 'streamed body failed');
    if (started) return finish('close');
    const headers = { 'content-type': 'application/json; charset=utf-8' };
    write(res, { status: 500, headers, body: '{"error":"Internal server error"}' });
    finish('complete');
  });
  return { done, abort: () => finish('aborted') };
}

/**
 * Writes a body of unknown length (an event stream) with chunked transfer encoding, each chunk as it comes; the
 * status line and headers go out with the first chunk (uWS finishes the head only with data: a source that must
 * show itself open at once starts with a chunk of its own, as an event stream's comment line). A chunk the socket
 * could not take whole stays buffered by uWS and pauses the source until the socket is writable again. The
 * source's end ends the response; a source that fails closes the connection; `abort` (client gone) destroys the
 * source.
 */
function streamChunked(
  res: uws.HttpResponse,
  response: OutgoingResponse,
  stream: Readable,
  log: Logger,
): { done: Promise<void>; abort(): void } {
  let settled = false;
  const { done, finish } = settlement(res, stream, () => (settled = true));
  res.onWritable(() => {
    if (!settled) stream.resume();
    return true;
  });
  let started = false;
  const head = () => {
    if (!started) writeHead(res, response);
    started = true;
  };
  stream.on('data', (chunk: Buffer) => {
    if (settled || chunk.length === 0) return;
    let ok = true;
    res.cork(() => {
      head();
      ok = res.write(chunk);
    });
    if (!ok) stream.pause();
  });
  stream.on('end', () => {
    if (settled) return;
    res.cork(() => {
      head();
      res.end();
    });
    finish('complete');
  });
  stream.on('error', (error) => {
    if (settled) return;
    log.error({ err: error }, 'streamed body failed');
    finish('close');
  });
  return { done, abort: () => finish('aborted') };
}

/**
 * How a streamed answer ends, once: the source is destroyed, the connection closed when the answer cannot be
 * whole (`close`; `res` stays valid until it is complete or aborted), and `done` resolves. `onSettle` marks the
 * caller's own state first.
 */
function settlement(res: uws.HttpResponse, stream: Readable, onSettle: () => void) {
  let settled = false;
  let settle!: () => void;
  const done = new Promise<void>((resolve) => (settle = resolve));
  const finish = (how: 'complete' | 'aborted' | 'close') => {
    if (settled) return;
    settled = true;
    onSettle();
    stream.destroy();
    if (how === 'close') res.close();
    settle();
  };
  return { done, finish };
}
