// The schemas of the real MCP tools as a client reads them from `tools/list` (the SDK's Client against the
// endpoint in process): a field with a default is never required, no schema is left untyped (the Inspector's
// `--strict` portability check), and a call that leaves the defaulted fields out gets their defaults.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Progress, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { CreateProjectRequest } from '../../schemas/editor.ts';
import { DEFAULT_PROVIDER_ENDPOINTS } from '../../schemas/models-catalog.ts';
import type { KeyPrincipal } from '../../src/platform/http/principal.ts';
import { createMcpEndpoint } from '../../src/mcp/endpoint.ts';
import { createMcpTools, type McpToolDeps } from '../../src/mcp/tools.ts';
import type { McpSessionRecord } from '../../src/mcp/mcp-sessions.ts';
import { buildModelsCatalog } from '../../src/jobs/models-catalog.ts';

const BASE = 'http://127.0.0.1:9';
const NOW = '2026-11-24T12:00:00.000Z';
const principal: KeyPrincipal = {
  userId: 'usr_1',
  keyId: 'key_1',
  scopes: ['models:read', 'video:write', 'image:write', 'video-editor:read', 'video-editor:write'],
};

type Schema = Record<string, unknown>;

/** JSON Schema keywords that hold one sub-schema, a map of them, or a list of them. */
const ONE = ['items', 'not', 'additionalProperties', 'contains', 'propertyNames', 'if', 'then', 'else'];
const MAP = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
/** Keywords that constrain a value: a schema with none of them accepts anything (the Inspector warns). */
const CONSTRAINING = new Set([
  'type',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
  '$ref',
  'properties',
  'patternProperties',
  'additionalProperties',
  'items',
  'required',
]);

/** Every sub-schema of `schema` (itself included), with its path. */
function* subschemas(schema: unknown, path: string): Generator<[string, unknown]> {
  yield [path, schema];
  if (typeof schema !== 'object' || schema === null) return;
  const node = schema as Schema;
  for (const key of ONE) {
    if (typeof node[key] === 'object' && node[key] !== null) yield* subschemas(node[key], `${path}.${key}`);
  }
  for (const key of MAP) {
    const map = node[key] as Record<string, unknown> | undefined;
    for (const [name, sub] of Object.entries(map ?? {})) yield* subschemas(sub, `${path}.${key}[${name}]`);
  }
  for (const key of LIST) {
    const list = node[key] as unknown[] | undefined;
    for (const [index, sub] of (list ?? []).entries()) yield* subschemas(sub, `${path}.${key}[${index}]`);
  }
}

/** What a client would trip over in one tool's schemas. */
function schemaProblems(tool: Tool): string[] {
  const problems: string[] = [];
  for (const [kind, schema] of [
    ['inputSchema', tool.inputSchema],
    ['outputSchema', tool.outputSchema],
  ] as const) {
    for (const [path, node] of subschemas(schema, `${tool.name}.${kind}`)) {
      if (typeof node !== 'object' || node === null) {
        problems.push(`${path}: a bare ${String(node)} where a schema object belongs`);
        continue;
      }
      const object = node as Schema;
      if (!Object.keys(object).some((key) => CONSTRAINING.has(key)))
        problems.push(`${path}: untyped schema ${JSON.stringify(object)}`);
      const pattern = object.patternProperties as Record<string, Schema> | undefined;
      for (const [name, sub] of Object.entries(pattern ?? {})) {
        if (Object.keys(sub).length === 0) problems.push(`${path}.patternProperties[${name}]: empty`);
      }
      if (kind !== 'inputSchema') continue;
      const properties = (object.properties ?? {}) as Record<string, Schema>;
      for (const name of (object.required ?? []) as string[]) {
        if (properties[name] && 'default' in properties[name])
          problems.push(
            `${path}: "${name}" has a default (${JSON.stringify(properties[name].default)}) and is required`,
          );
      }
    }
  }
  return problems;
}

