// A steady, bounded mixed load against a local cluster (issue 17's chaos tests), recording everything the
// invariants in chaos-invariants.ts need: every request (which node and which incarnation of it, which TCP
// connection, when, the answer), every credit operation acknowledged to a caller, every job id, every webhook
// delivery the receiver saw, every event each WebSocket client received, and every disruption (a node killed
// or stopped, a NATS node killed) with its time.
//
// Actors, each a sequential loop with a pause (so the load is bounded whatever the cluster's speed):
// - jobs:    image jobs (some failing on purpose: `[sandbox:fail]`, refunded) and short 480p videos, to the
//            next live node in turn; a key with a webhook to the receiver;
// - grants:  admin credit grants with an `op_id`; one that fails is sent again with the SAME op_id to another
//            node until acknowledged (a repeated op_id applies once: CONTRACT §3);
// - editor:  one project per actor, agent turns (storyboard, continue, plain edits) to the next live node;
// - export:  exports of a prepared two-clip project, to the next live node;
// - events:  two WebSocket clients per project, on nodes other than the load's next one, that reconnect with
//            `since=<last seq>` to another live node when their socket closes (1012 or abnormal);
// - reads:   the account balance and job reads.
// The load never sends a request to a node it was told is down; requests already in flight when a node dies
// fail on that node's connections, and only those may fail (checked by the invariants).
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import WebSocket from 'ws';
import type { ServerResponse } from 'node:http';
import type { LocalCluster } from '../helpers/local-cluster.ts';
import { makeMedia, type EditorEvent, type InstructAnswer } from '../helpers/editor.ts';
import {
  startWebhookReceiver,
  type ReceivedRequest,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.ts';
import { sleep } from '../helpers/wait.ts';

/** Wall-clock ms (Date.now()) is used everywhere here, so that records compare with service timestamps. */
const now = () => Date.now();

export type DisruptionKind = 'kill' | 'stop' | 'nats-kill';

/** A node killed (SIGKILL) or stopped (SIGTERM, graceful), or a NATS node killed; and when it came back. */
export interface Disruption {
  target: string;
  kind: DisruptionKind;
  /** When the signal was sent. */
  at: number;
  /** When the process was gone (kill/stop returned). */
  goneAt?: number;
  /** When it was started again and healthy. */
  backAt?: number;
  /** The incarnation of a service node that this ended. */
  incarnation?: number;
}

/** One HTTP request of the load. */
export interface RequestRecord {
  seq: number;
  actor: string;
  op: string;
  method: string;
  path: string;
  node: string;
  /** The node's incarnation (0 at `up`, +1 at each start): a killed incarnation's connections may fail. */
  incarnation: number;
  /** `<node>#<incarnation>/<local port>`: the TCP connection it went over ('' when none was made). */
  connection: string;
  startedAt: number;
  endedAt: number;
  /** null: no HTTP answer (connection refused or reset, time-out). */
  status: number | null;
  error?: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** A credit operation the service acknowledged to its caller. */
export interface AcknowledgedCredit {
  kind: 'job' | 'grant' | 'turn';
  userId: string;
  /** The ledger op_id when the caller knows it (grants: its own; turns: `turn:<turn_id>`). */
  opId?: string;
  jobId?: string;
  delta: number;
  /** The request that was acknowledged. */
  request: number;
}

/** A user of the load: its key, and what it is for. */
export interface LoadUser {
  label: string;
  userId: string;
  keyId: string;
  token: string;
  secret: string;
  initialCredits: number;
}

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

interface NodeState {
  name: string;
  url: string;
  up: boolean;
  incarnation: number;
  agent: http.Agent;
}

let requestSeq = 0;

/**
 * The cluster as the load sees it: which service nodes are up (and their incarnation), every request made,
 * every disruption. Requests go over one keep-alive agent per node incarnation, so a request's connection is
 * a real TCP connection of that incarnation.
 */
export class ClusterTraffic {
  readonly requests: RequestRecord[] = [];
  readonly disruptions: Disruption[] = [];
  /** Every pid a service node had (ffmpeg children are found by their session or parent). */
  readonly nodePids = new Set<number>();
  private readonly nodes = new Map<string, NodeState>();
  private turn = 0;

  constructor(readonly cluster: LocalCluster) {
    for (const node of cluster.nodes) {
      this.nodePids.add(node.pid);
      this.nodes.set(node.name, {
        name: node.name,
        url: node.url,
        up: true,
        incarnation: 0,
        agent: new http.Agent({ keepAlive: true, maxSockets: 16 }),
      });
    }
  }

  node(name: string): NodeState {
    const state = this.nodes.get(name);
    if (!state) throw new Error(`no node ${name}`);
    return state;
  }

  get nodeNames(): string[] {
    return [...this.nodes.keys()];
  }

  liveNodes(): string[] {
    return [...this.nodes.values()].filter((node) => node.up).map((node) => node.name);
  }

  /** The next live node in turn (round robin), other than `exclude` when another is up. */
  pick(exclude?: string): string {
    const live = this.liveNodes();
    if (live.length === 0) throw new Error('no live service node');
    const candidates = live.length > 1 && exclude ? live.filter((name) => name !== exclude) : live;
    return candidates[this.turn++ % candidates.length]!;
  }

  /** Sends one request to `node` (default: the next live one) and records it. Never throws. */
  async send(options: {
    actor: string;
    op: string;
    method: string;
    path: string;
    token?: string;
    body?: unknown;
    /** Raw bytes sent as they are, with `contentType` (an upload). */
    rawBody?: Buffer;
    contentType?: string;
    node?: string;
    timeoutMs?: number;
  }): Promise<RequestRecord> {
    const nodeName = options.node ?? this.pick();
    const state = this.node(nodeName);
    const record: RequestRecord = {
      seq: ++requestSeq,
      actor: options.actor,
      op: options.op,
      method: options.method,
      path: options.path,
      node: nodeName,
      incarnation: state.incarnation,
      connection: '',
      startedAt: now(),
      endedAt: 0,
      status: null,
      body: undefined,
    };
    this.requests.push(record);
    const payload =
      options.rawBody ?? (options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body)));
    const headers: Record<string, string> = {};
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (payload) {
      headers['content-type'] = options.contentType ?? 'application/json';
      headers['content-length'] = String(payload.length);
    }
    await new Promise<void>((resolve) => {
      const url = new URL(options.path, state.url);
      const req = http.request(
        url,
        { method: options.method, headers, agent: state.agent, timeout: options.timeoutMs ?? 60_000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', (error) => finish(null, error.message));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: unknown = text;
            try {
              body = text ? JSON.parse(text) : undefined;
            } catch {
              /* not JSON: kept as text */
            }
            record.body = body;
            finish(res.statusCode ?? null);
          });
        },
      );
      const noteConnection = (socket: Socket) => {
        const port = (socket.address() as AddressInfo).port;
        if (port) record.connection = `${nodeName}#${record.incarnation}/${port}`;
      };
      req.on('socket', (socket) => {
        if (socket.connecting) socket.once('connect', () => noteConnection(socket));
        else noteConnection(socket);
      });
      req.on('timeout', () => req.destroy(new Error('client time-out')));
      req.on('error', (error) => finish(null, error.message));
      let done = false;
      function finish(status: number | null, error?: string) {
        if (done) return;
        done = true;
        record.status = status;
        if (error) record.error = error;
        record.endedAt = now();
        resolve();
      }
      req.end(payload);
    });
    return record;
  }

  /** `kill -9` of a service node: no new request goes to it from now on. */
  async killNode(name: string): Promise<Disruption> {
    return this.disrupt(name, 'kill', () => this.cluster.kill(name, 'SIGKILL'));
  }

  /** SIGTERM (graceful) of a service node, waiting for it to leave. */
  async stopNode(name: string): Promise<Disruption> {
    return this.disrupt(name, 'stop', () => this.cluster.stop(name));
  }

  private async disrupt(name: string, kind: DisruptionKind, act: () => Promise<void>): Promise<Disruption> {
    const state = this.node(name);
    state.up = false;
    const disruption: Disruption = { target: name, kind, at: now(), incarnation: state.incarnation };
    this.disruptions.push(disruption);
    await act();
    disruption.goneAt = now();
    return disruption;
  }

  /** Starts a node again (same port): a new incarnation, with fresh connections. */
  async startNode(name: string): Promise<void> {
    const state = this.node(name);
    await this.cluster.start(name);
    for (const node of this.cluster.nodes) this.nodePids.add(node.pid);
    state.agent.destroy();
    state.agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    state.incarnation++;
    state.up = true;
    const disruption = this.disruptions.filter((d) => d.target === name).at(-1);
    if (disruption) disruption.backAt = now();
  }

  async killNats(name: string): Promise<Disruption> {
    const disruption: Disruption = { target: name, kind: 'nats-kill', at: now() };
    this.disruptions.push(disruption);
    await this.cluster.kill(name, 'SIGKILL');
    disruption.goneAt = now();
    return disruption;
  }

  async startNats(name: string): Promise<void> {
    await this.cluster.start(name);
    const disruption = this.disruptions.filter((d) => d.target === name).at(-1);
    if (disruption) disruption.backAt = now();
  }

  /** Requests still waiting for their answer. */
  inFlight(filter: (record: RequestRecord) => boolean = () => true): RequestRecord[] {
    return this.requests.filter((record) => record.endedAt === 0 && filter(record));
  }

  close(): void {
    for (const node of this.nodes.values()) node.agent.destroy();
  }
}

