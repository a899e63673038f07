// Setting up what the chaos load drives, through the admin and public APIs: users, each with a key
// whose webhook goes to the load's receiver, and projects, each watched by two events clients. Setup requests
// must succeed: a failed one throws.
import { makeMedia } from '../helpers/editor.ts';
import { EventsClient } from './events-client.ts';
import type { LoadWebhooks } from './load-webhooks.ts';
import type { ClusterTraffic } from './traffic.ts';

/** A user of the load: its key, and what it is for. */
export interface LoadUser {
  label: string;
  userId: string;
  keyId: string;
  token: string;
  secret: string;
  initialCredits: number;
}

/** A project of the load, with its events clients. */
export interface LoadProject {
  id: string;
  user: LoadUser;
  clients: EventsClient[];
  /** Agent turns answered 200, by turn id. */
  turns: string[];
}

/** Creates the load's users and projects: `label` goes into their names, `credits` is each opening grant. */
export class LoadSetup {
  constructor(
    private readonly traffic: ClusterTraffic,
    private readonly webhooks: LoadWebhooks,
    private readonly label: string,
    private readonly credits: number,
  ) {}

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

  /** A user with a key of `scopes`, its webhook set to the receiver. */
  async user(label: string, scopes: string[]): Promise<LoadUser> {
    const credits = this.credits;
    const email = `${this.label}-${label}-${Math.random().toString(36).slice(2, 8)}@example.com`;
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
    return { label, userId, keyId, token: key.body.api_key as string, secret, initialCredits: credits };
  }

  /** A project of `user` with two events clients (`nodeOffset` spreads projects' clients over the nodes). */
  async project(
    user: LoadUser,
    name: string,
    nodeOffset: number,
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
      await client.open(nodes[(nodeOffset + i) % nodes.length]!, 0);
      project.clients.push(client);
    }
    return project;
  }

  /**
   * Makes `project` exportable: two 2-second image clips (an uploaded PNG), so that an export takes a few
   * seconds on a busy 2-core machine, well within a shutdown grace. Returns the id of the last clip.
   */
  async exportClips(project: LoadProject): Promise<string> {
    const exporter = project.user;
    let clipId = '';
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
      clipId = clip.body.clip.id as string;
    }
    return clipId;
  }
}
