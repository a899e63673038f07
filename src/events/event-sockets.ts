import type { Logger } from 'pino';
import {
  type EventBus,
  type Clock,
  type MetricsRegistry,
  startPeriodicTask,
  type PeriodicTask,
  type HttpServer,
  type ServerSocket,
} from '../platform/index.ts';
import type { EventHistory, ProjectEvent, ProjectsRepository } from '../../actors/index.ts';
import type { ApiKeysRepository } from '../accounts/index.ts';
import { createEventFanout, type EventFanout } from './event-fanout.ts';
import { ProjectGoneError } from './event-replay.ts';
import { createSocketRecheck } from './socket-recheck.ts';

/** What an accepted handshake hands to its socket (events route → `SocketUpgrade`). */
export interface EventSocketRequest {
  projectId: string;
  /** Narrows the socket to one video's events plus project-wide ones. */
  videoId: string | null;
  /** Replay the kept events after this seq first; null: live from the handshake on (`headSeq`). */
  since: number | null;
  /** The project's seq when the handshake was checked (a `since` beyond it is unknown to the service). */
  headSeq: number;
  keyId: string;
  /** The dashboard token the socket was opened with, when a session's: rechecked in place of a key. */
  sessionToken?: string;
}

/** A socket's state; uWS keeps it as the socket's user data. */
interface SocketState extends EventSocketRequest {
  open: boolean;
  unwatch: () => void;
}

/** Close codes (RFC 6455 §7.4.1 and the IANA registry) and why each is used. */
export const CLOSE = {
  /** The project was deleted. */
  projectDeleted: [1000, 'Project deleted'],
  /** The key was revoked (or removed) while the socket was open. */
  keyRevoked: [1008, 'API key revoked'],
  /** The dashboard token expired, or its session ended (signed out): a new token opens a new socket. */
  sessionEnded: [1008, 'Session token expired or revoked'],
  /** The replay could not be read: reconnect with since=. */
  replayFailed: [1011, 'Could not replay events: reconnect with since='],
  /** The node is stopping: reconnect (to another node) with since=. */
  restart: [1012, 'Service restart: reconnect with since='],
  /** The client read too slowly: reconnect with since=. */
  tooSlow: [1013, 'Too slow: reconnect with since='],
} as const satisfies Record<string, readonly [number, string]>;

export interface EventSocketsOptions {
  /** Bytes buffered for one socket past which it is closed (1013). */
  maxBufferedBytes: number;
  /** How often buffered bytes are looked at. */
  backpressureCheckMs: number;
  /** How often keys and projects of open sockets are checked again (revoked key, deleted project). */
  recheckMs: number;
  /** uWS idle timeout: pings go out before it, and a socket silent for longer is closed. */
  idleTimeoutSec: number;
  /** Newest events each watched project keeps in memory for replays. */
  windowSize: number;
}

/** The node's events sockets: served on the HTTP front, fed by the fan-out. */
export interface EventSockets {
  /** Starts the periodic checks. */
  start(): void;
  /** Closes every socket (1012: reconnect elsewhere) and stops the checks. */
  stop(): Promise<void>;
}

/** The pattern of the events route on uWS (`:project_id` is read from the handshake's checked params). */
export const EVENTS_SOCKET_PATTERN = '/api/v1/media-studio/projects/:project_id/events';

const projectTopic = (projectId: string) => `project/${projectId}`;
/** A narrowed socket's topics: its video's events, and project-wide ones (`-`). */
const videoTopic = (projectId: string, videoId: string | null) =>
  `project/${projectId}/video/${videoId ?? '-'}`;

/**
 * The events WebSocket (docs/editor.md, The events WebSocket) on uWebSockets.js pub/sub: every event is
 * published once to its project's topic and once to its video's (narrowed sockets subscribe to that and to
 * the project-wide one), so uWS frames each message once for all of a node's sockets. A socket joins through
 * the fan-out: it replays what it missed and subscribes only once it has caught up (see EventFanout). A
 * socket that falls behind by `maxBufferedBytes` is closed with 1013 — uWS's own limit is off, because past
 * it uWS drops messages silently, close frame included.
 */
export function createEventSockets(deps: {
  server: HttpServer;
  bus: EventBus;
  history: EventHistory;
  keys: ApiKeysRepository;
  /** Checks a dashboard token again (docs/dashboard.md); without it, sockets of tokens are not rechecked. */
  sessionTokens?: { authenticateToken(token: string): Promise<unknown> };
  projects: ProjectsRepository;
  clock: Clock;
  log: Logger;
  metrics: MetricsRegistry;
  options: EventSocketsOptions;
}): EventSockets {
  const { server, log, options } = deps;
  const sockets = new Set<ServerSocket<SocketState>>();
  const { closed, delivered } = socketMetrics(deps.metrics, sockets);

  const fanout = createEventFanout({
    bus: deps.bus,
    history: deps.history,
    committedSeq: async (projectId) => (await deps.projects.get(projectId))?.seq ?? null,
    log,
    windowSize: options.windowSize,
    sink: {
      deliver(event, json) {
        delivered.inc([]);
        server.publish(projectTopic(event.project_id), json);
        server.publish(videoTopic(event.project_id, event.video_id), json);
        if (event.type === 'project.deleted')
          closeWhere((s) => s.projectId === event.project_id, 'projectDeleted');
      },
    },
  });

  function cut(ws: ServerSocket<SocketState>, why: keyof typeof CLOSE) {
    const state = ws.getUserData();
    if (!state.open) return;
    closed.inc([why]);
    const [code, reason] = CLOSE[why];
    ws.end(code, reason);
  }

  function closeWhere(test: (state: SocketState) => boolean, why: keyof typeof CLOSE) {
    for (const ws of [...sockets]) if (test(ws.getUserData())) cut(ws, why);
  }

  deps.server.sockets<SocketState>(EVENTS_SOCKET_PATTERN, {
    maxPayloadLength: 4096,
    idleTimeoutSec: options.idleTimeoutSec,
    open(ws) {
      const state = ws.getUserData();
      state.open = true;
      sockets.add(ws);
      state.unwatch = fanout.watch(state.projectId);
      // After `open` has returned, not in it: `open` runs inside the upgrade, where a send can make uWS close the
      // new socket (uNetworking/uWebSockets.js#1108; see also the uncorked upgrade in server.ts).
      setImmediate(() => {
        if (!state.open) return;
        join(fanout, ws, deps.clock).catch((error: unknown) => {
          if (error instanceof ProjectGoneError) return cut(ws, 'projectDeleted');
          log.warn({ err: error, project_id: state.projectId }, 'events replay failed');
          cut(ws, 'replayFailed');
        });
      });
    },
    close(ws) {
      const state = ws.getUserData();
      state.open = false;
      sockets.delete(ws);
      state.unwatch();
    },
  });

  const checks = socketChecks({
    sockets,
    options,
    log,
    cut,
    recheck: createSocketRecheck({
      keys: deps.keys,
      ...(deps.sessionTokens ? { sessionTokens: deps.sessionTokens } : {}),
      projects: deps.projects,
      open: () => [...sockets].map((ws) => ws.getUserData()),
      close: closeWhere,
    }),
  });

  return {
    start: () => checks.start(),
    async stop() {
      await checks.stop();
      closeWhere(() => true, 'restart');
    },
  };
}