/** One webhook request as the load's receiver saw it. */
export interface DeliverySeen {
  deliveryId: string;
  jobId: string;
  event: string;
  /** Date.now() at arrival. */
  at: number;
  /** The status we answered (after `answerDelayMs`), or null when the sender went away first. */
  answered: number | null;
  signatureOk: boolean;
  /** The sender's TCP port (which process sent it: `senderOf`). */
  remotePort: number;
}

/**
 * The webhook receiver of a load: answers 500 to the first request of every delivery id when `failFirst`
 * (so deliveries sit in their retry delay), 200 (after `answerDelayMs`, so attempts are in flight a while)
 * to everything else. Records every request by delivery id.
 */
export class LoadWebhooks {
  readonly seen: DeliverySeen[] = [];
  readonly secrets = new Map<string, string>();
  failFirst = false;

  private constructor(
    readonly receiver: WebhookReceiver,
    public answerDelayMs: number,
  ) {}

  /** The answer delay can change while running (longer: attempts stay in flight longer). */
  static async start(answerDelayMs = 150): Promise<LoadWebhooks> {
    const holder: { self?: LoadWebhooks } = {};
    const receiver = await startWebhookReceiver(
      (req) => (_raw, res: ServerResponse) => holder.self!.answer(req, res),
    );
    holder.self = new LoadWebhooks(receiver, answerDelayMs);
    return holder.self;
  }

