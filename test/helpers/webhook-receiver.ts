// A real webhook receiver for end-to-end tests: a node:http server on a free loopback port that records
// every request exactly as it arrived (method, path, headers, raw body bytes, arrival time, when its
// connection closed) and answers each one as the test scripted it.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * How to answer one request:
 * - a status code (empty body);
 * - `'hang'`: read the request, never answer (the socket stays open until the client gives up or `close()`);
 * - `{ status, headers?, body? }`;
 * - a function that writes the answer itself (hostile receivers: huge bodies, trickles).
 */
export type ScriptedAnswer =
  | number
  | 'hang'
  | { status: number; headers?: Record<string, string>; body?: string | Buffer }
  | ((req: IncomingMessage, res: ServerResponse) => void);

/** One request as the receiver saw it. */
export interface ReceivedRequest {
  method: string;
  /** Path and query of the request line. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body bytes, before any decoding. */
  body: Buffer;
  /** `performance.now()` when the request (its headers) arrived: use it for gaps between requests. */
  at: number;
  /** `Date.now()` when the request arrived: use it against wall-clock values (timestamps, `completed_at`). */
  wallAt: number;
  /** How the receiver answered it. */
  answer: ScriptedAnswer;
  /** `performance.now()` when its answer was over or its connection closed (a hanging one: the client gave up). */
  closedAt?: number;
}

/** Picks the answer of a request (complete, body included) from it and the requests recorded before it. */
export type Decide = (req: ReceivedRequest, earlier: readonly ReceivedRequest[]) => ScriptedAnswer;

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** `http://127.0.0.1:<port>/hook` */
  url: string;
  /** Every request so far, in the order their bodies completed (the order they were answered in). */
  readonly requests: ReceivedRequest[];
  /** The requests on one path (path and query), in order. */
  requestsTo(path: string): ReceivedRequest[];
  /** Resolves with the first `n` requests once `n` have arrived; rejects after `timeoutMs`. */
  waitFor(n: number, timeoutMs: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/**
 * Starts a receiver on 127.0.0.1 with a free port. `answers` are the answers of the first requests in order,
 * `then` answers every later one (by default: 200 to everything); or `answers` is a `Decide` that picks each.
 */
export async function startWebhookReceiver(
  answers: ScriptedAnswer[] | Decide = [],
  then: ScriptedAnswer = 200,
): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = [];
  const queue = Array.isArray(answers) ? [...answers] : [];
  const decide: Decide = Array.isArray(answers) ? () => (queue.length > 0 ? queue.shift()! : then) : answers;
  const waiters = new Set<() => void>();

  const server = createServer((req, res) => {
    const at = performance.now();
    const wallAt = Date.now();
    const chunks: Buffer[] = [];
    res.on('error', () => {}); // a client that hangs up mid-answer is not the receiver's problem
    req.on('error', () => {});
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
        at,
        wallAt,
        answer: 200,
      };
      received.answer = decide(received, requests.slice());
      requests.push(received);
      res.on('close', () => (received.closedAt ??= performance.now()));
      for (const waiter of [...waiters]) waiter();
      respond(received.answer, req, res);
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;

  return {
    origin,
    url: `${origin}/hook`,
    requests,
    requestsTo: (path) => requests.filter((r) => r.path === path),
    waitFor(n, timeoutMs) {
      if (requests.length >= n) return Promise.resolve(requests.slice(0, n));
      return new Promise((resolve, reject) => {
        const check = () => {
          if (requests.length < n) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(requests.slice(0, n));
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `webhook receiver ${port}: ${requests.length} request(s) after ${timeoutMs} ms, expected ${n}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function respond(answer: ScriptedAnswer, req: IncomingMessage, res: ServerResponse): void {
  if (answer === 'hang') return;
  if (typeof answer === 'function') {
    answer(req, res);
    return;
  }
  if (typeof answer === 'number') {
    res.writeHead(answer, { 'content-length': '0' });
    res.end();
    return;
  }
  const body = answer.body ?? '';
  res.writeHead(answer.status, { 'content-length': String(Buffer.byteLength(body)), ...answer.headers });
  res.end(body);
}