/** Services that record what the tools hand them and answer just enough. */
function recordingDeps() {
  const calls: Record<string, unknown[]> = {};
  const record = (name: string, args: unknown[]) => void (calls[name] = args);
  const project = {
    id: 'vp_1',
    user_id: 'usr_1',
    name: 'Untitled',
    description: '',
    aspect_ratio: '9:16',
    context_md: '',
    revision: 1,
    videos: [{ id: 'vv_1', name: 'Video 1', aspect_ratio: '9:16', created_at: new Date(NOW) }],
    created_at: new Date(NOW),
    updated_at: new Date(NOW),
  };
  const projectView = {
    id: 'vp_1',
    name: 'Untitled',
    description: '',
    aspect_ratio: '9:16',
    context_md: '',
    revision: 1,
    created_at: NOW,
    updated_at: NOW,
  };
  const reject = () => Promise.reject(new Error('not expected'));
  const deps: McpToolDeps = {
    models: buildModelsCatalog({ provider: 'sandbox', endpoints: DEFAULT_PROVIDER_ENDPOINTS }),
    jobs: {
      submitVideo: reject,
      submitImage: reject,
      get: async () => ({
        job_id: 'job_1',
        status: 'completed',
        model: 'imgmodel-2',
        type: 'image',
        credits_consumed: 50,
        refunded_credits: 0,
        created_at: NOW,
        completed_at: NOW,
        result: { images: [`${BASE}/media/med_1.png`] },
        error: null,
      }),
      list: async (...args: unknown[]) => {
        record('jobs.list', args);
        return { jobs: [], next_cursor: null };
      },
      cancel: reject,
    },
    users: { get: reject },
    editor: {
      owned: async () => project as never,
      videoOf: () => project.videos[0] as never,
      createProject: async (...args: unknown[]) => {
        record('editor.createProject', args);
        const body = args[1] as CreateProjectRequest;
        return { project: { ...projectView, aspect_ratio: body.aspect_ratio } };
      },
      listProjects: reject,
      state: reject,
      createVideo: reject,
      importUrl: reject,
      patchProject: reject,
    },
    turns: {
      instruct: async (...args: unknown[]) => {
        record('turns.instruct', args);
        return {
          assistant_text: 'Noted.',
          assets_created: [],
          clips_created: [],
          context_appended: false,
          aspect_ratio_changed: null,
          media_gen_done: false,
          agent_events: [],
        };
      },
    },
    exports: { export: reject },
    acceptsUrl: (url) => url.startsWith('https://'),
    clock: { now: () => Date.parse(NOW) },
    jobWaitPollMs: 1,
  };
  return { deps, calls };
}