  get url(): string {
    return this.receiver.url;
  }

  private answer(req: ReceivedRequest, res: ServerResponse): void {
    const deliveryId = String(req.headers['x-svc-delivery-id'] ?? '');
    let jobId = '';
    try {
      jobId = String((JSON.parse(req.body.toString('utf8')) as { job_id?: string }).job_id ?? '');
    } catch {
      /* recorded with an empty job id: the invariant reports it */
    }
    const earlier = this.seen.some((one) => one.deliveryId === deliveryId);
    const seen: DeliverySeen = {
      deliveryId,
      jobId,
      event: String(req.headers['x-svc-event'] ?? ''),
      at: req.wallAt,
      answered: null,
      signatureOk: [...this.secrets.values()].some((secret) => signed(req, secret)),
      remotePort: res.socket?.remotePort ?? 0,
    };
    this.seen.push(seen);
    const status = this.failFirst && !earlier ? 500 : 200;
    // A sender killed mid-attempt shows as the end (FIN) or close of its connection: not answered then.
    const socket = res.socket;
    let gone = false;
    const leave = () => (gone = true);
    socket?.once('end', leave);
    socket?.once('close', leave);
    setTimeout(() => {
      socket?.off('end', leave);
      socket?.off('close', leave);
      if (gone || res.destroyed || res.writableEnded) return;
      seen.answered = status;
      res.writeHead(status, { 'content-length': '0' });
      res.end();
    }, this.answerDelayMs);
  }

