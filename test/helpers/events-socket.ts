import WebSocket from 'ws';
import type { EditorEvent } from './editor.ts';

// A small client of the project events WebSocket (docs/editor.md, The events WebSocket) for end-to-end tests, on the `ws` package:
//
//   const socket = await openEventsSocket(service.url, projectId, { token, since: 0 });
//   await socket.waitForSeq(12);                 // replayed and live events land in socket.events
//   const { code } = await socket.waitForClose(); // e.g. 1000 after a project.deleted event
//   const refused = await refusedHandshake(service.url, projectId, {}); // { status: 401, body: { error } }
//
// Every message is parsed as one event and kept, in arrival order, from the moment the socket is created.

/** How to open the socket: every field is optional (none at all is a handshake without a key). */
export interface EventsSocketOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Sent as `?access_token=` (how a browser passes its key). */
  accessToken?: string;
  /** `?since=`: replay the kept events after this seq first. A string is sent as is (to test bad values). */
  since?: number | string;
  /** `?video_id=`: only that video's events and project-wide ones. */
  videoId?: string;
  /** The `Origin` header; none unless given (a browser always sends one). */
  origin?: string;
}

/** The close as the client saw it. */
export interface SocketClose {
  code: number;
  reason: string;
}

/** An open (or once open) events socket and what it received. */
export interface EventsSocket {
  readonly ws: WebSocket;
  /** Every message received so far, parsed, in arrival order. */
  readonly events: EditorEvent[];
  /** The close code and reason once the socket has closed; undefined while it is open. */
  readonly closed: SocketClose | undefined;
  /**
   * Resolves with `events` once `done(events)` holds (checked now and on every message); rejects after
   * `timeoutMs`, or when the socket closes first, with what was received.
   */
  waitFor(what: string, done: (events: EditorEvent[]) => boolean, timeoutMs?: number): Promise<EditorEvent[]>;
  /** `waitFor` an event whose seq is at least `seq`. */
  waitForSeq(seq: number, timeoutMs?: number): Promise<EditorEvent[]>;
  /** Resolves with the close code and reason (at once when already closed); rejects after `timeoutMs`. */
  waitForClose(timeoutMs?: number): Promise<SocketClose>;
  /**
   * Stops reading from the TCP socket (the service's sends pile up in kernel buffers, then its own). The client
   * still writes: a ping every PAUSED_PING_MS keeps it a live peer, so that the service's idle time-out (whose
   * pings a client that does not read cannot answer) does not drop it before its buffers fill on a slow
   * machine — what a paused client is cut for is its backlog.
   */
  pauseReading(): void;
  /** Reads again: what was waiting is parsed and lands in `events`, a close frame included. */
  resumeReading(): void;
  /** Closes from the client side (1000) and waits until closed. */
  close(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 15_000;
/** Pings of a paused client: well within the service's 32 s idle time-out. */
const PAUSED_PING_MS = 8_000;

/** The socket's `ws://` URL for a service's `http://` base URL. */
export function eventsSocketUrl(
  baseUrl: string,
  projectId: string,
  options: EventsSocketOptions = {},
): string {
  const url = new URL(`/api/v1/media-studio/projects/${projectId}/events`, baseUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  if (options.videoId !== undefined) url.searchParams.set('video_id', options.videoId);
  if (options.since !== undefined) url.searchParams.set('since', String(options.since));
  if (options.accessToken !== undefined) url.searchParams.set('access_token', options.accessToken);
  return url.toString();
}

function connect(baseUrl: string, projectId: string, options: EventsSocketOptions): WebSocket {
  return new WebSocket(eventsSocketUrl(baseUrl, projectId, options), {
    headers: options.token !== undefined ? { authorization: `Bearer ${options.token}` } : {},
    ...(options.origin !== undefined ? { origin: options.origin } : {}),
  });
}

const summary = (events: EditorEvent[]) =>
  JSON.stringify(events.slice(-5).map((event) => `${event.seq}:${event.type}`));

/**
 * Opens the events socket and waits for the handshake; fails with the status and body when the service
 * refuses it (use `refusedHandshake` to check a refusal).
 */
export async function openEventsSocket(
  baseUrl: string,
  projectId: string,
  options: EventsSocketOptions = {},
): Promise<EventsSocket> {
  const ws = connect(baseUrl, projectId, options);
  const events: EditorEvent[] = [];
  let closed: SocketClose | undefined;
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of [...listeners]) listener();
  };
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) throw new Error('events socket: a binary message');
    events.push(JSON.parse(data.toString('utf8')) as EditorEvent);
    notify();
  });
  let openedAt = 0;
  let closedAt = 0;
  let pinging: NodeJS.Timeout | undefined;
  ws.on('close', (code: number, reason: Buffer) => {
    clearInterval(pinging);
    closed = { code, reason: reason.toString('utf8') };
    closedAt = Date.now();
    notify();
  });

  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => {
      openedAt = Date.now();
      resolve();
    });
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        ws.on('error', () => undefined);
        ws.terminate();
        reject(new Error(`events socket refused: ${res.statusCode} ${body}`));
      });
    });
  });
  let failure: Error | undefined;
  ws.on('error', (error: Error) => (failure ??= error)); // and the close code says 1006

  /** Waits for `check` to return a value (not undefined); `check` runs now, on each message and on close. */
  function until<T>(what: string, check: () => T | undefined, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => finish(() => reject(new Error(`${what}: timed out after ${timeoutMs} ms; ${state()}`))),
        timeoutMs,
      );
      const listener = () => {
        const value = check();
        if (value !== undefined) return finish(() => resolve(value));
        if (closed) finish(() => reject(new Error(`${what}: the socket closed first; ${state()}`)));
      };
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        listeners.delete(listener);
        settle();
      };
      listeners.add(listener);
      listener();
    });
  }
  const state = () =>
    `${events.length} events, last ${summary(events)}, ` +
    (closed ? `closed ${JSON.stringify(closed)} ${closedAt - openedAt} ms after the handshake` : 'open') +
    (failure ? ` after an error: ${failure.message}` : '');

  const socket: EventsSocket = {
    ws,
    events,
    get closed() {
      return closed;
    },
    waitFor: (what, done, timeoutMs = DEFAULT_TIMEOUT_MS) =>
      until(what, () => (done(events) ? events : undefined), timeoutMs),
    waitForSeq: (seq, timeoutMs = DEFAULT_TIMEOUT_MS) =>
      socket.waitFor(
        `an event with seq >= ${seq}`,
        () => events.some((event) => event.seq >= seq),
        timeoutMs,
      ),
    waitForClose: (timeoutMs = DEFAULT_TIMEOUT_MS) => until('the close', () => closed, timeoutMs),
    // `ws`'s own pause, not its TCP socket's: its parser resumes a paused TCP socket whenever it drains a
    // backlog (under load, a replay still being parsed undid the pause), unless the client is paused itself.
    pauseReading() {
      ws.pause();
      clearInterval(pinging);
      pinging = setInterval(() => {
        if (ws.readyState === ws.OPEN) ws.ping();
      }, PAUSED_PING_MS);
      pinging.unref();
    },
    resumeReading() {
      clearInterval(pinging);
      ws.resume();
    },
    async close() {
      clearInterval(pinging);
      if (!closed) ws.close(1000);
      await socket.waitForClose();
    },
  };
  return socket;
}

/**
 * A handshake the service should refuse: the HTTP status and JSON body of its answer (`unexpected-response`).
 * Fails when the socket opens instead.
 */
export async function refusedHandshake(
  baseUrl: string,
  projectId: string,
  options: EventsSocketOptions = {},
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<{ status: number; body: { error?: string } & Record<string, unknown> }> {
  const ws = connect(baseUrl, projectId, options);
  ws.on('error', () => undefined); // terminate() below reports the aborted handshake as an error
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no answer to the handshake in ${timeoutMs} ms`)),
        timeoutMs,
      );
      ws.once('open', () => {
        clearTimeout(timer);
        reject(new Error('the events socket opened, but a refusal was expected'));
      });
      ws.once('unexpected-response', (_req, res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          clearTimeout(timer);
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as { error?: string } });
          } catch {
            reject(new Error(`a refusal that is not JSON: ${res.statusCode} ${text}`));
          }
        });
      });
    });
  } finally {
    ws.terminate();
  }
}
