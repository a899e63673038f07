import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createChecker } from '../../schemas/validate.ts';
import type { JobView } from '../../schemas/jobs.ts';
import { AppError } from '../../src/platform/core/errors.ts';
import { DEFAULT_PROVIDER_ENDPOINTS } from '../../schemas/models-catalog.ts';
import type { KeyPrincipal } from '../../src/platform/http/principal.ts';
import type { Scope } from '../../schemas/scopes.ts';
import { createManualClock } from '../../src/platform/core/clock.ts';
import type { ProjectEvent } from '../../actors/ports/event-history.ts';
import { buildModelsCatalog } from '../../src/jobs/models-catalog.ts';
import { ToolError, type McpTool, type ToolContext } from '../../src/platform/mcp-tool/tool.ts';
import { createMcpTools, type McpToolDeps } from '../../src/mcp/tools.ts';
import { estimateCost } from '../../src/jobs/mcp-tools.ts';
import { mediaMimeType } from '../../src/platform/mcp-tool/tool-support.ts';

const ALL_SCOPES: Scope[] = [
  'models:read',
  'video:write',
  'image:write',
  'video-editor:read',
  'video-editor:write',
];

/** The scope of each tool: REST's where it mirrors a route (docs/api.md, Scopes; the routes' `auth.scope`). */
const EXPECTED_SCOPES: Record<string, Scope | undefined> = {
  list_models: 'models:read',
  estimate_cost: 'models:read',
  media_forge_generate: undefined, // depends on the model: checked in run
  job_status: undefined,
  job_wait: undefined,
  job_cancel: undefined,
  list_jobs: undefined,
  get_account: undefined,
  video_prompt_guide: undefined,
  video_editor_create_project: 'video-editor:write',
  video_editor_list_projects: 'video-editor:read',
  video_editor_get_state: 'video-editor:read',
  video_editor_instruct: 'video-editor:write',
  video_editor_export: 'video-editor:write',
  video_editor_create_video: 'video-editor:write',
  video_editor_add_asset: 'video-editor:write',
  video_editor_update_context: 'video-editor:write',
};

const job = (fields: Partial<JobView> = {}): JobView => ({
  job_id: 'job_1',
  status: 'processing',
  model: 'VidModel 2.0',
  type: 'video',
  credits_consumed: 1135,
  refunded_credits: 0,
  created_at: '2026-01-01T00:00:00.000Z',
  completed_at: null,
  result: null,
  error: null,
  ...fields,
});

const unused = () => Promise.reject(new Error('not expected'));

function fakeDeps(overrides: Partial<McpToolDeps> = {}) {
  const calls: { name: string; args: unknown[] }[] = [];
  const record =
    <T>(name: string, answer: T) =>
    async (...args: unknown[]) => {
      calls.push({ name, args });
      return answer;
    };
  const submit = {
    job_id: 'job_1',
    status: 'processing' as const,
    model: 'vidmodel-2.0',
    credits_consumed: 1135,
    credits_remaining: 100,
    poll_url: '/api/v1/jobs/job_1',
  };
  const deps: McpToolDeps = {
    models: buildModelsCatalog({ provider: 'sandbox', endpoints: DEFAULT_PROVIDER_ENDPOINTS }),
    jobs: {
      submitVideo: record('submitVideo', submit),
      submitImage: record('submitImage', { ...submit, model: 'imgmodel-2', credits_consumed: 100 }),
      get: record('get', job()),
      list: record('list', { jobs: [], next_cursor: null }),
      cancel: record('cancel', { job_id: 'job_1', status: 'cancelled' as const, refunded_credits: 1135 }),
    },
    users: { get: unused },
    editor: {
      owned: async () => {
        throw new AppError('not_found', 'Project not found');
      },
      videoOf: () => {
        throw new AppError('not_found', 'Video not found');
      },
      createProject: unused,
      listProjects: unused,
      state: unused,
      createVideo: unused,
      importUrl: unused,
      patchProject: unused,
    },
    turns: { instruct: unused },
    exports: { export: unused },
    acceptsUrl: (url) => url.startsWith('https://'),
    clock: createManualClock(),
    jobWaitPollMs: 1,
    ...overrides,
  };
  return { deps, calls };
}