  close(): Promise<void> {
    return this.receiver.close();
  }
}

/** Our own check of the signature (spec §6.3) from the raw body bytes. */
function signed(req: ReceivedRequest, secret: string): boolean {
  const timestamp = String(req.headers['x-svc-timestamp'] ?? '');
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(req.headers['x-svc-signature'] ?? ''));
  if (!match || match[1] !== timestamp) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(req.body).digest();
  const given = Buffer.from(match[2]!, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Pacing of the load's actors (ms between two requests of one actor). */
export interface LoadPacing {
  jobEveryMs: number;
  grantEveryMs: number;
  turnPauseMs: number;
  exportPauseMs: number;
  readEveryMs: number;
}

export const DEFAULT_PACING: LoadPacing = {
  jobEveryMs: 700,
  grantEveryMs: 500,
  turnPauseMs: 200,
  exportPauseMs: 1000,
  readEveryMs: 600,
};

export interface LoadOptions {
  label: string;
  /** Editor projects driven by agent turns (each its own user and actor). */
  editorProjects?: number;
  /** Users whose keys submit generation jobs. */
  jobUsers?: number;
  pacing?: Partial<LoadPacing>;
  /** The webhook receiver answers 500 first (deliveries in retry). */
  failFirstWebhook?: boolean;
  /** Credits of each user at creation. */
  credits?: number;
}

/** A project of the load, with its events clients. */
export interface LoadProject {
  id: string;
  user: LoadUser;
  clients: EventsClient[];
  /** Agent turns answered 200, by turn id. */
  turns: string[];
}

const SCENE_THEMES = ['a lighthouse at dawn', 'a harbour at night', 'a forest in rain', 'a desert road'];
/** A cycle of instructions the builtin director understands (CONTRACT §8). */
const TURN_CYCLE = (theme: string) => [
  `a 3-scene video about ${theme}`,
  'continue',
  'continue',
  'remove clip 1',
  'continue',
  'remove clip 1',
];

/**
 * The mixed load: set up users, keys, webhooks, projects and events clients, then `run` the actors until
 * `stop`. Everything is recorded on `traffic`, `webhooks`, `acknowledged`, the projects' clients.
 */
export class ChaosLoad {
  readonly acknowledged: AcknowledgedCredit[] = [];
  /** Every job id the load learnt of (submit answers, turns' media.started), with its user. */
  readonly jobs = new Map<string, { userId: string; token: string; acknowledged: boolean }>();
  readonly users: LoadUser[] = [];
  readonly projects: LoadProject[] = [];
  exportProject: LoadProject | undefined;
  readonly extraProjects: LoadProject[] = [];
  private exportClipId = '';
  private exportNo = 0;
  readonly exports: RequestRecord[] = [];
  readonly startedAt = now();
  private stopping = false;
  private readonly loops: Promise<void>[] = [];
  private grantNo = 0;
  private readonly pacing: LoadPacing;

  private constructor(
    readonly traffic: ClusterTraffic,
    readonly webhooks: LoadWebhooks,
    readonly options: LoadOptions,
  ) {
    this.pacing = { ...DEFAULT_PACING, ...options.pacing };
  }

  static async prepare(cluster: LocalCluster, options: LoadOptions): Promise<ChaosLoad> {
    const traffic = new ClusterTraffic(cluster);
    const webhooks = await LoadWebhooks.start();
    webhooks.failFirst = options.failFirstWebhook ?? false;
    const load = new ChaosLoad(traffic, webhooks, options);
    await load.setup();
    return load;
  }

  private admin(op: string, method: string, path: string, body?: unknown, node?: string) {
    return this.traffic.send({
      actor: 'setup',
      op,
      method,
      path: `/api/admin/v1${path}`,
      token: this.traffic.cluster.adminToken,
      body,
      node,
    });
  }

  /** A user with a key of `scopes`, its webhook set to the receiver. Setup requests must succeed. */
  private async user(label: string, scopes: string[]): Promise<LoadUser> {
    const credits = this.options.credits ?? 1_000_000;
    const email = `${this.options.label}-${label}-${Math.random().toString(36).slice(2, 8)}@example.com`;
    const created = await this.admin('create user', 'POST', '/users', { email, credits });
    if (created.status !== 201)
      throw new Error(`create user: ${created.status} ${JSON.stringify(created.body)}`);
    const userId = created.body.user.id as string;
    const key = await this.admin('create key', 'POST', `/users/${userId}/keys`, { scopes });
    if (key.status !== 201) throw new Error(`create key: ${key.status} ${JSON.stringify(key.body)}`);
    const keyId = key.body.key.id as string;
    const hook = await this.admin('set webhook', 'PUT', `/keys/${keyId}/webhook`, { url: this.webhooks.url });
    if (hook.status !== 200) throw new Error(`set webhook: ${hook.status} ${JSON.stringify(hook.body)}`);
    const secret = hook.body.secret as string;
    this.webhooks.secrets.set(keyId, secret);
    const user = { label, userId, keyId, token: key.body.api_key as string, secret, initialCredits: credits };
    this.users.push(user);
    return user;
  }

  private async setup(): Promise<void> {
    const editorScopes = ['video-editor:read', 'video-editor:write', 'video:write', 'image:write'];
    for (let i = 0; i < (this.options.jobUsers ?? 2); i++)
      await this.user(`jobs${i}`, ['video:write', 'image:write']);
    for (let i = 0; i < (this.options.editorProjects ?? 2); i++) {
      const user = await this.user(`editor${i}`, editorScopes);
      this.projects.push(await this.project(user, `chaos ${i}`));
    }
    // The export project: two 2-second image clips (an uploaded PNG), so that an export takes a few seconds
    // on a busy 2-core machine, well within a shutdown grace.
    const exporter = await this.user('export', editorScopes);
    const project = await this.project(exporter, 'chaos export', { aspect_ratio: '16:9' });
    const upload = await this.traffic.send({
      actor: 'setup',
      op: 'upload',
      method: 'POST',
      path: `/api/v1/media-studio/projects/${project.id}/assets`,
      token: exporter.token,
      rawBody: makeMedia('png', { colour: 'navy' }),
      contentType: 'image/png',
    });
    if (upload.status !== 200) throw new Error(`upload: ${upload.status} ${JSON.stringify(upload.body)}`);
    for (let i = 0; i < 2; i++) {
      const clip = await this.traffic.send({
        actor: 'setup',
        op: 'add clip',
        method: 'POST',
        path: `/api/v1/media-studio/projects/${project.id}/clips`,
        token: exporter.token,
        body: { track: 'video', asset_id: upload.body.asset.id as string, duration_sec: 2 },
      });
      if (clip.status !== 200) throw new Error(`add clip: ${clip.status} ${JSON.stringify(clip.body)}`);
      this.exportClipId = clip.body.clip.id as string;
    }
    this.exportProject = project;
  }

  private async project(
    user: LoadUser,
    name: string,
    fields: Record<string, unknown> = {},
  ): Promise<LoadProject> {
    const created = await this.traffic.send({
      actor: 'setup',
      op: 'create project',
      method: 'POST',
      path: '/api/v1/media-studio/projects',
      token: user.token,
      body: { name, ...fields },
    });
    if (created.status !== 200)
      throw new Error(`create project: ${created.status} ${JSON.stringify(created.body)}`);
    const project: LoadProject = { id: created.body.project.id as string, user, clients: [], turns: [] };
    // Two clients from seq 0 on two different nodes, so each replays the project from its first event.
    const nodes = this.traffic.liveNodes();
    for (let i = 0; i < 2; i++) {
      const client = new EventsClient(`${name}/${i}`, project.id, user.token, this.traffic);
      await client.open(nodes[(this.projects.length + i) % nodes.length]!, 0);
      project.clients.push(client);
    }
    return project;
  }

  /** Starts every actor; they run until `stop()`. */
  start(): void {
    for (const user of this.users.filter((one) => one.label.startsWith('jobs')))
      this.loop(() => this.jobStep(user), this.pacing.jobEveryMs);
    this.loop(() => this.grantStep(), this.pacing.grantEveryMs);
    for (const [i, project] of this.projects.entries()) {
      const cycle = TURN_CYCLE(SCENE_THEMES[i % SCENE_THEMES.length]!);
      let step = 0;
      this.loop(async () => {
        await this.instruct(project, cycle[step++ % cycle.length]!, `editor${i}`);
      }, this.pacing.turnPauseMs);
    }
    this.loop(() => this.exportStep(), this.pacing.exportPauseMs);
    this.loop(() => this.readStep(), this.pacing.readEveryMs);
  }

  private loop(step: () => Promise<unknown>, pauseMs: number): void {
    this.loops.push(
      (async () => {
        while (!this.stopping) {
          try {
            await step();
          } catch (error) {
            // A load step never throws for a failed request (those are records); anything else is a bug here.
            console.error('chaos load step failed', error);
          }
          await sleep(pauseMs);
        }
      })(),
    );
  }

  /** Stops every actor and waits for the requests in flight. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.loops);
  }

  private jobNo = 0;
  private async jobStep(user: LoadUser): Promise<void> {
    const n = ++this.jobNo;
    const video = n % 7 === 0;
    const fail = !video && n % 5 === 0;
    const path = video ? '/api/v1/video/vidmodel-2/generate' : '/api/v1/image/nano-banana/generate';
    const body = video
      ? { prompt: `chaos video ${n}`, duration_seconds: 4, resolution: '480p', generate_audio: false }
      : { prompt: `chaos image ${n}${fail ? ' [sandbox:fail]' : ''}` };
    const answer = await this.traffic.send({
      actor: user.label,
      op: video ? 'submit video' : 'submit image',
      method: 'POST',
      path,
      token: user.token,
      body,
    });
    if ((answer.status === 201 || answer.status === 202) && answer.body?.job_id) {
      const jobId = answer.body.job_id as string;
      this.jobs.set(jobId, { userId: user.userId, token: user.token, acknowledged: true });
      this.acknowledged.push({
        kind: 'job',
        userId: user.userId,
        jobId,
        delta: -(answer.body.credits_consumed as number),
        request: answer.seq,
      });
    }
  }

  private async grantStep(): Promise<void> {
    const user = this.users[this.grantNo % this.users.length]!;
    const opId = `${this.options.label}-grant-${++this.grantNo}`;
    const amount = 3 + (this.grantNo % 5);
    // The same op_id again, to other nodes, until acknowledged: it must apply once.
    let exclude: string | undefined;
    for (let attempt = 0; attempt < 20; attempt++) {
      const node = this.traffic.pick(exclude);
      const answer = await this.traffic.send({
        actor: 'grants',
        op: attempt === 0 ? 'grant' : 'grant (same op_id again)',
        method: 'POST',
        path: `/api/admin/v1/users/${user.userId}/credits`,
        token: this.traffic.cluster.adminToken,
        body: { amount, reason: 'chaos grant', op_id: opId },
        node,
      });
      if (answer.status === 200) {
        this.acknowledged.push({
          kind: 'grant',
          userId: user.userId,
          opId,
          delta: amount,
          request: answer.seq,
        });
        return;
      }
      exclude = node;
      await sleep(200);
    }
  }

  /** One agent turn, to `node` (default: the next live one); what it charged is recorded when answered 200. */
  async instruct(
    project: LoadProject,
    instruction: string,
    actor: string,
    node?: string,
  ): Promise<RequestRecord> {
    const answer = await this.traffic.send({
      actor,
      op: 'instruct',
      method: 'POST',
      path: `/api/v1/media-studio/projects/${project.id}/instruct`,
      token: project.user.token,
      body: { instruction },
      timeoutMs: 180_000,
      ...(node ? { node } : {}),
    });
    if (answer.status === 200) {
      const body = answer.body as InstructAnswer;
      const started = body.agent_events.find((event) => event.type === 'turn.started');
      if (started?.turn_id) {
        project.turns.push(started.turn_id);
        this.acknowledged.push({
          kind: 'turn',
          userId: project.user.userId,
          opId: `turn:${started.turn_id}`,
          delta: -5,
          request: answer.seq,
        });
      }
      for (const media of body.agent_events.filter((event) => event.type === 'media.started')) {
        const jobId = media.data.job_id as string;
        this.jobs.set(jobId, { userId: project.user.userId, token: project.user.token, acknowledged: true });
        this.acknowledged.push({
          kind: 'job',
          userId: project.user.userId,
          jobId,
          delta: -(media.data.credits as number),
          request: answer.seq,
        });
      }
    }
    return answer;
  }

  private async exportStep(): Promise<void> {
    await this.exportOn();
  }

  /** One export of the export project, to `node` (default: the next live one). */
  async exportOn(node?: string, actor = 'export'): Promise<RequestRecord> {
    const project = this.exportProject!;
    // A direct edit first (a clip's length, 1.5 s to 2.4 s in turn): an export of an unchanged revision may reuse the last
    // one, and every export here should encode.
    await this.traffic.send({
      actor,
      ...(node ? { node } : {}),
      op: 'edit clip',
      method: 'PATCH',
      path: `/api/v1/media-studio/projects/${project.id}/clips/${this.exportClipId}`,
      token: project.user.token,
      body: { duration_sec: 1.5 + (++this.exportNo % 10) / 10 },
    });
    const answer = await this.traffic.send({
      actor,
      ...(node ? { node } : {}),
      op: 'export',
      method: 'POST',
      path: `/api/v1/media-studio/projects/${project.id}/export`,
      token: project.user.token,
      body: {},
      timeoutMs: 180_000,
    });
    this.exports.push(answer);
    return answer;
  }

  private readNo = 0;
  private async readStep(): Promise<void> {
    const user = this.users[++this.readNo % this.users.length]!;
    const jobIds = [...this.jobs.entries()].filter(([, job]) => job.userId === user.userId);
    const job = jobIds.at(-1 - (this.readNo % 3));
    await this.traffic.send({
      actor: 'reads',
      op: job ? 'get job' : 'get account',
      method: 'GET',
      path: job ? `/api/v1/jobs/${job[0]}` : '/api/v1/account',
      token: user.token,
    });
  }

  /** Stops the actors and closes everything, whatever state the test left it in (safe to call again). */
  async dispose(): Promise<void> {
    await this.stop();
    await this.close();
  }

  private closed = false;

  /** Closes the events clients, the receiver and the connections. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(
      this.allProjects().flatMap((project) => project.clients.map((client) => client.close())),
    );
    await this.webhooks.close();
    this.traffic.close();
  }

  allProjects(): LoadProject[] {
    return [...this.projects, ...this.extraProjects, ...(this.exportProject ? [this.exportProject] : [])];
  }

  /**
   * Another project of the export user, with its events clients, that no loop drives (the test does): its
   * storyboard is made at once, so that each `continue` sent to it generates a scene.
   */
  async extraProject(name: string, storyboard: string): Promise<LoadProject> {
    const project = await this.project(this.exportProject!.user, name);
    this.extraProjects.push(project);
    const board = await this.instruct(project, storyboard, 'setup');
    if (board.status !== 200) throw new Error(`storyboard: ${board.status} ${JSON.stringify(board.body)}`);
    return project;
  }
}
