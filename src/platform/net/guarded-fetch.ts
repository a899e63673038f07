import http, { type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import {
  checkedAddresses,
  checkScheme,
  defaultTargetPolicy,
  pinnedLookup,
  type TargetPolicy,
} from './checked-target.ts';
import { FetchRefused } from './fetch-refused.ts';

/** Limits of one guarded exchange. */
export interface GuardedFetchOptions {
  /** Allow loopback/private targets and plain http (WEBHOOK_ALLOW_PRIVATE; tests). */
  allowPrivate: boolean;
  /** The whole exchange (DNS, connect, TLS, redirects, body) must finish within this. */
  timeoutMs: number;
  /** GET: larger bodies are refused. POST: the answer body is truncated to this. */
  maxBytes: number;
  /** GET only; default 3. */
  maxRedirects?: number;
  userAgent?: string;
}

/** What a successful guarded GET brings back. */
export interface GuardedGetResult {
  status: number;
  contentType: string;
  data: Buffer;
  finalUrl: string;
}

/** What a successful streamed guarded GET brings back: the body is read as the caller consumes it. */
export interface GuardedStreamResult {
  status: number;
  contentType: string;
  /** Fails with a `FetchRefused` past `maxBytes`, past the deadline, or when the connection is cut. */
  stream: Readable;
  finalUrl: string;
}

/** A non-2xx answer to a guarded GET; `status` lets a caller word its own message. */
export class HttpStatusRefused extends FetchRefused {
  constructor(readonly status: number) {
    super(`the server answered HTTP ${status}`, 'status');
  }
}

/** What a guarded POST brings back, whatever the status (the answer body truncated to `maxBytes`). */
export interface GuardedPostResult {
  status: number;
  body: string;
}

/** A guarded GET and POST bound to one target policy. */
export interface GuardedFetch {
  get(url: string, options: GuardedFetchOptions): Promise<GuardedGetResult>;
  /** As `get`, with the body as a stream: `timeoutMs` covers it until its end, `maxBytes` is counted on it. */
  getStream(url: string, options: GuardedFetchOptions): Promise<GuardedStreamResult>;
  post(
    url: string,
    body: string | Buffer,
    headers: Record<string, string>,
    options: GuardedFetchOptions,
  ): Promise<GuardedPostResult>;
}

const DEFAULT_USER_AGENT = 'MediaForge/0.1';
const DEFAULT_MAX_REDIRECTS = 3;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** Builds the guarded client; tests pass a resolver or address policy, the service uses the defaults. */
export function createGuardedFetch(overrides: Partial<TargetPolicy> = {}): GuardedFetch {
  const policy: TargetPolicy = { ...defaultTargetPolicy, ...overrides };
  return {
    get: (url, options) => get(url, options, policy),
    getStream: (url, options) => getStream(url, options, policy),
    post: (url, body, headers, options) => post(url, body, headers, options, policy),
  };
}

const defaultClient = createGuardedFetch();

/**
 * GET a URL into memory: https only (http only when allowPrivate), every resolved address checked, the
 * connection pinned to the checked addresses, redirects followed manually and re-checked, body capped at
 * maxBytes, the whole exchange bounded by timeoutMs. Non-2xx answers are refused with reason 'status'.
 */
export function guardedGet(url: string, options: GuardedFetchOptions): Promise<GuardedGetResult> {
  return defaultClient.get(url, options);
}

/** GET with the same guard as `guardedGet`, the body streamed (never whole in memory). */
export function guardedGetStream(url: string, options: GuardedFetchOptions): Promise<GuardedStreamResult> {
  return defaultClient.getStream(url, options);
}

/** POST a body with the same guard (no redirects followed); any status is returned, the answer truncated. */
export function guardedPost(
  url: string,
  body: string | Buffer,
  headers: Record<string, string>,
  options: GuardedFetchOptions,
): Promise<GuardedPostResult> {
  return defaultClient.post(url, body, headers, options);
}

async function get(
  url: string,
  options: GuardedFetchOptions,
  policy: TargetPolicy,
): Promise<GuardedGetResult> {
  const deadline = startDeadline(options.timeoutMs);
  try {
    const { res, finalUrl } = await openGet(url, options, policy, deadline);
    const data = await deadline.race(readBody(res, options.maxBytes, 'refuse'));
    const contentType = res.headers['content-type'] ?? 'application/octet-stream';
    return { status: res.statusCode ?? 0, contentType, data, finalUrl };
  } finally {
    deadline.clear();
  }
}

async function getStream(
  url: string,
  options: GuardedFetchOptions,
  policy: TargetPolicy,
): Promise<GuardedStreamResult> {
  const deadline = startDeadline(options.timeoutMs);
  try {
    const { res, finalUrl } = await openGet(url, options, policy, deadline);
    const contentType = res.headers['content-type'] ?? 'application/octet-stream';
    // From here the deadline belongs to the stream: it is cleared when the body ends or is abandoned.
    return {
      status: res.statusCode ?? 0,
      contentType,
      stream: limitedBody(res, options.maxBytes, deadline),
      finalUrl,
    };
  } catch (error) {
    deadline.clear();
    throw error;
  }
}

/** Follows redirects (each target checked) to a 2xx answer whose body is still unread. */
async function openGet(
  url: string,
  options: GuardedFetchOptions,
  policy: TargetPolicy,
  deadline: Deadline,
): Promise<{ res: IncomingMessage; finalUrl: string }> {
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const headers = { 'user-agent': options.userAgent ?? DEFAULT_USER_AGENT, 'accept-encoding': 'identity' };
  let target = parseUrl(url);
  for (let redirects = 0; ; redirects++) {
    const res = await deadline.race(
      exchange(target, 'GET', undefined, headers, options, policy, deadline.signal),
    );
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (REDIRECT_STATUSES.has(status) && location) {
      res.destroy();
      if (redirects >= maxRedirects)
        throw new FetchRefused(`more than ${maxRedirects} redirects`, 'redirects');
      target = parseUrl(location, target);
      continue;
    }
    if (status < 200 || status > 299) {
      res.destroy(); // never read an error body: it must not reach a message
      throw new HttpStatusRefused(status);
    }
    return { res, finalUrl: target.href };
  }
}

async function post(
  url: string,
  body: string | Buffer,
  headers: Record<string, string>,
  options: GuardedFetchOptions,
  policy: TargetPolicy,
): Promise<GuardedPostResult> {
  const payload = typeof body === 'string' ? Buffer.from(body) : body;
  const merged: OutgoingHttpHeaders = { 'user-agent': options.userAgent ?? DEFAULT_USER_AGENT };
  for (const [name, value] of Object.entries(headers)) merged[name.toLowerCase()] = value;
  merged['content-length'] = String(payload.length);
  const deadline = startDeadline(options.timeoutMs);
  try {
    const target = parseUrl(url);
    const res = await deadline.race(
      exchange(target, 'POST', payload, merged, options, policy, deadline.signal),
    );
    const answer = await deadline.race(readBody(res, options.maxBytes, 'truncate'));
    return { status: res.statusCode ?? 0, body: answer.toString('utf8') };
  } finally {
    deadline.clear();
  }
}

/** Checks the target, then sends one request to a checked address and resolves with the answer's head. */
async function exchange(
  target: URL,
  method: 'GET' | 'POST',
  body: Buffer | undefined,
  headers: OutgoingHttpHeaders,
  options: GuardedFetchOptions,
  policy: TargetPolicy,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  checkScheme(target, options.allowPrivate);
  const addresses = await checkedAddresses(target, options.allowPrivate, policy);
  const transport = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    // agent: false — a fresh connection per request, never a pooled socket opened for another check.
    const req = transport.request(
      target,
      { method, headers, agent: false, lookup: pinnedLookup(addresses), signal },
      resolve,
    );
    req.on('error', (error) => reject(networkRefusal(error)));
    req.end(body);
  });
}

