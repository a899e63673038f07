// The hosted MCP server (docs/mcp.md) end to end: the SDK's own Client over Streamable HTTP against the
// service as a process (sandbox provider and builtin director with short timings), every tool checked against its
// REST equivalent, scopes, auth and sessions over raw HTTP, and a cancelled wait.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startNats, skipWithoutNats } from '../helpers/nats.ts';
import { startService, adminClient, call, type RunningService } from '../helpers/service.ts';
import { checkTurnAnswer, editorUser, type InstructAnswer, type ProjectState } from '../helpers/editor.ts';

/** The 17 tools (docs/mcp.md, The tools). */
const TOOLS = [
  'list_models',
  'estimate_cost',
  'media_forge_generate',
  'job_status',
  'job_wait',
  'job_cancel',
  'list_jobs',
  'get_account',
  'video_prompt_guide',
  'video_editor_create_project',
  'video_editor_list_projects',
  'video_editor_get_state',
  'video_editor_instruct',
  'video_editor_export',
  'video_editor_create_video',
  'video_editor_add_asset',
  'video_editor_update_context',
].sort();

const ALL_SCOPES = ['models:read', 'video:write', 'image:write', 'video-editor:read', 'video-editor:write'];
const SLOW = '[sandbox:delay=60000]';

type Structured = Record<string, unknown>;
interface Job {
  job_id: string;
  status: string;
  credits_consumed: number;
  refunded_credits: number;
  result: { images?: string[]; video?: string } | null;
}

/** A JSON-RPC message POSTed to `/api/mcp` without the SDK (for what the SDK client never sends). */
function postRaw(baseUrl: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${baseUrl}/api/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

/** A raw client of `key` on `baseUrl` with a session of its own; `post` sends in it unless told another. */
async function rawClient(baseUrl: string, key: string, name: string) {
  const own = await rawSession(baseUrl, key, name);
  const post = (body: unknown, session = own) =>
    postRaw(baseUrl, body, { authorization: `Bearer ${key}`, 'mcp-session-id': session });
  return { post, session: own };
}

/** An `initialize` request of a raw client. */
function initializeMessage(name: string) {
  return {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name, version: '1' } },
  };
}

/** Opens a session with raw HTTP; answers its `Mcp-Session-Id`. */
async function rawSession(baseUrl: string, key: string, name = 'raw'): Promise<string> {
  const answer = await postRaw(baseUrl, initializeMessage(name), { authorization: `Bearer ${key}` });
  assert.equal(answer.status, 200, await answer.clone().text());
  await answer.text();
  const id = answer.headers.get('mcp-session-id');
  assert.ok(id, 'Mcp-Session-Id');
  return id;
}

/** MCP: "the progress value MUST increase with each notification"; it never passes a given total. */
function increasing(progress: Progress[], what: string): void {
  for (let i = 1; i < progress.length; i++) {
    assert.ok(
      progress[i]!.progress > progress[i - 1]!.progress,
      `${what}: progress increases ${JSON.stringify(progress)}`,
    );
  }
  for (const p of progress)
    assert.ok(p.total === undefined || p.progress <= p.total, `${what}: ${JSON.stringify(p)}`);
}