function context(scopes: Scope[] = ALL_SCOPES, signal = new AbortController().signal) {
  const progress: { progress: number; total: number | undefined; message: string | undefined }[] = [];
  const principal: KeyPrincipal = { keyId: 'key_1', userId: 'usr_1', scopes };
  const ctx: ToolContext = {
    principal,
    signal,
    progress: async (value, total, message) => void progress.push({ progress: value, total, message }),
  };
  return { ctx, progress };
}

/** Runs a tool as the server does: the input checked (defaults applied) by the tool's input schema first. */
async function call(tool: McpTool, input: unknown, ctx: ToolContext) {
  const checked = createChecker(tool.input).check(input);
  if (!checked.ok) throw new ToolError(checked.message);
  const result = await tool.run(ctx, checked.value);
  const output = createChecker(tool.output).check(result.structured);
  assert.ok(output.ok, `${tool.name} structured content matches its output schema`);
  return result;
}

const byName = (tools: McpTool[], name: string) => {
  const tool = tools.find((one) => one.name === name);
  assert.ok(tool, name);
  return tool;
};

describe('MCP tools', () => {
  const { deps } = fakeDeps();
  const tools = createMcpTools(deps);

  it('are the 17 tools the MCP server offers, each named once', () => {
    assert.equal(tools.length, 17);
    assert.deepEqual(new Set(tools.map((tool) => tool.name)), new Set(Object.keys(EXPECTED_SCOPES)));
  });

  it('have object input and output schemas that compile, a title and a description', () => {
    for (const tool of tools) {
      assert.equal((tool.input as { type?: string }).type, 'object', `${tool.name} input`);
      assert.equal((tool.output as { type?: string }).type, 'object', `${tool.name} output`);
      assert.ok(tool.title && tool.description.length > 20, tool.name);
      createChecker(tool.input);
      createChecker(tool.output);
    }
  });

  it('need the scope REST needs', () => {
    for (const tool of tools) assert.equal(tool.scope, EXPECTED_SCOPES[tool.name], tool.name);
  });

  it('say which only read', () => {
    const writers = tools.filter((tool) => !tool.readOnly).map((tool) => tool.name);
    assert.deepEqual(writers.sort(), [
      'job_cancel',
      'media_forge_generate',
      'video_editor_add_asset',
      'video_editor_create_project',
      'video_editor_create_video',
      'video_editor_export',
      'video_editor_instruct',
      'video_editor_update_context',
    ]);
  });
});

describe('estimate_cost', () => {
  it('prices each model, duration, resolution and image count as the price list does', () => {
    assert.deepEqual(estimateCost({ model: 'vidmodel-2.0' }), { model: 'vidmodel-2.0', credits: 1135 });
    assert.deepEqual(estimateCost({ model: 'vidmodel-2.0-fast', duration_seconds: 5 }), {
      model: 'vidmodel-2.0-fast',
      credits: 905,
    });
    assert.deepEqual(estimateCost({ model: 'vidmodel-2.0', fast: true }), {
      model: 'vidmodel-2.0-fast',
      credits: 905,
    });
    assert.deepEqual(estimateCost({ model: 'imgmodel-2', num_images: 2 }), {
      model: 'imgmodel-2',
      credits: 100,
    });
    assert.equal(
      estimateCost({ model: 'vidmodel-2.0', resolution: '480p', duration_seconds: 10 }).credits,
      1010,
    );
    assert.equal(estimateCost({ model: 'vidmodel-2.0-fast', resolution: '480p' }).credits, 405);
  });

  it('refuses fields of the other kind of model', () => {
    assert.throws(() => estimateCost({ model: 'imgmodel-2', duration_seconds: 5 }), /video models only/);
    assert.throws(() => estimateCost({ model: 'vidmodel-2.0', num_images: 2 }), /imgmodel-2 only/);
    assert.throws(() => estimateCost({ model: 'vidmodel-2.0-fast', fast: false }), /contradicts/);
  });

  it('checks its input with the REST messages', async () => {
    const tool = byName(createMcpTools(fakeDeps().deps), 'estimate_cost');
    await assert.rejects(call(tool, { model: 'vidmodel-2.0', duration_seconds: 7 }, context().ctx), {
      message: 'duration_seconds must be one of 4, 5, 6, 8, 10, 15',
    });
    const answer = await call(tool, { model: 'imgmodel-2', num_images: 2 }, context().ctx);
    assert.deepEqual(answer.structured, { model: 'imgmodel-2', credits: 100 });
  });
});

