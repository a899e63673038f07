import { accessToken } from '../api.ts';
import type { ProjectEvent } from '../api-types.ts';

/** What the socket reports to the page. */
export interface EventSocketHandlers {
  /** One event, in seq order (sync.reset included). */
  onEvent: (event: ProjectEvent) => void;
  /** The socket is (re)connected: the page re-reads what it shows. */
  onConnected: () => void;
  /** Connection state, for a small indicator. */
  onStatus: (status: 'connecting' | 'live' | 'reconnecting' | 'closed') => void;
  /** The project was deleted: the socket stops for good. */
  onDeleted: () => void;
}

const MIN_DELAY_MS = 500;
const MAX_DELAY_MS = 10_000;

/**
 * Opens the project's events WebSocket (docs/editor.md "The events WebSocket") and keeps it open: the seq of
 * the last message is tracked and every reconnection asks for `since=` it, with a back-off of 0.5 s doubling
 * to 10 s (each handshake is a request of the token). The token rides in `access_token` because browsers
 * cannot set headers on a WebSocket; a refused handshake or a 1008 fetches a new token. Returns `stop`.
 */
export function openProjectEvents(projectId: string, handlers: EventSocketHandlers): () => void {
  let lastSeq: number | null = null;
  let socket: WebSocket | null = null;
  let stopped = false;
  let delay = MIN_DELAY_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let freshToken = false;
  let failedHandshakes = 0;

  const schedule = (): void => {
    if (stopped) return;
    handlers.onStatus('reconnecting');
    timer = setTimeout(() => void connect(), delay);
    delay = Math.min(delay * 2, MAX_DELAY_MS);
  };

  const connect = async (): Promise<void> => {
    if (stopped) return;
    handlers.onStatus(lastSeq === null ? 'connecting' : 'reconnecting');
    let token: string;
    try {
      token = await accessToken(freshToken);
      freshToken = false;
    } catch {
      schedule();
      return;
    }
    if (stopped) return;
    const query = new URLSearchParams({ access_token: token });
    if (lastSeq !== null) query.set('since', String(lastSeq));
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const url = `${scheme}//${location.host}/api/v1/media-studio/projects/${encodeURIComponent(projectId)}/events?${query.toString()}`;
    let opened = false;
    const ws = new WebSocket(url);
    socket = ws;
    ws.onopen = () => {
      opened = true;
      failedHandshakes = 0;
      delay = MIN_DELAY_MS;
      handlers.onStatus('live');
      handlers.onConnected();
    };
    ws.onmessage = (message: MessageEvent) => {
      if (typeof message.data !== 'string') return;
      let event: ProjectEvent;
      try {
        event = JSON.parse(message.data) as ProjectEvent;
      } catch {
        return;
      }
      if (typeof event.seq !== 'number' || typeof event.type !== 'string') return;
      if (event.type === 'sync.reset') {
        const head = event.data.head_seq;
        lastSeq = typeof head === 'number' ? head : event.seq;
      } else {
        if (lastSeq !== null && event.seq <= lastSeq) return;
        lastSeq = event.seq;
      }
      handlers.onEvent(event);
      if (event.type === 'project.deleted') {
        stopped = true;
        handlers.onStatus('closed');
        handlers.onDeleted();
      }
    };
    ws.onclose = (close: CloseEvent) => {
      if (socket === ws) socket = null;
      if (stopped) return;
      if (close.code === 1000 && close.reason === 'Project deleted') {
        stopped = true;
        handlers.onStatus('closed');
        handlers.onDeleted();
        return;
      }
      // A revoked token, or handshakes that keep failing (an expired token, say): ask for a new token.
      if (!opened) failedHandshakes++;
      if (close.code === 1008 || failedHandshakes >= 2) freshToken = true;
      schedule();
    };
  };

  void connect();
  return () => {
    stopped = true;
    clearTimeout(timer);
    socket?.close(1000);
    socket = null;
  };
}