/** Reads a body up to `cap` bytes: 'refuse' fails beyond it (Content-Length first), 'truncate' stops there. */
function readBody(res: IncomingMessage, cap: number, overflow: 'refuse' | 'truncate'): Promise<Buffer> {
  const declared = Number(res.headers['content-length']);
  if (overflow === 'refuse' && Number.isFinite(declared) && declared > cap) {
    res.destroy();
    return Promise.reject(tooLarge(cap));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      if (size + chunk.length <= cap) {
        chunks.push(chunk);
        size += chunk.length;
        return;
      }
      res.destroy();
      if (overflow === 'refuse') return reject(tooLarge(cap));
      chunks.push(chunk.subarray(0, cap - size));
      resolve(Buffer.concat(chunks));
    });
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('error', (error) => reject(networkRefusal(error)));
    res.on('close', () => {
      if (!res.complete)
        reject(new FetchRefused('the connection closed before the answer was complete', 'network'));
    });
  });
}

/**
 * The body as a stream that pulls from the socket only as fast as it is read, and fails with a refusal past
 * `cap` bytes (at once when Content-Length says so), on the deadline, or when the connection is cut. Nothing
 * flows, and no error is emitted, before the first read: a failure before then is delivered to that read, so
 * a caller that prepares something before piping the body never meets an unhandled 'error'.
 */
