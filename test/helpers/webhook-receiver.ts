// A real webhook receiver for end-to-end tests: a node:http server on a free loopback port that records
// every request exactly as it arrived (method, headers, raw body bytes, arrival time) and answers each one
// as the test scripted it.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

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
  /** `Date.now()` when the request arrived: use it against wall-clock values (timestamps in headers). */
  wallAt: number;
}

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

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>/hook` */
  url: string;
  /** Every request so far, in arrival order (pushed once its body is complete). */
  readonly requests: ReceivedRequest[];
  /**
   * Sets the answers of the next requests in order; once they are used up, `then` answers every later
   * request (default 200).
   */
  script(answers: ScriptedAnswer[], then?: ScriptedAnswer): void;
  /** Resolves with the first `n` requests once `n` have arrived; rejects after `timeoutMs`. */
  waitFor(n: number, timeoutMs: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1 with a free port; by default it answers 200 to everything. */
export async function startWebhookReceiver(
  answers: ScriptedAnswer[] = [],
  then: ScriptedAnswer = 200,
): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = [];
  let queue = [...answers];
  let fallback = then;
  const waiters = new Set<() => void>();

  const server = createServer((req, res) => {
    const at = performance.now();
    const wallAt = Date.now();
    // Decide the answer at arrival, so the script order is the arrival order.
    const answer = queue.length > 0 ? queue.shift()! : fallback;
    const chunks: Buffer[] = [];
    res.on('error', () => {}); // a client that hangs up mid-answer is not the receiver's problem
    req.on('error', () => {});
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
        at,
        wallAt,
      });
      for (const waiter of [...waiters]) waiter();
      respond(answer, req, res);
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    script(next, nextThen = 200) {
      queue = [...next];
      fallback = nextThen;
    },
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
