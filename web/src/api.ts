// The dashboard's only network layer. The session cookie authenticates /api/dashboard/v1 (with the CSRF token
// on state changes); /api/v1 takes a short-lived bearer token from POST /api/dashboard/v1/token, kept in memory
// only. No API key is ever stored by the browser.
import type { Session, SessionToken } from './api-types.ts';

/** An answer that was not 2xx: its status and parsed body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(errorText(status, body));
  }
}

function errorText(status: number, body: Record<string, unknown>): string {
  const message = typeof body.message === 'string' ? body.message : undefined;
  const error = typeof body.error === 'string' ? body.error : undefined;
  return message ?? error ?? `Request failed (${status})`;
}

/**
 * A 429 (a rate limit: the session's budget, or a busy project) is waited out, never shown as an error
 * (docs/dashboard.md "Rate limits"): the request is sent again after its `Retry-After`, up to this many times,
 * while the page shows a short "slow down, retrying" notice.
 */
const MAX_RATE_LIMITED_RETRIES = 10;
const DEFAULT_RETRY_AFTER_MS = 5_000;
const MAX_RETRY_AFTER_MS = 120_000;

const slowDownListeners = new Set<(until: number | null) => void>();
let waitingRequests = 0;
let waitingUntil = 0;

/** Tells `listener` when requests wait out a 429 (the time the last wait ends) and when none does (null). */
export function onSlowDown(listener: (until: number | null) => void): () => void {
  slowDownListeners.add(listener);
  listener(waitingRequests > 0 ? waitingUntil : null);
  return () => {
    slowDownListeners.delete(listener);
  };
}

function retryAfterMs(header: string | null): number {
  const seconds = header !== null && /^\d+$/.test(header.trim()) ? Number(header) * 1000 : NaN;
  const date = header !== null && Number.isNaN(seconds) ? Date.parse(header) - Date.now() : NaN;
  const wait = Number.isFinite(seconds) ? seconds : Number.isFinite(date) ? date : DEFAULT_RETRY_AFTER_MS;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(1000, wait));
}

async function waitOut(ms: number): Promise<void> {
  waitingRequests++;
  waitingUntil = Math.max(waitingRequests > 1 ? waitingUntil : 0, Date.now() + ms);
  for (const listener of slowDownListeners) listener(waitingUntil);
  try {
    await new Promise((resolve) => setTimeout(resolve, ms));
  } finally {
    waitingRequests--;
    if (waitingRequests === 0) for (const listener of slowDownListeners) listener(null);
  }
}

/** Sends a request, and again after `Retry-After` while it is answered 429. */
async function sendPatiently(send: () => Promise<Response>): Promise<Response> {
  for (let retries = 0; ; retries++) {
    const res = await send();
    if (res.status !== 429 || retries >= MAX_RATE_LIMITED_RETRIES) return res;
    await res.arrayBuffer().catch(() => undefined); // the connection is free for the next request
    await waitOut(retryAfterMs(res.headers.get('retry-after')));
  }
}

let csrfToken = '';
let bearer: { token: string; expiresAt: number } | null = null;
let pendingToken: Promise<string> | null = null;

/** Sends the browser to the sign-in page, coming back to the current path afterwards. */
export function goToSignIn(): void {
  location.assign('/sign-in?next=' + encodeURIComponent(location.pathname));
}

async function readBody(res: Response): Promise<Record<string, unknown>> {
  const text = await res.text();
  if (!text) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : { value: parsed };
  } catch {
    return { error: text.slice(0, 200) };
  }
}

/** GET /session: the user, or null when not signed in. */
export async function loadSession(): Promise<Session | null> {
  const res = await sendPatiently(() =>
    fetch('/api/dashboard/v1/session', {
      credentials: 'same-origin',
      headers: { accept: 'application/json' },
    }),
  );
  if (res.status === 401) return null;
  const body = await readBody(res);
  if (!res.ok) throw new ApiError(res.status, body);
  const session = body as unknown as Session;
  csrfToken = session.csrf_token;
  return session;
}

/** A call of the session API; state changes carry the CSRF token. A 401 means the session ended. */
export async function dash<T>(method: string, path: string, json?: unknown): Promise<T> {
  try {
    return await dashOnce<T>(method, path, json);
  } catch (err) {
    // A refused change may carry a CSRF token the server no longer has (the session was renewed in another
    // tab): read the session again and try once more.
    if (!(err instanceof ApiError) || err.status !== 403 || method === 'GET') throw err;
    const session = await loadSession();
    if (!session) {
      goToSignIn();
      throw err;
    }
    return dashOnce<T>(method, path, json);
  }
}

async function dashOnce<T>(method: string, path: string, json?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  if (json !== undefined) headers['content-type'] = 'application/json';
  const res = await sendPatiently(() =>
    fetch('/api/dashboard/v1' + path, {
      method,
      credentials: 'same-origin',
      headers,
      body: json === undefined ? null : JSON.stringify(json),
    }),
  );
  const body = await readBody(res);
  if (res.status === 401) {
    goToSignIn();
    throw new ApiError(401, body);
  }
  if (!res.ok) throw new ApiError(res.status, body);
  return body as T;
}

/** A bearer token for /api/v1 and the events WebSocket; renewed a minute before it expires, or when forced. */
export async function accessToken(force = false): Promise<string> {
  if (!force && bearer && bearer.expiresAt - Date.now() > 60_000) return bearer.token;
  if (!pendingToken) {
    pendingToken = dash<SessionToken>('POST', '/token')
      .then((answer) => {
        // A browser clock far off the server's would make the token look expired (or eternal): then assume
        // the documented 15 minutes, less a margin. A 401 renews it in any case.
        const lifetime = Date.parse(answer.expires_at) - Date.now();
        const sane = Number.isFinite(lifetime) && lifetime > 120_000 && lifetime < 3_600_000;
        bearer = { token: answer.token, expiresAt: Date.now() + (sane ? lifetime : 14 * 60_000) };
        return answer.token;
      })
      .finally(() => {
        pendingToken = null;
      });
  }
  return pendingToken;
}

/** Options of an /api/v1 call. */
export interface V1Options {
  json?: unknown;
  body?: Blob;
  headers?: Record<string, string>;
}

/** A call of the public API with the dashboard's bearer token; a 401 renews the token and tries once more. */
export async function v1<T>(method: string, path: string, options: V1Options = {}): Promise<T> {
  const send = (token: string): Promise<Response> => {
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization: 'Bearer ' + token,
      ...options.headers,
    };
    let body: BodyInit | null = null;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.body) {
      body = options.body;
    }
    return sendPatiently(() =>
      fetch('/api/v1' + path, { method, credentials: 'same-origin', headers, body }),
    );
  };
  let res = await send(await accessToken());
  if (res.status === 401) res = await send(await accessToken(true));
  const body = await readBody(res);
  if (!res.ok) throw new ApiError(res.status, body);
  return body as T;
}

/** Signs out of this session (form-encoded, as the server-rendered pages do), then goes to the sign-in page. */
export async function signOut(): Promise<void> {
  try {
    await fetch('/sign-out', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf_token: csrfToken }).toString(),
      redirect: 'manual',
    });
  } finally {
    bearer = null;
    location.assign('/sign-in');
  }
}

/** The message to show for a failed call. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message || 'Something went wrong';
  return 'Something went wrong';
}