function limitedBody(res: IncomingMessage, cap: number, deadline: Deadline): Readable {
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > cap) {
    res.destroy();
    throw tooLarge(cap);
  }
  let size = 0;
  let reading = false;
  let early: FetchRefused | undefined;
  const body = new Readable({
    read() {
      if (!reading) {
        reading = true;
        if (early) return void body.destroy(early);
        res.on('data', onData);
      }
      res.resume();
    },
    destroy(error, callback) {
      deadline.clear();
      res.destroy();
      callback(error);
    },
  });
  const fail = (error: FetchRefused) => {
    if (!reading) {
      early ??= error;
      res.destroy();
    } else if (!body.destroyed) {
      body.destroy(error);
    }
  };
  const onDeadline = () =>
    fail(new FetchRefused(`no complete answer within ${deadline.timeoutMs} ms`, 'timeout'));
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (size > cap) return fail(tooLarge(cap));
    if (!body.push(chunk)) res.pause();
  };
  deadline.signal.addEventListener('abort', onDeadline, { once: true });
  res.on('end', () => {
    deadline.clear();
    body.push(null);
  });
  res.on('error', (error) => (deadline.signal.aborted ? onDeadline() : fail(networkRefusal(error))));
  res.on('close', () => {
    if (!res.complete)
      fail(new FetchRefused('the connection closed before the answer was complete', 'network'));
  });
  return body;
}

interface Deadline {
  timeoutMs: number;
  signal: AbortSignal;
  race<T>(work: Promise<T>): Promise<T>;
  clear(): void;
}

/** One timer for the whole exchange: when it fires, the request is aborted and the caller sees 'timeout'. */
function startDeadline(timeoutMs: number): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const expired = new Promise<never>((_resolve, reject) =>
    controller.signal.addEventListener(
      'abort',
      () => reject(new FetchRefused(`no complete answer within ${timeoutMs} ms`, 'timeout')),
      { once: true },
    ),
  );
  expired.catch(() => undefined); // only observed through race()
  return {
    timeoutMs,
    signal: controller.signal,
    race: (work) => Promise.race([work, expired]),
    clear: () => clearTimeout(timer),
  };
}

function parseUrl(text: string, base?: URL): URL {
  try {
    return new URL(text, base);
  } catch {
    throw new FetchRefused(
      base ? 'the redirect target is not a valid URL' : 'the URL is not valid',
      'scheme',
    );
  }
}

function tooLarge(cap: number): FetchRefused {
  return new FetchRefused(`the answer is larger than ${cap} bytes`, 'too_large');
}

/** A network failure as a refusal: only the error code is kept (Node's messages name internal addresses). */
function networkRefusal(error: unknown): FetchRefused {
  if (error instanceof FetchRefused) return error;
  const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code))
    return new FetchRefused(`the server's TLS certificate is not trusted (${code})`, 'network');
  if (code === 'ECONNREFUSED') return new FetchRefused('the server refused the connection', 'network');
  return new FetchRefused(`the request failed (${code})`, 'network');
}