describe('media_forge_generate', () => {
  it('checks the model’s scope before anything is charged', async () => {
    const { deps, calls } = fakeDeps();
    const tool = byName(createMcpTools(deps), 'media_forge_generate');
    await assert.rejects(
      call(tool, { model: 'vidmodel-2.0', prompt: 'a cat' }, context(['models:read', 'image:write']).ctx),
      { message: 'Missing required scope: video:write' },
    );
    await assert.rejects(
      call(tool, { model: 'imgmodel-2', prompt: 'a cat' }, context(['models:read', 'video:write']).ctx),
      { message: 'Missing required scope: image:write' },
    );
    assert.equal(calls.length, 0);
  });

  it('submits the REST body of the model, with its defaults', async () => {
    const { deps, calls } = fakeDeps();
    const tool = byName(createMcpTools(deps), 'media_forge_generate');
    const answer = await call(tool, { model: 'vidmodel-2.0-fast', prompt: 'a cat' }, context().ctx);
    assert.equal(answer.structured.job_id, 'job_1');
    assert.match(answer.text, /job_wait/);
    assert.deepEqual(calls[0]!.args[1], {
      prompt: 'a cat',
      fast: true,
      duration_seconds: 5,
      aspect_ratio: '16:9',
      resolution: '720p',
      generate_audio: true,
    });
    await call(tool, { model: 'imgmodel-2', prompt: 'a dog', num_images: 2 }, context().ctx);
    assert.deepEqual(calls[1]!.args[1], {
      prompt: 'a dog',
      image_urls: [],
      num_images: 2,
      aspect_ratio: '1:1',
    });
  });

  it('answers the REST validation messages', async () => {
    const { deps, calls } = fakeDeps();
    const tool = byName(createMcpTools(deps), 'media_forge_generate');
    const { ctx } = context();
    const cases: [Record<string, unknown>, string][] = [
      [
        { model: 'vidmodel-2.0', prompt: 'x', image_url: 'http://example.com/a.png' },
        'image_url must be a https URL',
      ],
      [
        { model: 'vidmodel-2.0-fast', prompt: 'x', image_url: 'https://example.com/a.png' },
        'fast mode supports text-to-video only (no image_url)',
      ],
      [
        { model: 'imgmodel-2', prompt: 'x', aspect_ratio: '21:9' },
        'aspect_ratio must be one of 1:1, 16:9, 9:16, 4:3, 3:4',
      ],
      [
        { model: 'imgmodel-2', prompt: 'x', image_urls: ['http://a/b.png'] },
        'image_urls items must be https URLs',
      ],
      [
        { model: 'imgmodel-2', prompt: 'x', duration_seconds: 5 },
        'duration_seconds is not a field of imgmodel-2',
      ],
      [{ model: 'vidmodel-2.0', prompt: 'x', num_images: 2 }, 'num_images is not a field of vidmodel-2.0'],
      [{ model: 'vidmodel-2.0', prompt: '' }, 'prompt is required (non-empty string)'],
    ];
    for (const [input, message] of cases) await assert.rejects(call(tool, input, ctx), { message });
    assert.equal(calls.length, 0);
  });
});