describe('MCP server (/api/mcp)', () => {
  let mongo: TestMongo;
  let service: RunningService;
  let token: string;
  let keyId: string;
  let userId: string;
  let client: Client;
  let transport: StreamableHTTPClientTransport;
  const called = new Set<string>();

  const rest = <T = Structured>(method: string, path: string, body?: unknown, key = token) =>
    call<T>(service.url, method, path, { token: key, ...(body === undefined ? {} : { body }) });

  /** A connected SDK client of `key`; `tools/list` is read so the client validates results against outputSchema. */
  async function connect(key: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
    const t = new StreamableHTTPClientTransport(new URL(`${service.url}/api/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    });
    const c = new Client({ name: 'mediaforge-e2e', version: '1.0.0' });
    await c.connect(t);
    await c.listTools();
    return { client: c, transport: t };
  }

  /** Calls a tool that must succeed; returns its result (structuredContent checked by the SDK client). */
  async function tool(
    name: string,
    args: Record<string, unknown> = {},
    options: { onprogress?: (progress: Progress) => void; signal?: AbortSignal; timeout?: number } = {},
    on: Client = client,
  ): Promise<CallToolResult & { structuredContent: Structured }> {
    called.add(name);
    const result = (await on.callTool({ name, arguments: args }, undefined, {
      timeout: 90_000,
      ...options,
    })) as CallToolResult;
    assert.notEqual(result.isError, true, `${name} failed: ${JSON.stringify(result.content)}`);
    assert.equal(typeof result.structuredContent, 'object', `${name} returns structuredContent`);
    const text = result.content.find((item) => item.type === 'text');
    assert.ok(text && text.text.length > 0, `${name} returns a text summary`);
    return result as CallToolResult & { structuredContent: Structured };
  }

  const links = (result: CallToolResult) =>
    result.content.filter(
      (item): item is Extract<CallToolResult['content'][number], { type: 'resource_link' }> =>
        item.type === 'resource_link',
    );

  before(async () => {
    mongo = await startMongo();
    service = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: 'mcp_e2e',
      SANDBOX_VIDEO_MS: '300',
      SANDBOX_IMAGE_MS: '200',
      PROVIDER_POLL_INTERVAL_MS: '200',
      PROVIDER_TIMEOUT_MS: '120000',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
    ({ token, keyId, userId } = await editorUser(service, { credits: 100_000, scopes: ALL_SCOPES }));
    ({ client, transport } = await connect(token));
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await service?.stop();
    await mongo?.stop();
  });

  it('initialize: instructions, a session id, and exactly the 17 tools with object input and output schemas', async () => {
    const instructions = client.getInstructions() ?? '';
    assert.match(instructions, /job_wait/);
    assert.match(instructions, /video_editor_instruct/);
    assert.match(String(transport.sessionId), /\S{16,}/, 'initialize answered an Mcp-Session-Id');
    assert.ok(client.getServerCapabilities()?.tools, 'the tools capability is announced');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', `${t.name} inputSchema`);
      assert.equal(t.outputSchema?.type, 'object', `${t.name} outputSchema`);
      assert.ok(t.description && t.description.length > 20, `${t.name} has a description`);
    }
  });

  it('list_models, get_account, estimate_cost and video_prompt_guide answer as REST does', async () => {
    const models = await tool('list_models');
    assert.deepEqual(models.structuredContent, (await rest('GET', '/api/v1/models')).body);
    const account = await tool('get_account');
    assert.deepEqual(account.structuredContent, (await rest('GET', '/api/v1/account')).body);
    assert.equal(account.structuredContent.credits, 100_000);

    const video = await tool('estimate_cost', {
      model: 'vidmodel-2.0',
      duration_seconds: 5,
      resolution: '720p',
    });
    assert.deepEqual(video.structuredContent, { model: 'vidmodel-2.0', credits: 1135 });
    const fast = await tool('estimate_cost', { model: 'vidmodel-2.0', fast: true });
    assert.deepEqual(fast.structuredContent, { model: 'vidmodel-2.0-fast', credits: 905 });
    const low = await tool('estimate_cost', {
      model: 'vidmodel-2.0-fast',
      resolution: '480p',
      duration_seconds: 4,
    });
    assert.deepEqual(low.structuredContent, { model: 'vidmodel-2.0-fast', credits: 4 * 81 });
    const images = await tool('estimate_cost', { model: 'imgmodel-2', num_images: 3 });
    assert.deepEqual(images.structuredContent, { model: 'imgmodel-2', credits: 150 });

    const guide = await tool('video_prompt_guide');
    const text = String(guide.structuredContent.guide);
    assert.match(text, /Total:/);
    assert.match(text, /Shot 1:/);
    assert.match(text, /Audio:/);
  });

  let image: Job;
  let projectId: string;
  let emptyVideoId: string;

  it('media_forge_generate an image, then job_wait with progress: completed, its media as resource_links to /media/', async () => {
    const submitted = await tool('media_forge_generate', { model: 'imgmodel-2', prompt: 'a red lighthouse' });
    const body = submitted.structuredContent as { job_id: string } & Structured;
    assert.deepEqual(Object.keys(body).sort(), [
      'credits_consumed',
      'credits_remaining',
      'job_id',
      'model',
      'poll_url',
      'status',
    ]);
    assert.equal(body.status, 'processing');
    assert.equal(body.model, 'imgmodel-2');
    assert.equal(body.credits_consumed, 50);
    assert.equal(body.poll_url, `/api/v1/jobs/${body.job_id}`);
    assert.equal(
      body.credits_remaining,
      (await rest<{ credits: number }>('GET', '/api/v1/account')).body.credits,
    );

    const progress: Progress[] = [];
    const waited = await tool(
      'job_wait',
      { job_id: body.job_id, timeout_seconds: 60 },
      { onprogress: (p) => progress.push(p) },
    );
    assert.ok(progress.length >= 1, 'at least one notifications/progress');
    increasing(progress, 'job_wait');
    image = waited.structuredContent as unknown as Job;
    assert.equal(image.status, 'completed', JSON.stringify(image));
    const url = image.result?.images?.[0];
    assert.ok(url, JSON.stringify(image));
    const media = links(waited);
    assert.ok(media.length >= 1, `resource_link content: ${JSON.stringify(waited.content)}`);
    for (const link of media) assert.match(link.uri, /\/media\//);
    assert.ok(
      media.some((link) => link.uri === url),
      `a link is the job's image: ${url} ${JSON.stringify(media)}`,
    );
    const fetched = await fetch(media[0]!.uri);
    assert.equal(fetched.status, 200);
    assert.match(String(fetched.headers.get('content-type')), /^image\//);
    await fetched.arrayBuffer();

    const status = await tool('job_status', { job_id: body.job_id });
    assert.deepEqual(status.structuredContent, (await rest('GET', `/api/v1/jobs/${body.job_id}`)).body);
    const list = await tool('list_jobs', { limit: 10 });
    assert.deepEqual(list.structuredContent, (await rest('GET', '/api/v1/jobs?limit=10')).body);
    const jobs = list.structuredContent.jobs as Job[];
    assert.equal(jobs[0]?.job_id, body.job_id);

    // Pages: list_jobs follows next_cursor as GET /api/v1/jobs does.
    await tool('media_forge_generate', { model: 'imgmodel-2', prompt: 'a second image' });
    const first = await tool('list_jobs', { limit: 1 });
    const cursor = first.structuredContent.next_cursor as string;
    assert.equal(typeof cursor, 'string');
    const second = await tool('list_jobs', { limit: 1, cursor });
    assert.deepEqual(
      second.structuredContent,
      (await rest('GET', `/api/v1/jobs?limit=1&cursor=${encodeURIComponent(cursor)}`)).body,
    );
    assert.equal((second.structuredContent.jobs as Job[])[0]?.job_id, body.job_id);
  });

  it('job_wait on a job that fails: the failed job, refunded', async () => {
    const before = (await rest<{ credits: number }>('GET', '/api/v1/account')).body.credits;
    const submitted = await tool('media_forge_generate', {
      model: 'imgmodel-2',
      prompt: 'doomed [sandbox:fail]',
    });
    const waited = await tool('job_wait', {
      job_id: submitted.structuredContent.job_id,
      timeout_seconds: 30,
    });
    const job = waited.structuredContent as unknown as Job & { error: string | null };
    assert.equal(job.status, 'failed', JSON.stringify(job));
    assert.equal(typeof job.error, 'string');
    assert.equal(job.refunded_credits, 50);
    assert.equal(job.result, null);
    assert.deepEqual(links(waited), []);
    assert.equal((await rest<{ credits: number }>('GET', '/api/v1/account')).body.credits, before);
  });

  it('media_forge_generate = the REST submit, and estimate_cost = what it charges (differential)', async () => {
    const bodies: { model: string; route: string; body: Record<string, unknown> }[] = [
      {
        model: 'vidmodel-2.0',
        route: '/api/v1/video/vidmodel-2/generate',
        body: { duration_seconds: 8, resolution: '480p', aspect_ratio: '9:16', generate_audio: false },
      },
      {
        model: 'vidmodel-2.0-fast',
        route: '/api/v1/video/vidmodel-2/generate',
        body: { fast: true, duration_seconds: 6 },
      },
      {
        model: 'imgmodel-2',
        route: '/api/v1/image/nano-banana/generate',
        body: { num_images: 3, aspect_ratio: '16:9' },
      },
    ];
    for (const { model, route, body } of bodies) {
      const prompt = `differential ${model} ${SLOW}`;
      const estimate = await tool('estimate_cost', {
        model,
        ...Object.fromEntries(
          Object.entries(body).filter(([name]) =>
            ['duration_seconds', 'resolution', 'fast', 'generate_audio', 'num_images'].includes(name),
          ),
        ),
      });
      const mcpBody = { ...body };
      delete mcpBody.fast;
      const viaMcp = (await tool('media_forge_generate', { model, prompt, ...mcpBody })).structuredContent;
      const viaRest = await rest<Structured>('POST', route, { prompt, ...body });
      assert.equal(viaRest.status, 202, JSON.stringify(viaRest.body));
      const strip = ({ job_id: _id, poll_url: _url, credits_remaining: _left, ...kept }: Structured) => kept;
      assert.deepEqual(strip(viaMcp), strip(viaRest.body), model);
      assert.equal(
        viaMcp.credits_consumed,
        estimate.structuredContent.credits,
        `${model}: estimate = charge`,
      );
      const [mcpJob, restJob] = await Promise.all(
        [viaMcp.job_id, viaRest.body.job_id].map(async (id) => {
          const job = (await tool('job_status', { job_id: id })).structuredContent;
          return { ...job, job_id: undefined, created_at: undefined };
        }),
      );
      assert.deepEqual(mcpJob, restJob, `${model}: the two jobs read the same`);
      for (const id of [viaMcp.job_id, viaRest.body.job_id]) await tool('job_cancel', { job_id: id });
    }
  });

  it('job_cancel of a slow video refunds it in full', async () => {
    const before = (await rest<{ credits: number }>('GET', '/api/v1/account')).body.credits;
    const submitted = await tool('media_forge_generate', {
      model: 'vidmodel-2.0',
      prompt: `a slow sunrise ${SLOW}`,
      duration_seconds: 5,
      resolution: '720p',
    });
    const jobId = String(submitted.structuredContent.job_id);
    assert.equal(submitted.structuredContent.credits_consumed, 1135);
    assert.equal(submitted.structuredContent.credits_remaining, before - 1135);
    const status = await tool('job_status', { job_id: jobId });
    assert.equal(status.structuredContent.status, 'processing');
    const processing = await tool('list_jobs', { status: 'processing' });
    assert.ok((processing.structuredContent.jobs as Job[]).some((job) => job.job_id === jobId));

    const cancelled = await tool('job_cancel', { job_id: jobId });
    assert.deepEqual(cancelled.structuredContent, {
      job_id: jobId,
      status: 'cancelled',
      refunded_credits: 1135,
    });
    assert.equal((await rest<{ credits: number }>('GET', '/api/v1/account')).body.credits, before);
    const rested = await rest<Job>('GET', `/api/v1/jobs/${jobId}`);
    assert.equal(rested.body.status, 'cancelled');
    assert.equal(rested.body.refunded_credits, 1135);

    // A second cancel is REST's 409: a tool error.
    const again = (await client.callTool({
      name: 'job_cancel',
      arguments: { job_id: jobId },
    })) as CallToolResult;
    assert.equal(again.isError, true, JSON.stringify(again));
  });

  it('the editor: project, 2 director turns, state, video, asset import, context, export to an mp4', async () => {
    const created = await tool('video_editor_create_project', { name: 'Lighthouse', aspect_ratio: '16:9' });
    const project = (created.structuredContent as { project: ProjectState['project'] }).project;
    projectId = project.id;
    assert.equal(project.name, 'Lighthouse');
    assert.equal(project.aspect_ratio, '16:9');
    const restState = await rest<ProjectState>('GET', `/api/v1/media-studio/projects/${project.id}`);
    assert.equal(restState.status, 200);

    const listed = await tool('video_editor_list_projects');
    assert.deepEqual(listed.structuredContent, (await rest('GET', '/api/v1/media-studio/projects')).body);
    assert.ok((listed.structuredContent.projects as { id: string }[]).some((p) => p.id === project.id));

    const plan = await tool('video_editor_instruct', {
      project_id: project.id,
      instruction: 'a 2-scene video about a lighthouse at dawn',
    });
    const planAnswer = plan.structuredContent as unknown as InstructAnswer;
    checkTurnAnswer({ status: 200, headers: new Headers(), body: planAnswer }, project.id);
    assert.equal(planAnswer.context_appended, true);
    assert.equal(planAnswer.media_gen_done, false);

    const turnProgress: Progress[] = [];
    const scene = await tool(
      'video_editor_instruct',
      { project_id: project.id, instruction: 'continue' },
      { onprogress: (p) => turnProgress.push(p) },
    );
    const sceneAnswer = scene.structuredContent as unknown as InstructAnswer;
    checkTurnAnswer({ status: 200, headers: new Headers(), body: sceneAnswer }, project.id);
    assert.equal(sceneAnswer.media_gen_done, true, sceneAnswer.assistant_text);
    assert.equal(sceneAnswer.clips_created.length, 1);
    assert.equal(sceneAnswer.assets_created.length, 1);
    const sceneLinks = links(scene);
    assert.ok(
      sceneLinks.some((link) => /\/media\//.test(link.uri)),
      `the new asset as a resource_link: ${JSON.stringify(scene.content)}`,
    );
    assert.ok(turnProgress.length >= 1, 'instruct sends notifications/progress when asked');
    increasing(turnProgress, 'instruct');

    const state = await tool('video_editor_get_state', { project_id: project.id });
    const stateBody = state.structuredContent as unknown as ProjectState;
    assert.deepEqual(stateBody, (await rest('GET', `/api/v1/media-studio/projects/${project.id}`)).body);
    const clip = sceneAnswer.clips_created[0]!;
    const stateLinks = links(state).map((link) => link.uri);
    for (const asset of stateBody.assets)
      assert.ok(stateLinks.includes(asset.url), `get_state links ${asset.url}`);
    assert.ok(
      stateBody.clips.some((c) => c.id === clip.id && c.track === 'video'),
      'get_state shows the clip',
    );
    assert.equal(stateBody.project.context_md.includes('lighthouse at dawn'), true);

    const video = await tool('video_editor_create_video', { project_id: project.id, name: 'Teaser' });
    const newVideo = (
      video.structuredContent as { video: { id: string; name: string; aspect_ratio: string } }
    ).video;
    assert.equal(newVideo.name, 'Teaser');
    emptyVideoId = newVideo.id;
    assert.equal(newVideo.aspect_ratio, '16:9', 'defaults to the project ratio');
    const narrowed = await tool('video_editor_get_state', { project_id: project.id, video_id: newVideo.id });
    const narrowedBody = narrowed.structuredContent as unknown as ProjectState;
    assert.equal(narrowedBody.videos.length, 2);
    assert.deepEqual(narrowedBody.clips, [], 'the new video has no clip');

    const imageUrl = image.result!.images![0]!;
    const added = await tool('video_editor_add_asset', {
      project_id: project.id,
      url: imageUrl,
      name: 'still',
    });
    const asset = (
      added.structuredContent as { asset: { id: string; kind: string; source: string; url: string } }
    ).asset;
    assert.equal(asset.kind, 'image');
    assert.equal(asset.source, 'import');
    assert.match(asset.url, /\/media\//);

    const context = `${stateBody.project.context_md}\n\nNote: keep it calm.`;
    const updated = await tool('video_editor_update_context', {
      project_id: project.id,
      context_md: context,
    });
    const updatedProject = (updated.structuredContent as { project: ProjectState['project'] }).project;
    assert.equal(updatedProject.context_md, context);
    const after = await rest<ProjectState>('GET', `/api/v1/media-studio/projects/${project.id}`);
    assert.equal(after.body.project.context_md, context);
    assert.ok(after.body.assets.some((a) => a.id === asset.id));

    const exportProgress: Progress[] = [];
    const exported = await tool(
      'video_editor_export',
      { project_id: project.id },
      { onprogress: (p) => exportProgress.push(p) },
    );
    const answer = exported.structuredContent as {
      video_url: string;
      asset_id: string;
      video_clip_count: number;
    };
    assert.equal(answer.video_clip_count, 1);
    assert.match(answer.video_url, /\/media\//);
    assert.ok(
      links(exported).some((link) => link.uri === answer.video_url),
      `the export as a resource_link: ${JSON.stringify(exported.content)}`,
    );
    assert.ok(exportProgress.length >= 1, 'export sends notifications/progress when asked');
    increasing(exportProgress, 'export');
    const mp4 = await fetch(answer.video_url);
    assert.equal(mp4.status, 200);
    const bytes = Buffer.from(await mp4.arrayBuffer());
    assert.ok(bytes.subarray(0, 64).includes(Buffer.from('ftyp')), 'an mp4');
  });

  it('video_editor_instruct with reference image_urls (the service own media) imports them as assets', async () => {
    const created = await tool('video_editor_create_project', { name: 'References' });
    const id = (created.structuredContent as { project: { id: string } }).project.id;
    const imageUrl = image.result!.images![0]!;
    const turn = await tool('video_editor_instruct', {
      project_id: id,
      instruction: 'add the image as scene 1',
      image_urls: [imageUrl],
    });
    const answer = turn.structuredContent as unknown as InstructAnswer;
    checkTurnAnswer({ status: 200, headers: new Headers(), body: answer }, id);
    const state = (await tool('video_editor_get_state', { project_id: id }))
      .structuredContent as unknown as ProjectState;
    const imported = state.assets.filter((asset) => asset.source === 'import' && asset.kind === 'image');
    assert.equal(imported.length, 1, JSON.stringify(state.assets));
    assert.ok(
      state.clips.some((clip) => clip.asset_id === imported[0]!.id && clip.track === 'video'),
      `the image is on the video track: ${answer.assistant_text}`,
    );
  });

  it('concurrent calls on one session each get their own answer', async () => {
    const names = [
      'get_account',
      'list_models',
      'video_prompt_guide',
      'list_jobs',
      'video_editor_list_projects',
    ];
    const results = await Promise.all(
      Array.from({ length: 15 }, (_, i) => tool(names[i % names.length]!, i % 5 === 3 ? { limit: 2 } : {})),
    );
    results.forEach((result, i) => {
      const name = names[i % names.length]!;
      const keys = Object.keys(result.structuredContent).sort();
      const expected: Record<string, string[]> = {
        get_account: ['credits', 'user_id'],
        list_models: ['models'],
        video_prompt_guide: ['guide'],
        list_jobs: ['jobs', 'next_cursor'],
        video_editor_list_projects: ['projects'],
      };
      assert.deepEqual(keys, expected[name], `${i}: ${name}`);
    });
  });

  it('a key without the scope: tool errors naming it, nothing charged', async () => {
    const limited = await editorUser(service, { credits: 1000, scopes: ['models:read'] });
    const { client: narrow } = await connect(limited.token);
    try {
      const generate = (await narrow.callTool({
        name: 'media_forge_generate',
        arguments: { model: 'imgmodel-2', prompt: 'a cat' },
      })) as CallToolResult;
      assert.equal(generate.isError, true, JSON.stringify(generate));
      assert.match(JSON.stringify(generate.content), /image:write/);
      const video = (await narrow.callTool({
        name: 'media_forge_generate',
        arguments: { model: 'vidmodel-2.0', prompt: 'a cat' },
      })) as CallToolResult;
      assert.equal(video.isError, true, JSON.stringify(video));
      assert.match(JSON.stringify(video.content), /video:write/);
      const project = (await narrow.callTool({
        name: 'video_editor_create_project',
        arguments: { name: 'Nope' },
      })) as CallToolResult;
      assert.equal(project.isError, true, JSON.stringify(project));
      assert.match(JSON.stringify(project.content), /video-editor:write/);
      const read = (await narrow.callTool({
        name: 'video_editor_list_projects',
        arguments: {},
      })) as CallToolResult;
      assert.equal(read.isError, true, JSON.stringify(read));
      assert.match(JSON.stringify(read.content), /video-editor:read/);

      const account = await rest<{ credits: number }>('GET', '/api/v1/account', undefined, limited.token);
      assert.equal(account.body.credits, 1000, 'balance unchanged');
      const user = await adminClient(service).call<{ user: { credits: number } }>(
        'GET',
        `/users/${limited.userId}`,
      );
      assert.equal(user.status, 200);
      assert.equal(user.body.user.credits, 1000);
      const jobs = await rest<{ jobs: unknown[] }>('GET', '/api/v1/jobs', undefined, limited.token);
      assert.deepEqual(jobs.body.jobs, []);
      // Tools that need no editor scope still work for it.
      const models = (await narrow.callTool({ name: 'list_models', arguments: {} })) as CallToolResult;
      assert.notEqual(models.isError, true);
    } finally {
      await narrow.close();
    }
  });

  it('bad arguments are tool errors with the REST message; an unknown tool is a protocol error', async () => {
    const bad = (await client.callTool({
      name: 'media_forge_generate',
      arguments: { model: 'vidmodel-2.0', prompt: 'x', duration_seconds: 7 },
    })) as CallToolResult;
    assert.equal(bad.isError, true);
    assert.match(JSON.stringify(bad.content), /duration_seconds must be one of 4, 5, 6, 8, 10, 15/);
    const missing = (await client.callTool({
      name: 'job_status',
      arguments: { job_id: 'job_doesnotexist' },
    })) as CallToolResult;
    assert.equal(missing.isError, true, JSON.stringify(missing));
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /no_such_tool/);
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        'media_forge_generate',
        { model: 'vidmodel-2.0', prompt: '' },
        /prompt is required \(non-empty string\)/,
      ],
      ['media_forge_generate', { model: 'imgmodel-2', prompt: 'x', num_images: 5 }, /num_images must be 1-4/],
      [
        'media_forge_generate',
        { model: 'vidmodel-2.0-fast', prompt: 'x', image_url: 'https://example.com/a.png' },
        /fast mode supports text-to-video only \(no image_url\)/,
      ],
      ['media_forge_generate', { model: 'vidmodel-9', prompt: 'x' }, /model must be one of/],
      [
        'job_wait',
        { job_id: 'job_x', timeout_seconds: 0 },
        /timeout_seconds must be an integer from 1 to 600/,
      ],
      [
        'job_wait',
        { job_id: 'job_x', timeout_seconds: 601 },
        /timeout_seconds must be an integer from 1 to 600/,
      ],
      [
        'video_editor_create_project',
        { aspect_ratio: '2:1' },
        /aspect_ratio must be one of 9:16, 1:1, 4:5, 16:9, 4:3/,
      ],
      ['video_editor_instruct', { project_id: projectId }, /instruction is required/],
      ['video_editor_export', { project_id: projectId, fit: 'stretch' }, /fit must be one of fit, fill/],
      ['video_editor_export', { project_id: projectId, video_id: emptyVideoId }, /no_video_clips/],
      ['video_editor_add_asset', { project_id: projectId, url: 'http://example.com/a.png' }, /url/],
      ['video_editor_get_state', { project_id: 'prj_doesnotexist' }, /not found/i],
    ];
    const before = (await rest<{ credits: number }>('GET', '/api/v1/account')).body.credits;
    for (const [name, args, message] of cases) {
      const answer = (await client.callTool({ name, arguments: args })) as CallToolResult;
      assert.equal(answer.isError, true, `${name} ${JSON.stringify(args)}: ${JSON.stringify(answer)}`);
      assert.match(JSON.stringify(answer.content), message, `${name} ${JSON.stringify(args)}`);
    }
    assert.equal((await rest<{ credits: number }>('GET', '/api/v1/account')).body.credits, before);
  });

  it('insufficient credits: a tool error with credits_required and credits_remaining, nothing charged', async () => {
    const poor = await editorUser(service, { credits: 3, scopes: ALL_SCOPES });
    const { client: broke } = await connect(poor.token);
    try {
      const answer = (await broke.callTool({
        name: 'media_forge_generate',
        arguments: { model: 'imgmodel-2', prompt: 'a cat' },
      })) as CallToolResult;
      assert.equal(answer.isError, true, JSON.stringify(answer));
      const text = JSON.stringify(answer.content);
      assert.match(text, /credits_required\W+50/);
      assert.match(text, /credits_remaining\W+3/);
      const project = await broke.callTool({
        name: 'video_editor_create_project',
        arguments: { name: 'Poor' },
      });
      const id = (project.structuredContent as { project: { id: string } }).project.id;
      const turn = (await broke.callTool({
        name: 'video_editor_instruct',
        arguments: { project_id: id, instruction: 'a 2-scene video about a lighthouse at dawn' },
      })) as CallToolResult;
      assert.equal(turn.isError, true, JSON.stringify(turn));
      assert.match(JSON.stringify(turn.content), /credits_required\W+5/);
      assert.equal(
        (await rest<{ credits: number }>('GET', '/api/v1/account', undefined, poor.token)).body.credits,
        3,
      );
    } finally {
      await broke.close();
    }
  });

  describe('HTTP: auth, Origin and sessions', () => {
    const initialize = initializeMessage('raw');
    const listTools = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
    const post = (body: unknown, headers: Record<string, string>) => postRaw(service.url, body, headers);
    const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

    it('GET opens the session event stream at once (a whole head, chunked), and DELETE ends it', async () => {
      const { token } = await editorUser(service, { credits: 10, scopes: ['models:read'] });
      const session = await rawSession(service.url, token);
      const headers = { ...bearer(token), 'mcp-session-id': session };
      const opened = await Promise.race([
        fetch(`${service.url}/api/mcp`, { headers: { ...headers, accept: 'text/event-stream' } }),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no head within 5 s')), 5000)),
      ]);
      assert.equal(opened.status, 200);
      assert.match(opened.headers.get('content-type') ?? '', /^text\/event-stream/);
      assert.equal(opened.headers.get('transfer-encoding'), 'chunked');
      const reader = opened.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      assert.match(first, /^: /, 'an SSE comment line opens it');
      const ended = await fetch(`${service.url}/api/mcp`, { method: 'DELETE', headers });
      assert.equal(ended.status, 200);
      for (;;) if ((await reader.read()).done) break; // the stream ends with its session
    });

    it('no key and a bad key: 401 with WWW-Authenticate resource_metadata; the metadata answers', async () => {
      const challenge = `Bearer resource_metadata="${service.url}/.well-known/oauth-protected-resource/api/mcp"`;
      for (const headers of [{}, bearer('mf_live_not_a_real_key_0000000000000000'), bearer('garbage')]) {
        const answer = await post(initialize, headers);
        assert.equal(answer.status, 401, JSON.stringify(headers));
        assert.equal(answer.headers.get('www-authenticate'), challenge);
        await answer.text();
      }
      const get = await fetch(`${service.url}/api/mcp`, { headers: { accept: 'text/event-stream' } });
      assert.equal(get.status, 401);
      assert.equal(get.headers.get('www-authenticate'), challenge);
      await get.text();

      const metadata = await fetch(`${service.url}/.well-known/oauth-protected-resource/api/mcp`);
      assert.equal(metadata.status, 200);
      assert.match(String(metadata.headers.get('content-type')), /application\/json/);
      const body = (await metadata.json()) as { resource: string };
      assert.equal(body.resource, `${service.url}/api/mcp`);
    });

    it('a foreign Origin is 403; the service own origin is served', async () => {
      const foreign = await post(initialize, { ...bearer(token), origin: 'http://evil.example' });
      assert.equal(foreign.status, 403);
      assert.equal(foreign.headers.get('mcp-session-id'), null);
      await foreign.text();
      const own = await post(initialize, { ...bearer(token), origin: new URL(service.url).origin });
      assert.equal(own.status, 200);
      await own.text();
    });

    it('sessions: missing header 400, unknown 404, another key 404, DELETE 200 then 404', async () => {
      const session = await rawSession(service.url, token);
      const listed = await post(listTools, { ...bearer(token), 'mcp-session-id': session });
      assert.equal(listed.status, 200);
      assert.match(await listed.text(), /media_forge_generate/);

      const missing = await post(listTools, bearer(token));
      assert.equal(missing.status, 400);
      await missing.text();
      const unknown = await post(listTools, {
        ...bearer(token),
        'mcp-session-id': 'mcps_unknown_session_id',
      });
      assert.equal(unknown.status, 404);
      await unknown.text();
      const other = await editorUser(service, { credits: 0, scopes: ['models:read'] });
      const foreign = await post(listTools, { ...bearer(other.token), 'mcp-session-id': session });
      assert.equal(foreign.status, 404, "another key's session");
      await foreign.text();
      const sibling = await adminClient(service).createKey(userId, ['models:read']);
      const sameUser = await post(listTools, { ...bearer(sibling.apiKey), 'mcp-session-id': session });
      assert.equal(sameUser.status, 404, "another key's session, even of the same user");
      await sameUser.text();
      const ping = await post(
        { jsonrpc: '2.0', id: 3, method: 'ping' },
        { ...bearer(token), 'mcp-session-id': session },
      );
      assert.equal(ping.status, 200);
      assert.deepEqual(messages(await ping.text())[0]?.result, {});

      const end = () =>
        fetch(`${service.url}/api/mcp`, {
          method: 'DELETE',
          headers: { ...bearer(token), 'mcp-session-id': session },
        });
      const deleted = await end();
      assert.equal(deleted.status, 200);
      await deleted.text();
      const after = await post(listTools, { ...bearer(token), 'mcp-session-id': session });
      assert.equal(after.status, 404);
      await after.text();
      const again = await end();
      assert.equal(again.status, 404);
      await again.text();
    });

    /** The JSON-RPC messages of an answer: a JSON body, or the `data:` lines of an event stream. */
    function messages(text: string): { id?: unknown; result?: Record<string, unknown>; error?: unknown }[] {
      const trimmed = text.trim();
      if (trimmed.startsWith('{') || trimmed.startsWith('[')) return [JSON.parse(trimmed)].flat();
      return trimmed
        .split('\n')
        .filter((line) => line.startsWith('data:') && line.slice(5).trim())
        .map((line) => JSON.parse(line.slice(5)));
    }

    it('initialize negotiates 2025-06-18 and 2025-11-25', async () => {
      for (const version of ['2025-06-18', '2025-11-25']) {
        const answer = await post(
          { ...initialize, params: { ...initialize.params, protocolVersion: version } },
          bearer(token),
        );
        assert.equal(answer.status, 200);
        const [message] = messages(await answer.text());
        assert.equal(message?.result?.protocolVersion, version, JSON.stringify(message));
        assert.match(String(message?.result?.instructions), /job_wait/);
      }
    });

    it('notifications/cancelled ends a running job_wait on the server', async () => {
      const submitted = await rest<{ job_id: string }>('POST', '/api/v1/image/nano-banana/generate', {
        prompt: `raw ${SLOW}`,
      });
      assert.equal(submitted.status, 202);
      const session = await rawSession(service.url, token);
      const headers = { ...bearer(token), 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
      const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
      assert.equal(initialized.status, 202);
      await initialized.text();
      const call = {
        jsonrpc: '2.0',
        id: 77,
        method: 'tools/call',
        params: { name: 'job_wait', arguments: { job_id: submitted.body.job_id, timeout_seconds: 60 } },
      };
      const waiting = post(call, headers).then(async (answer) => ({
        status: answer.status,
        text: await answer.text(),
      }));
      await new Promise((resolve) => setTimeout(resolve, 800)); // the call reaches the server and waits (no event shows it: no progress token)
      const cancelledAt = Date.now();
      const cancel = await post(
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 77, reason: 'test' } },
        headers,
      );
      assert.equal(cancel.status, 202);
      await cancel.text();
      const outcome = await Promise.race([
        waiting,
        new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), 5000)),
      ]);
      assert.notEqual(outcome, 'still waiting', 'the wait ended after notifications/cancelled');
      const late = Date.now() - cancelledAt;
      assert.ok(late < 2000, `the wait ended ${late} ms after the cancellation`);
      // What came back for the cancelled request (MCP: a receiver SHOULD NOT answer it) is left unasserted.
      const job = await rest<Job>('GET', `/api/v1/jobs/${submitted.body.job_id}`);
      assert.equal(job.body.status, 'processing', 'the job follows REST rules: it goes on');
      await rest('DELETE', `/api/v1/jobs/${submitted.body.job_id}`);
    });

    it('a key revoked mid-session: its session answers 401', async () => {
      const key = await adminClient(service).createKey(userId, ['models:read']);
      const session = await rawSession(service.url, key.apiKey);
      const revoked = await adminClient(service).call('DELETE', `/keys/${key.id}`);
      assert.equal(revoked.status, 200);
      const answer = await post(listTools, { ...bearer(key.apiKey), 'mcp-session-id': session });
      assert.equal(answer.status, 401);
      assert.match(String(answer.headers.get('www-authenticate')), /resource_metadata=/);
      await answer.text();
    });

    it('the SDK client ends its session with DELETE (terminateSession)', async () => {
      const own = await connect(token);
      const id = own.transport.sessionId!;
      await own.transport.terminateSession();
      await own.client.close();
      const after = await post(listTools, { ...bearer(token), 'mcp-session-id': id });
      assert.equal(after.status, 404);
      await after.text();
    });
  });

  it('cancellation: an aborted job_wait rejects promptly and the session keeps serving', async () => {
    const submitted = await tool('media_forge_generate', {
      model: 'vidmodel-2.0-fast',
      prompt: `waiting ${SLOW}`,
      duration_seconds: 4,
      resolution: '480p',
    });
    const jobId = String(submitted.structuredContent.job_id);
    const controller = new AbortController();
    let abortedAt = 0;
    const timer = setTimeout(() => {
      abortedAt = Date.now();
      controller.abort(new Error('user gave up'));
    }, 1000);
    const progress: Progress[] = [];
    called.add('job_wait');
    await assert.rejects(
      client.callTool({ name: 'job_wait', arguments: { job_id: jobId, timeout_seconds: 60 } }, undefined, {
        signal: controller.signal,
        onprogress: (p) => progress.push(p),
      }),
      /gave up|abort/i,
    );
    clearTimeout(timer);
    const late = Date.now() - abortedAt;
    assert.ok(abortedAt > 0 && late < 500, `rejected ${late} ms after the abort`);
    assert.ok(progress.length >= 1, 'progress came while it waited');

    const status = await tool('job_status', { job_id: jobId });
    assert.equal(status.structuredContent.status, 'processing', 'the wait stopped, the job goes on');
    // A second wait on the same session times out with the job still processing, reporting progress on the way.
    const more: Progress[] = [];
    const waited = await tool(
      'job_wait',
      { job_id: jobId, timeout_seconds: 2 },
      { onprogress: (p) => more.push(p) },
    );
    assert.equal(waited.structuredContent.status, 'processing');
    assert.ok(more.length >= 2, `several progress notifications: ${JSON.stringify(more)}`);
    increasing(more, 'job_wait (time-out)');
    assert.ok(more.every((p) => p.total === undefined || p.progress <= p.total));
    const cancelled = await tool('job_cancel', { job_id: jobId });
    assert.equal(cancelled.structuredContent.status, 'cancelled');
  });

  it('cancelling video_editor_instruct: the client stops waiting at once; the turn goes on as REST (the clip lands)', async () => {
    const created = await tool('video_editor_create_project', { name: 'Slow turn' });
    const id = (created.structuredContent as { project: { id: string } }).project.id;
    // A storyboard the builtin director follows (docs/editor.md, The builtin director), whose scene renders slowly.
    await tool('video_editor_update_context', {
      project_id: id,
      context_md:
        '## Storyboard: slow\n\n1. A slow harbour scene [sandbox:delay=4000]\n2. A quick closing scene\n',
    });
    const controller = new AbortController();
    let abortedAt = 0;
    const timer = setTimeout(() => {
      abortedAt = Date.now();
      controller.abort(new Error('user gave up'));
    }, 1000);
    const progress: Progress[] = [];
    await assert.rejects(
      client.callTool(
        { name: 'video_editor_instruct', arguments: { project_id: id, instruction: 'continue' } },
        undefined,
        {
          signal: controller.signal,
          onprogress: (p) => progress.push(p),
        },
      ),
      /gave up|abort/i,
    );
    clearTimeout(timer);
    const late = Date.now() - abortedAt;
    assert.ok(abortedAt > 0 && late < 500, `rejected ${late} ms after the abort`);
    // The session serves on while the turn runs.
    const account = await tool('get_account');
    assert.equal(typeof account.structuredContent.credits, 'number');
    // The turn completes on the server: its clip appears.
    let clips: { track: string }[] = [];
    const since = Date.now();
    while (Date.now() - since < 20_000) {
      const state = await tool('video_editor_get_state', { project_id: id });
      clips = (state.structuredContent as unknown as ProjectState).clips;
      if (clips.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    assert.equal(clips.length, 1, "the cancelled call's turn still placed its scene");
    assert.equal(clips[0]!.track, 'video');
  });

  it("another user's job and project are not found (tool errors), and stay unchanged", async () => {
    const owner = await tool('media_forge_generate', { model: 'imgmodel-2', prompt: `mine ${SLOW}` });
    const jobId = String(owner.structuredContent.job_id);
    const stranger = await editorUser(service, { credits: 1000, scopes: ALL_SCOPES });
    const { client: other } = await connect(stranger.token);
    try {
      for (const name of ['job_status', 'job_wait', 'job_cancel']) {
        const answer = (await other.callTool({
          name,
          arguments: { job_id: jobId, ...(name === 'job_wait' ? { timeout_seconds: 1 } : {}) },
        })) as CallToolResult;
        assert.equal(answer.isError, true, `${name}: ${JSON.stringify(answer)}`);
      }
      const state = (await other.callTool({
        name: 'video_editor_get_state',
        arguments: { project_id: projectId },
      })) as CallToolResult;
      assert.equal(state.isError, true, JSON.stringify(state));
      const instruct = (await other.callTool({
        name: 'video_editor_instruct',
        arguments: { project_id: projectId, instruction: 'continue' },
      })) as CallToolResult;
      assert.equal(instruct.isError, true, JSON.stringify(instruct));
      const listed = await other.callTool({ name: 'video_editor_list_projects', arguments: {} });
      assert.deepEqual((listed.structuredContent as { projects: unknown[] }).projects, []);
      assert.equal(
        (await rest<{ credits: number }>('GET', '/api/v1/account', undefined, stranger.token)).body.credits,
        1000,
      );
    } finally {
      await other.close();
    }
    assert.equal((await rest<Job>('GET', `/api/v1/jobs/${jobId}`)).body.status, 'processing');
    await rest('DELETE', `/api/v1/jobs/${jobId}`);
  });

  it('MCP_SESSION_IDLE_MS: a session in use lives on; one left idle is dropped (404)', async () => {
    const idle = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: 'mcp_e2e_idle',
      MCP_SESSION_IDLE_MS: '3000',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
    try {
      const key = (await editorUser(idle, { credits: 10, scopes: ['models:read'] })).token;
      const { post, session } = await rawClient(idle.url, key, 'idle');
      const list = async () => {
        const answer = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, session);
        await answer.text();
        return answer.status;
      };
      // Used every 500 ms for 5 s (longer than the idle time): it stays.
      const since = Date.now();
      while (Date.now() < since + 5000) {
        assert.equal(
          await list(),
          200,
          `a session in use is not idle (${Date.now() - since} ms after initialize)`,
        );
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      // Left alone for twice the idle time: gone.
      await new Promise((resolve) => setTimeout(resolve, 6000)); // a wait for nothing: twice the idle time without a request
      assert.equal(await list(), 404, 'an idle session is dropped');
    } finally {
      await idle.stop();
    }
  });

  it('rate limits: each JSON-RPC request counts once; then 429 with Retry-After', async () => {
    const limited = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: 'mcp_e2e_rate',
      RATE_LIMIT_PER_MINUTE: '4',
    });
    try {
      const key = (await editorUser(limited, { credits: 10, scopes: ['models:read'] })).token;
      const { post, session } = await rawClient(limited.url, key, 'rate');
      const statuses: number[] = [];
      for (let id = 2; id <= 5; id++) {
        const answer = await post(
          { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_account', arguments: {} } },
          session,
        );
        await answer.text();
        statuses.push(answer.status);
        if (answer.status === 429) assert.ok(Number(answer.headers.get('retry-after')) > 0, 'Retry-After');
      }
      assert.deepEqual(statuses, [200, 200, 200, 429]);
    } finally {
      await limited.stop();
    }
  });

  it(
    'cluster: a session made on one node serves on another, and a DELETE on one ends it on both',
    { skip: skipWithoutNats() },
    async () => {
      const nats = await startNats();
      const nodes: RunningService[] = [];
      try {
        // One at a time: the first creates the streams the others join.
        for (const name of ['mcp-a', 'mcp-b']) {
          nodes.push(
            await startService({
              MONGO_URL: mongo.uri,
              MONGO_DB: 'mcp_e2e_cluster',
              NATS_URL: nats.url,
              NODE_ID: name,
              MEDIA_STORE: 'gridfs',
              SANDBOX_IMAGE_MS: '200',
              PROVIDER_POLL_INTERVAL_MS: '200',
              RATE_LIMIT_PER_MINUTE: '100000',
            }),
          );
        }
        const [a, b] = nodes as [RunningService, RunningService];
        const key = (await editorUser(a, { credits: 1000, scopes: ALL_SCOPES })).token;
        const onA = new StreamableHTTPClientTransport(new URL(`${a.url}/api/mcp`), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        });
        const clientA = new Client({ name: 'cluster-a', version: '1' });
        await clientA.connect(onA);
        const session = onA.sessionId!;
        const submitted = await clientA.callTool({
          name: 'media_forge_generate',
          arguments: { model: 'imgmodel-2', prompt: 'a lighthouse' },
        });
        const jobId = String((submitted.structuredContent as { job_id: string }).job_id);

        const post = (node: RunningService, body: unknown) =>
          fetch(`${node.url}/api/mcp`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              authorization: `Bearer ${key}`,
              'mcp-session-id': session,
              'mcp-protocol-version': '2025-06-18',
            },
            body: JSON.stringify(body),
          });
        const waited = await post(b, {
          jsonrpc: '2.0',
          id: 9,
          method: 'tools/call',
          params: { name: 'job_wait', arguments: { job_id: jobId, timeout_seconds: 30 } },
        });
        assert.equal(waited.status, 200, 'the session is known on the other node');
        assert.match(await waited.text(), /"status":"completed"/);

        const deleted = await fetch(`${b.url}/api/mcp`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${key}`, 'mcp-session-id': session },
        });
        assert.equal(deleted.status, 200);
        await deleted.text();
        // Node A may have the session cached for a few seconds: poll until it answers 404 (at most 10 s).
        const since = Date.now();
        let status = 0;
        while (Date.now() - since < 10_000) {
          const answer = await post(a, { jsonrpc: '2.0', id: 10, method: 'tools/list', params: {} });
          await answer.text();
          status = answer.status;
          if (status === 404) break;
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
        assert.equal(status, 404, 'the session ended on the node it was made on');
        console.log(`# cluster: node A answered 404 ${Date.now() - since} ms after the DELETE on node B`);
        await clientA.close().catch(() => undefined);

        // A notifications/cancelled that reaches another node than the call still stops the wait.
        const slow = await call<{ job_id: string }>(a.url, 'POST', '/api/v1/image/nano-banana/generate', {
          token: key,
          body: { prompt: `slow ${SLOW}` },
        });
        assert.equal(slow.status, 202);
        const other = new StreamableHTTPClientTransport(new URL(`${a.url}/api/mcp`), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        });
        const otherClient = new Client({ name: 'cluster-cancel', version: '1' });
        await otherClient.connect(other);
        const headers = {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${key}`,
          'mcp-session-id': other.sessionId!,
          'mcp-protocol-version': '2025-06-18',
        };
        const waiting = fetch(`${a.url}/api/mcp`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 'wait-1',
            method: 'tools/call',
            params: { name: 'job_wait', arguments: { job_id: slow.body.job_id, timeout_seconds: 8 } },
          }),
        }).then((answer) => answer.text());
        await new Promise((resolve) => setTimeout(resolve, 800)); // the call reaches the server and waits (no event shows it: no progress token)
        const cancelledAt = Date.now();
        const cancel = await fetch(`${b.url}/api/mcp`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: 'wait-1', reason: 'cluster test' },
          }),
        });
        assert.equal(cancel.status, 202);
        await cancel.text();
        await waiting;
        const late = Date.now() - cancelledAt;
        await otherClient.close().catch(() => undefined);
        await call(a.url, 'DELETE', `/api/v1/jobs/${slow.body.job_id}`, { token: key });
        assert.ok(late < 2000, `the wait on node A ended ${late} ms after a cancellation sent to node B`);
      } finally {
        await Promise.all(nodes.map((node) => node.stop()));
        await nats.stop();
      }
    },
  );

  it('MCP requests are audited like REST ones (admin audit, by key)', async () => {
    let entries: { path: string; method: string; status: number; key_id: string }[] = [];
    for (let i = 0; i < 20 && !entries.some((e) => e.path === '/api/mcp'); i++) {
      const audit = await adminClient(service).call<{ entries: typeof entries }>(
        'GET',
        `/audit?kind=request&key_id=${keyId}&limit=100`,
      );
      assert.equal(audit.status, 200);
      entries = audit.body.entries;
      if (!entries.some((e) => e.path === '/api/mcp'))
        await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const mcp = entries.filter((e) => e.path === '/api/mcp');
    assert.ok(mcp.length > 0, 'requests to /api/mcp are in the audit log');
    assert.ok(mcp.every((e) => e.key_id === keyId));
    assert.ok(mcp.some((e) => e.method === 'POST' && e.status === 200));
  });

  it('SIGTERM with an MCP client connected (its GET event stream open): the node leaves promptly', async () => {
    const node = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: 'mcp_e2e_stop',
      SHUTDOWN_GRACE_MS: '8000',
    });
    let stopped = false;
    try {
      const key = (await editorUser(node, { credits: 10, scopes: ['models:read'] })).token;
      const t = new StreamableHTTPClientTransport(new URL(`${node.url}/api/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      });
      const c = new Client({ name: 'stays-connected', version: '1' });
      c.onerror = () => undefined; // the stream ends when the node leaves
      await c.connect(t);
      await c.callTool({ name: 'get_account', arguments: {} });
      await new Promise((resolve) => setTimeout(resolve, 300)); // the client's GET stream is open by now
      const since = Date.now();
      const exit = await node.stop();
      stopped = true;
      const took = Date.now() - since;
      await c.close().catch(() => undefined);
      assert.equal(exit.code, 0, JSON.stringify(exit));
      assert.ok(
        took < 4000,
        `SIGTERM took ${took} ms with an idle MCP client connected (SHUTDOWN_GRACE_MS 8000)`,
      );
    } finally {
      if (!stopped) await node.stop();
    }
  });

  it('every tool was called', () => {
    assert.deepEqual([...called].sort(), TOOLS);
  });
});
