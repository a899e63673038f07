// The cluster as the chaos load sees it: which service nodes are up and in which incarnation,
// every HTTP request the load made (which node and incarnation, which TCP connection, when, the answer), and
// every disruption (a node killed or stopped, a NATS node killed) with its time. `pick` never names a node it
// was told is down, so only requests already in flight when a node dies fail on that node
// (check-failures.ts).
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { LocalCluster } from '../helpers/local-cluster.ts';

/** Wall-clock ms (Date.now()) everywhere in the load, so that its records compare with service timestamps. */
export const now = () => Date.now();

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