describe('job_wait', () => {
  it('returns the job once it ends, reporting progress on each check', async () => {
    let reads = 0;
    const { deps } = fakeDeps();
    deps.jobs.get = async () =>
      ++reads < 3 ? job() : job({ status: 'completed', result: { video: 'https://x/media/med_a.mp4' } });
    const { ctx, progress } = context();
    const answer = await call(byName(createMcpTools(deps), 'job_wait'), { job_id: 'job_1' }, ctx);
    assert.equal(answer.structured.status, 'completed');
    assert.deepEqual(answer.links, [
      {
        uri: 'https://x/media/med_a.mp4',
        name: 'job_1 video',
        mimeType: 'video/mp4',
        description: 'Generated video',
      },
    ]);
    assert.ok(progress.length >= 1);
    assert.ok(progress.every((one) => one.total === 300));
  });

  it('returns the processing job at the time-out', async () => {
    const clock = createManualClock();
    const { deps } = fakeDeps({ clock });
    deps.jobs.get = async () => {
      clock.advance(600);
      return job();
    };
    const { ctx, progress } = context();
    const answer = await call(
      byName(createMcpTools(deps), 'job_wait'),
      { job_id: 'job_1', timeout_seconds: 2 },
      ctx,
    );
    assert.equal(answer.structured.status, 'processing');
    assert.match(answer.text, /job_wait again/);
    const values = progress.map((one) => one.progress);
    assert.deepEqual(
      values,
      [...values].sort((a, b) => a - b),
    );
    assert.ok(values.at(-1)! <= 2);
  });

  it('stops waiting when the call is cancelled (the job goes on)', async () => {
    const controller = new AbortController();
    const { deps } = fakeDeps();
    deps.jobs.get = async () => {
      setTimeout(() => controller.abort(), 5);
      return job();
    };
    const { ctx } = context(ALL_SCOPES, controller.signal);
    await assert.rejects(call(byName(createMcpTools(deps), 'job_wait'), { job_id: 'job_1' }, ctx), {
      message: 'cancelled',
    });
  });

  it('checks timeout_seconds', async () => {
    await assert.rejects(
      call(
        byName(createMcpTools(fakeDeps().deps), 'job_wait'),
        { job_id: 'job_1', timeout_seconds: 601 },
        context().ctx,
      ),
      { message: 'timeout_seconds must be an integer from 1 to 600' },
    );
  });
});

describe('editor tools', () => {
  it('answer 404 for another user’s project, as REST', async () => {
    const tools = createMcpTools(fakeDeps().deps);
    for (const name of ['video_editor_instruct', 'video_editor_export', 'video_editor_add_asset']) {
      await assert.rejects(
        call(
          byName(tools, name),
          { project_id: 'vp_abc', url: 'https://a/b.png', instruction: 'x' },
          context().ctx,
        ),
        { message: 'Project not found' },
        name,
      );
    }
  });

  it('instruct reports the turn’s events as progress', async () => {
    const listeners: ((event: unknown) => void)[] = [];
    const project = { id: 'vp_1', videos: [{ id: 'vv_1' }] };
    const emit = (type: string, turnId: string, data: Record<string, unknown> = {}) => {
      const event: ProjectEvent = {
        type,
        seq: 1,
        ts: '',
        project_id: 'vp_1',
        video_id: 'vv_1',
        turn_id: turnId,
        data,
      };
      for (const listener of listeners) listener(event);
    };
    const answer = {
      assistant_text: 'Shall I add music?',
      assets_created: [],
      clips_created: [],
      context_appended: false,
      aspect_ratio_changed: null,
      media_gen_done: false,
      agent_events: [],
    };
    const { deps } = fakeDeps({
      events: {
        subscribe: (topic, onEvent) => {
          assert.equal(topic, 'project.vp_1');
          listeners.push(onEvent as (event: unknown) => void);
          return () => void listeners.splice(listeners.indexOf(onEvent as (event: unknown) => void), 1);
        },
      },
    });
    deps.editor.owned = async () => project as never;
    deps.editor.videoOf = ((_project: unknown, id?: string) => {
      if (id !== undefined && id !== 'vv_1') throw new AppError('not_found', 'Video not found');
      return project.videos[0];
    }) as never;
    deps.turns.instruct = async (_principal, _project, _body, options) => {
      options?.onStarted?.('turn_mine');
      // Another turn with the very same instruction (another client's) is not this call's progress.
      emit('turn.started', 'turn_other', { instruction: 'make a trailer', image_urls: [] });
      emit('tool.started', 'turn_other', { name: 'x' });
      emit('turn.started', 'turn_mine', { instruction: 'make a trailer', image_urls: [] });
      emit('tool.started', 'turn_mine', { name: 'add_clip' });
      emit('turn.completed', 'turn_mine', {});
      emit('turn.completed', 'turn_other', {});
      return answer as never;
    };
    const { ctx, progress } = context();
    const tool = byName(createMcpTools(deps), 'video_editor_instruct');
    await assert.rejects(call(tool, { project_id: 'vp_1', instruction: '  ' }, ctx), {
      message: 'instruction is required (non-empty string) unless image_urls is given',
    });
    await assert.rejects(call(tool, { project_id: 'vp_1', instruction: 'x', video_id: 'vv_9' }, ctx), {
      message: 'Video not found',
    });
    const result = await call(tool, { project_id: 'vp_1', instruction: 'make a trailer' }, ctx);
    assert.equal(result.structured, answer);
    assert.match(result.text, /^Shall I add music\?/);
    assert.deepEqual(
      progress.map((one) => [one.progress, one.message]),
      [
        [0, 'turn requested'],
        [1, 'turn.started'],
        [2, 'tool.started: add_clip'],
        [3, 'turn.completed'],
        [4, 'turn completed'],
      ],
    );
    assert.equal(listeners.length, 0);
  });
});

