// A steady, bounded mixed load against a local cluster (the chaos tests), recording everything the
// invariants (check-*.ts) need: every request (which node and which incarnation of it, which TCP
// connection, when, the answer), every credit operation acknowledged to a caller, every job id, every webhook
// delivery the receiver saw, every event each WebSocket client received, and every disruption (a node killed
// or stopped, a NATS node killed) with its time.
//
// Actors, each a sequential loop with a pause (so the load is bounded whatever the cluster's speed):
// - jobs:    image jobs (some failing on purpose: `[sandbox:fail]`, refunded) and short 480p videos, to the
//            next live node in turn; a key with a webhook to the receiver;
// - grants:  admin credit grants with an `op_id`; one that fails is sent again with the SAME op_id to another
//            node until acknowledged (a repeated op_id applies once: docs/operator.md, Admin API);
// - editor:  one project per actor, agent turns (storyboard, continue, plain edits) to the next live node;
// - export:  exports of a prepared two-clip project, to the next live node;
// - events:  two WebSocket clients per project, on nodes other than the load's next one, that reconnect with
//            `since=<last seq>` to another live node when their socket closes (1012 or abnormal);
// - reads:   the account balance and job reads.
// The load never sends a request to a node it was told is down; requests already in flight when a node dies
// fail on that node's connections, and only those may fail (checked by the invariants).
//
// The modules: traffic.ts (requests and disruptions), events-client.ts, load-webhooks.ts (the receiver),
// load-setup.ts (users and projects), load-actors.ts (one step of each actor); this one runs them.
import type { LocalCluster } from '../helpers/local-cluster.ts';
import { sleep } from '../helpers/wait.ts';
import {
  grantCredits,
  instructTurn,
  readAs,
  submitJob,
  type AcknowledgedCredit,
  type KnownJob,
} from './load-actors.ts';
import { LoadSetup, type LoadProject, type LoadUser } from './load-setup.ts';
import { LoadWebhooks } from './load-webhooks.ts';
import { ClusterTraffic, now, type RequestRecord } from './traffic.ts';

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

const SCENE_THEMES = ['a lighthouse at dawn', 'a harbour at night', 'a forest in rain', 'a desert road'];
/** A cycle of instructions the builtin director understands (docs/editor.md, The builtin director). */
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
  readonly jobs = new Map<string, KnownJob>();
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
  private readonly create: LoadSetup;

  private constructor(
    readonly traffic: ClusterTraffic,
    readonly webhooks: LoadWebhooks,
    readonly options: LoadOptions,
  ) {
    this.pacing = { ...DEFAULT_PACING, ...options.pacing };
    this.create = new LoadSetup(traffic, webhooks, options.label, options.credits ?? 1_000_000);
  }

  static async prepare(cluster: LocalCluster, options: LoadOptions): Promise<ChaosLoad> {
    const traffic = new ClusterTraffic(cluster);
    const webhooks = await LoadWebhooks.start();
    webhooks.failFirst = options.failFirstWebhook ?? false;
    const load = new ChaosLoad(traffic, webhooks, options);
    await load.setup();
    return load;
  }

  /** A user of the load (setup requests must succeed). */
  private async user(label: string, scopes: string[]): Promise<LoadUser> {
    const user = await this.create.user(label, scopes);
    this.users.push(user);
    return user;
  }

  private project(user: LoadUser, name: string, fields: Record<string, unknown> = {}): Promise<LoadProject> {
    return this.create.project(user, name, this.projects.length, fields);
  }

  private async setup(): Promise<void> {
    const editorScopes = ['video-editor:read', 'video-editor:write', 'video:write', 'image:write'];
    for (let i = 0; i < (this.options.jobUsers ?? 2); i++)
      await this.user(`jobs${i}`, ['video:write', 'image:write']);
    for (let i = 0; i < (this.options.editorProjects ?? 2); i++) {
      const user = await this.user(`editor${i}`, editorScopes);
      this.projects.push(await this.project(user, `chaos ${i}`));
    }
    // The export project: two short image clips, so that an export encodes in a few seconds.
    const exporter = await this.user('export', editorScopes);
    const project = await this.project(exporter, 'chaos export', { aspect_ratio: '16:9' });
    this.exportClipId = await this.create.exportClips(project);
    this.exportProject = project;
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
    await submitJob(this, user, ++this.jobNo);
  }

  private async grantStep(): Promise<void> {
    const user = this.users[this.grantNo % this.users.length]!;
    const opId = `${this.options.label}-grant-${++this.grantNo}`;
    const amount = 3 + (this.grantNo % 5);
    await grantCredits(this, user, opId, amount);
  }

  /** One agent turn, to `node` (default: the next live one); what it charged is recorded when answered 200. */
  instruct(project: LoadProject, instruction: string, actor: string, node?: string): Promise<RequestRecord> {
    return instructTurn(this, project, instruction, actor, node);
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
    const readNo = ++this.readNo;
    await readAs(this, this.users[readNo % this.users.length]!, readNo);
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