describe('the MCP tools as tools/list shows them', () => {
  const { deps, calls } = recordingDeps();
  const sessions = new Map<string, McpSessionRecord>();
  const endpoint = createMcpEndpoint({
    tools: createMcpTools(deps),
    sessions: {
      create: async (session) => void sessions.set(session.id, session),
      get: async (id) => sessions.get(id) ?? null,
      touch: async () => undefined,
      delete: async (id) => sessions.delete(id),
      deleteIdle: async () => 0,
    },
    clock: { now: () => Date.now() },
    idleMs: 60_000,
    origin: BASE,
    instructions: 'test',
    version: '0.1.0',
    log: pino({ level: 'silent' }),
    bus: { publish: async () => undefined, subscribe: () => () => undefined },
  });
  const client = new Client({ name: 'schema-check', version: '1.0.0' });
  let tools: Tool[];

  before(async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/api/mcp`), {
      fetch: async (input, init) => {
        const request = new Request(input, init);
        const text = request.method === 'POST' ? await request.clone().text() : '';
        return endpoint.handle({ request, principal, body: text ? JSON.parse(text) : undefined });
      },
    });
    await client.connect(transport);
    tools = (await client.listTools()).tools;
  });
  after(async () => {
    await client.close();
    endpoint.close();
  });

  it('lists all 17 tools, none with a required field that has a default or an untyped schema', () => {
    assert.equal(tools.length, 17);
    assert.deepEqual(tools.flatMap(schemaProblems), []);
  });

  it('the check finds the problems it looks for (a required default, an empty patternProperties)', () => {
    const bad = {
      name: 'bad',
      inputSchema: {
        type: 'object',
        required: ['limit'],
        properties: { limit: { type: 'integer', default: 20 } },
      },
      outputSchema: {
        type: 'object',
        properties: { metadata: { type: 'object', patternProperties: { '^.*$': {} } } },
      },
    } as unknown as Tool;
    assert.deepEqual(schemaProblems(bad), [
      'bad.inputSchema: "limit" has a default (20) and is required',
      'bad.outputSchema.properties[metadata].patternProperties[^.*$]: empty',
      'bad.outputSchema.properties[metadata].patternProperties[^.*$]: untyped schema {}',
    ]);
  });

  it('offers the defaulted fields as optional, with their defaults', () => {
    const field = (tool: string, name: string) => {
      const schema = tools.find((one) => one.name === tool)!.inputSchema;
      return {
        required: (schema.required ?? []).includes(name),
        default: (schema.properties?.[name] as Schema | undefined)?.default,
      };
    };
    assert.deepEqual(field('job_wait', 'timeout_seconds'), { required: false, default: 300 });
    assert.deepEqual(field('list_jobs', 'limit'), { required: false, default: 20 });
    assert.deepEqual(field('video_editor_create_project', 'aspect_ratio'), {
      required: false,
      default: '9:16',
    });
    assert.deepEqual(field('video_editor_instruct', 'image_urls'), { required: false, default: [] });
    assert.deepEqual(tools.find((one) => one.name === 'job_wait')!.inputSchema.required, ['job_id']);
    assert.deepEqual(tools.find((one) => one.name === 'video_editor_instruct')!.inputSchema.required, [
      'project_id',
    ]);
  });

  it('job_wait without timeout_seconds waits up to 300 s (its progress total)', async () => {
    const progress: Progress[] = [];
    const result = await client.callTool({ name: 'job_wait', arguments: { job_id: 'job_1' } }, undefined, {
      onprogress: (one) => progress.push(one),
    });
    assert.notEqual(result.isError, true, JSON.stringify(result.content));
    assert.equal((result.structuredContent as { status: string }).status, 'completed');
    assert.deepEqual(
      progress.map((one) => one.total),
      [300],
    );
  });

  it('list_jobs without limit pages by 20', async () => {
    const result = await client.callTool({ name: 'list_jobs', arguments: {} });
    assert.notEqual(result.isError, true, JSON.stringify(result.content));
    assert.deepEqual(calls['jobs.list'], ['usr_1', { limit: 20 }]);
  });

  it('video_editor_create_project without aspect_ratio creates a 9:16 project', async () => {
    const result = await client.callTool({
      name: 'video_editor_create_project',
      arguments: { name: 'Mine' },
    });
    assert.notEqual(result.isError, true, JSON.stringify(result.content));
    assert.deepEqual(calls['editor.createProject'], ['usr_1', { name: 'Mine', aspect_ratio: '9:16' }]);
  });

  it('video_editor_instruct without image_urls sends none', async () => {
    const result = await client.callTool({
      name: 'video_editor_instruct',
      arguments: { project_id: 'vp_1', instruction: 'continue' },
    });
    assert.notEqual(result.isError, true, JSON.stringify(result.content));
    const [, , body] = calls['turns.instruct']!;
    assert.deepEqual(body, { instruction: 'continue', image_urls: [] });
  });

  it('still refuses a defaulted field out of range, with the REST message', async () => {
    const wait = await client.callTool({
      name: 'job_wait',
      arguments: { job_id: 'job_1', timeout_seconds: 0 },
    });
    assert.deepEqual(wait.content, [
      { type: 'text', text: 'timeout_seconds must be an integer from 1 to 600' },
    ]);
    const list = await client.callTool({ name: 'list_jobs', arguments: { limit: 101 } });
    assert.deepEqual(list.content, [{ type: 'text', text: 'limit must be 1-100' }]);
    const project = await client.callTool({
      name: 'video_editor_create_project',
      arguments: { aspect_ratio: '2:1' },
    });
    assert.deepEqual(project.content, [
      { type: 'text', text: 'aspect_ratio must be one of 9:16, 1:1, 4:5, 16:9, 4:3' },
    ]);
  });
});