describe("editor tools and the timeline's second edition", () => {
  const tools = createMcpTools(fakeDeps().deps);
  const properties = (schema: unknown, ...path: string[]) => {
    let at = schema as Record<string, unknown>;
    for (const key of path) at = at[key] as Record<string, unknown>;
    return Object.keys(at.properties as object);
  };

  it("list every clip field in the state's output schema, and quality in the export's input", () => {
    const clip = properties(byName(tools, 'video_editor_get_state').output, 'properties', 'clips', 'items');
    for (const field of [
      'track',
      'asset_id',
      'text',
      'style',
      'position',
      'color',
      'background',
      'transition_in',
      'motion',
      'speed',
      'fade_in_sec',
      'fade_out_sec',
    ])
      assert.ok(clip.includes(field), field);
    const created = properties(
      byName(tools, 'video_editor_instruct').output,
      'properties',
      'clips_created',
      'items',
    );
    assert.ok(
      created.includes('transition_in') && created.includes('text'),
      'instruct answers the same clips',
    );
    const exporting = byName(tools, 'video_editor_export');
    assert.deepEqual(properties(exporting.input), ['project_id', 'video_id', 'fit', 'quality']);
    assert.match(JSON.stringify(exporting.input), /"preview"/);
    assert.match(exporting.description, /preview/);
  });

  it('video_editor_export passes quality on, as the route would', async () => {
    const project = { id: 'vp_1', videos: [{ id: 'vv_1' }] };
    const { deps } = fakeDeps();
    deps.editor.owned = async () => project as never;
    deps.editor.videoOf = (() => project.videos[0]) as never;
    const bodies: unknown[] = [];
    deps.exports.export = async (_user, _project, _video, body) => {
      bodies.push(body);
      return {
        asset_id: 'va_1',
        video_url: 'https://x/media/med_1.mp4',
        duration_sec: 3,
        video_clip_count: 1,
        audio_overlay_count: 0,
      } as never;
    };
    const tool = byName(createMcpTools(deps), 'video_editor_export');
    await call(tool, { project_id: 'vp_1', quality: 'preview', fit: 'fill' }, context().ctx);
    assert.deepEqual(bodies, [{ quality: 'preview', fit: 'fill' }]);
    await assert.rejects(call(tool, { project_id: 'vp_1', quality: 'draft' }, context().ctx), {
      message: 'quality must be one of final, preview',
    });
  });
});

describe('mediaMimeType', () => {
  it('reads the type from a media URL', () => {
    assert.equal(mediaMimeType('https://x/media/med_abc.png'), 'image/png');
    assert.equal(mediaMimeType('https://x/media/med_abc.jpg'), 'image/jpeg');
    assert.equal(mediaMimeType('https://x/media/med_abc.m4a'), 'audio/mp4');
    assert.equal(mediaMimeType('https://x/media/med_abc'), undefined);
  });
});
