// An events client of the chaos load: a WebSocket on a project's events of one live node that,
// when its socket closes unasked (1012 or abnormal), reconnects with `since=<last seq>` to another live node,
// recording every connection it made and every event it received.
import WebSocket from 'ws';
import type { EditorEvent } from '../helpers/editor.ts';
import { sleep } from '../helpers/wait.ts';
import { now, type ClusterTraffic } from './traffic.ts';

/** One WebSocket connection of an events client. */
export interface SocketConnection {
  node: string;
  incarnation: number;
  since: number;
  openedAt: number;
  closedAt?: number;
  closeCode?: number;
  events: EditorEvent[];
}

/** An events client of one project: every connection it made and every event it received. */
export class EventsClient {
  readonly connections: SocketConnection[] = [];
  readonly failedConnects: { node: string; at: number; error: string }[] = [];
  private socket: WebSocket | undefined;
  private stopped = false;
  private reconnecting: Promise<void> | undefined;

  constructor(
    readonly label: string,
    readonly projectId: string,
    private readonly token: string,
    private readonly traffic: ClusterTraffic,
  ) {}

  get events(): EditorEvent[] {
    return this.connections.flatMap((connection) => connection.events);
  }

  get lastSeq(): number {
    return this.events.at(-1)?.seq ?? this.connections.at(-1)?.since ?? 0;
  }

  /** Reconnections after a close the client did not ask for. */
  get reconnections(): number {
    return Math.max(0, this.connections.length - 1);
  }

  async open(node: string, since = 0): Promise<void> {
    await this.connect(node, since);
  }

  private connect(node: string, since: number): Promise<void> {
    const state = this.traffic.node(node);
    const url = new URL(`/api/v1/media-studio/projects/${this.projectId}/events`, state.url);
    url.protocol = 'ws:';
    url.searchParams.set('since', String(since));
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${this.token}` } });
    const connection: SocketConnection = {
      node,
      incarnation: state.incarnation,
      since,
      openedAt: now(),
      events: [],
    };
    return new Promise<void>((resolve, reject) => {
      let opened = false;
      ws.on('message', (data: Buffer) => {
        connection.events.push(JSON.parse(data.toString('utf8')) as EditorEvent);
      });
      ws.once('open', () => {
        opened = true;
        this.socket = ws;
        this.connections.push(connection);
        resolve();
      });
      ws.on('error', (error: Error) => {
        if (!opened) reject(error);
      });
      ws.once('unexpected-response', (_req, res) => {
        res.resume();
        ws.terminate();
        reject(new Error(`handshake refused: ${res.statusCode}`));
      });
      ws.on('close', (code: number) => {
        if (!opened) return;
        connection.closedAt = now();
        connection.closeCode = code;
        if (this.socket === ws) this.socket = undefined;
        if (!this.stopped) this.reconnecting = this.reconnect(node);
      });
    });
  }

  /** After an unasked close: another live node, `since=` the last seq, until one takes it. */
  private async reconnect(closedOn: string): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      const node = this.traffic.pick(closedOn);
      try {
        await this.connect(node, this.lastSeq);
        return;
      } catch (error) {
        this.failedConnects.push({ node, at: now(), error: (error as Error).message });
        await sleep(Math.min(1000, 100 * (attempt + 1)));
      }
    }
  }

  /** Waits until the client has an event with seq ≥ `seq` (or `limitMs` passed); true when it has. */
  async caughtUp(seq: number, limitMs: number): Promise<boolean> {
    const deadline = now() + limitMs;
    while (now() < deadline) {
      if (this.lastSeq >= seq) return true;
      await sleep(100);
    }
    return this.lastSeq >= seq;
  }

  async close(): Promise<void> {
    this.stopped = true;
    await this.reconnecting;
    const ws = this.socket;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve());
      ws.close(1000);
      setTimeout(() => {
        ws.terminate();
        resolve();
      }, 2000).unref();
    });
  }
}