/** The periodic checks of a node's open sockets. */
interface SocketChecks {
  start(): void;
  /** Stops both checks (awaiting a recheck under way). */
  stop(): Promise<void>;
}

/**
 * The periodic checks of open sockets: one that closes a socket whose client reads too slowly (1013), and the
 * recheck of their keys, tokens and projects (a revoked key, an ended session, a deleted project).
 */
function socketChecks(deps: {
  sockets: ReadonlySet<ServerSocket<SocketState>>;
  options: Pick<EventSocketsOptions, 'maxBufferedBytes' | 'backpressureCheckMs' | 'recheckMs'>;
  log: Logger;
  cut: (ws: ServerSocket<SocketState>, why: keyof typeof CLOSE) => void;
  recheck: () => Promise<void>;
}): SocketChecks {
  const { sockets, options, cut } = deps;
  let backpressure: ReturnType<typeof setInterval> | undefined;
  let recheck: PeriodicTask | undefined;
  return {
    start() {
      backpressure = setInterval(() => {
        for (const ws of sockets) if (ws.getBufferedAmount() > options.maxBufferedBytes) cut(ws, 'tooSlow');
      }, options.backpressureCheckMs);
      backpressure.unref();
      recheck = startPeriodicTask({
        name: 'events socket recheck',
        intervalMs: options.recheckMs,
        logger: deps.log,
        run: deps.recheck,
      });
    },
    async stop() {
      clearInterval(backpressure);
      await recheck?.stop();
    },
  };
}

/** The sockets' metrics: closes by reason, events handed over, sockets open. */
function socketMetrics(metrics: MetricsRegistry, sockets: ReadonlySet<unknown>) {
  const closed = metrics.counter({
    name: 'mf_events_socket_closes_total',
    help: 'Events sockets closed by the service, by reason',
    labels: ['reason'],
  });
  const delivered = metrics.counter({
    name: 'mf_events_delivered_total',
    help: 'Project events handed to this node’s sockets (once per event, however many sockets)',
    labels: [],
  });
  metrics.gauge({ name: 'mf_events_sockets', help: 'Open events sockets on this node', labels: [] }, () => [
    [[], sockets.size],
  ]);
  return { closed, delivered };
}

/** Replays what the socket asked for (a live-only socket: what came after its handshake), then goes live. */
function join(fanout: EventFanout, ws: ServerSocket<SocketState>, clock: Clock): Promise<void> {
  const state = ws.getUserData();
  let after = state.since ?? state.headSeq;
  if (after > state.headSeq) {
    // A seq this project never had (another project's, or made up): start over from the state.
    send(ws, syncReset(state, 'unknown_seq', state.headSeq, clock));
    after = state.headSeq;
  }
  return fanout.join(state.projectId, after, {
    get open() {
      return state.open;
    },
    send: (event) => send(ws, event),
    reset: (headSeq) => send(ws, syncReset(state, 'history_expired', headSeq, clock)),
    goLive: () => subscribe(ws),
  });
}

/** Sends an event to the socket, unless it is closed or narrowed to another video. */
function send(ws: ServerSocket<SocketState>, event: ProjectEvent) {
  const state = ws.getUserData();
  if (!state.open) return;
  if (state.videoId !== null && event.video_id !== null && event.video_id !== state.videoId) return;
  ws.send(JSON.stringify(event));
}

/** Subscribes a socket that has caught up to its topics: the project's, or its video's and project-wide ones. */
function subscribe(ws: ServerSocket<SocketState>) {
  const { projectId, videoId } = ws.getUserData();
  if (videoId === null) return void ws.subscribe(projectTopic(projectId));
  ws.subscribe(videoTopic(projectId, videoId));
  ws.subscribe(videoTopic(projectId, null));
}

/** The `sync.reset` message: the socket re-reads the state and goes on from `headSeq`. */
function syncReset(state: SocketState, reason: string, headSeq: number, clock: Clock): ProjectEvent {
  return {
    type: 'sync.reset',
    seq: headSeq,
    ts: new Date(clock.now()).toISOString(),
    project_id: state.projectId,
    video_id: null,
    turn_id: null,
    data: { reason, head_seq: headSeq },
  };
}
