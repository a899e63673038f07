// What the fuzz corpus aims at: accounts with every scope (one without credits, one whose jobs hang in the
// sandbox, one that edits), a dashboard session, editor projects with real media and clips, an OAuth client and
// an MCP session — made through the public and admin APIs as users make them.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { SCOPES } from '../../schemas/scopes.ts';
import { adminClient, call, type RunningService } from '../helpers/service.ts';
import { Browser } from '../helpers/browser-form.ts';
import { editorClient, makeMedia } from '../helpers/editor.ts';
import { pngBomb } from '../helpers/over-limit-media.ts';

/** An account and its key with every scope. */
export interface Account {
  userId: string;
  keyId: string;
  token: string;
}

/** A project the corpus edits: its video, library and clips. */
export interface FuzzProject {
  id: string;
  videoId: string;
  assets: { image: string; audio: string; video: string };
  clipIds: string[];
}

export interface World {
  baseUrl: string;
  adminToken: string;
  /** No credits: anything that validates ends in 402 before work starts. */
  poor: Account;
  /** Plenty of credits; its generation prompts carry `[sandbox:hang]`, so nothing it submits renders. */
  rich: Account;
  /** Edits projects: 1000 credits, so turns run (5 each) and their video generations answer 402. */
  editor: Account;
  /** A signed-in browser (the dashboard's user is `editor`'s), its CSRF token and a page bearer token. */
  session: { browser: Browser; csrf: string; bearer: string };
  /** Projects fuzzed freely (clips deleted, names changed) … */
  scratch: FuzzProject;
  /** … and the one whose timeline is fuzzed only in its numbers and then exported. */
  exported: FuzzProject;
  /** Media the corpus uploads: real files and hostile ones. */
  media: { png: Buffer; wav: Buffer; mp4: Buffer; pngBomb: Buffer };
  /** The admin routes' target: a user for credits and keys, and a key for webhooks. */
  target: Account;
  oauthClientId: string;
  mcpSession: string;
  /** The service's own media URL of an uploaded image (for imports and job inputs). */
  ownImageUrl: string;
}

const OAUTH_CALLBACK = 'http://127.0.0.1:53682/callback';

/** A one-second 160×90 H.264/AAC mp4. */
function tinyMp4(): Buffer {
  const { ffmpeg } = resolveFfmpeg({ ffmpegPath: process.env.FFMPEG_PATH });
  return execFileSync(
    ffmpeg,
    [
      ...['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=s=160x90:r=30:d=1', '-f', 'lavfi'],
      ...['-i', 'sine=frequency=300:duration=1', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt'],
      ...[
        'yuv420p',
        '-c:a',
        'aac',
        '-shortest',
        '-movflags',
        '+frag_keyframe+empty_moov',
        '-f',
        'mp4',
        'pipe:1',
      ],
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
}

async function account(service: RunningService, tag: string, credits: number): Promise<Account> {
  const admin = adminClient(service);
  const userId = await admin.createUser(`fuzz-${tag}-${randomBytes(4).toString('hex')}@example.com`, credits);
  const key = await admin.createKey(userId, [...SCOPES]);
  return { userId, keyId: key.id, token: key.apiKey };
}

async function project(
  service: RunningService,
  editor: Account,
  media: World['media'],
  name: string,
): Promise<FuzzProject> {
  const client = editorClient(() => service, editor.token);
  const { id } = await client.createProject({ name, aspect_ratio: '16:9' });
  const state = (await client.state(id)).body;
  const upload = async (data: Buffer, type: string) => {
    const answer = await client.upload(id, data, type);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return (answer.body as { asset: { id: string } }).asset.id;
  };
  const assets = {
    image: await upload(media.png, 'image/png'),
    audio: await upload(media.wav, 'audio/wav'),
    video: await upload(media.mp4, 'video/mp4'),
  };
  const clipIds: string[] = [];
  for (const [track, assetId] of [
    ['video', assets.image],
    ['video', assets.video],
    ['music', assets.audio],
    ['voice', assets.video],
  ] as const) {
    const clip = await client.addClip(id, {
      track,
      asset_id: assetId,
      ...(track === 'video' ? {} : { start_sec: 0 }),
    });
    assert.equal(clip.status, 200, JSON.stringify(clip.body));
    clipIds.push((clip.body as { clip: { id: string } }).clip.id);
  }
  return { id, videoId: state.videos[0]!.id, assets, clipIds };
}

/** Makes the world through the service's APIs. */
export async function makeWorld(service: RunningService): Promise<World> {
  const media = {
    png: makeMedia('png'),
    wav: makeMedia('wav', { seconds: 1 }),
    mp4: tinyMp4(),
    pngBomb: pngBomb(),
  };
  const [poor, rich, editor] = [
    await account(service, 'poor', 0),
    await account(service, 'rich', 10_000_000),
    await account(service, 'editor', 1000),
  ];
  const target = await account(service, 'target', 1000);
  const scratch = await project(service, editor, media, 'scratch');
  const exported = await project(service, editor, media, 'exported');

  const password = `fuzz-${randomBytes(8).toString('hex')}`;
  const set = await call(service.url, 'POST', `/api/admin/v1/users/${editor.userId}/password`, {
    token: service.adminToken,
    body: { password },
  });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  const users = await call<{ user: { email: string } }>(
    service.url,
    'GET',
    `/api/admin/v1/users/${editor.userId}`,
    {
      token: service.adminToken,
    },
  );
  const browser = new Browser(service.url);
  const signedIn = await browser.postForm('/sign-in', { email: users.body.user.email, password, next: '/' });
  assert.equal(signedIn.status, 303, signedIn.text.slice(0, 200));
  const current = await browser.request('GET', '/api/dashboard/v1/session');
  const csrf = (JSON.parse(current.text) as { csrf_token: string }).csrf_token;
  const token = await browser.request('POST', '/api/dashboard/v1/token', {
    headers: { 'x-csrf-token': csrf },
  });
  assert.equal(token.status, 200, token.text);
  const bearer = (JSON.parse(token.text) as { token: string }).token;

  const registered = await fetch(`${service.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [OAUTH_CALLBACK], client_name: 'fuzz' }),
  });
  assert.equal(registered.status, 201, await registered.clone().text());
  const oauthClientId = ((await registered.json()) as { client_id: string }).client_id;

  const initialized = await fetch(`${service.url}/api/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${editor.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } },
    }),
  });
  assert.equal(initialized.status, 200, await initialized.clone().text());
  const mcpSession = initialized.headers.get('mcp-session-id') ?? '';
  await initialized.text();

  const library = await editorClient(() => service, editor.token).state(scratch.id);
  const image = library.body.assets.find((asset) => asset.id === scratch.assets.image) as
    { url?: string } | undefined;
  return {
    baseUrl: service.url,
    adminToken: service.adminToken,
    poor,
    rich,
    editor,
    session: { browser, csrf, bearer },
    scratch,
    exported,
    media,
    target,
    oauthClientId,
    mcpSession,
    ownImageUrl: image?.url ?? `${service.url}/media/none.png`,
  };
}
