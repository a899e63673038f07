// The MCP endpoint (src/mcp/endpoint.ts) driven by the SDK's own Client, its HTTP requests handed to the
// endpoint in process: sessions (ours, shared through the repository), tool checks (scope, input), results
// (structuredContent, text, resource links), tool errors, progress notifications and cancellation.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import Type from 'typebox';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createMcpEndpoint } from '../../src/mcp/endpoint.ts';
import { ToolError, defineTool } from '../../src/platform/mcp-tool/tool.ts';
import { AppError } from '../../src/platform/core/errors.ts';
import type { KeyPrincipal } from '../../src/platform/http/principal.ts';
import type { McpSessionRecord, McpSessionsRepository } from '../../src/mcp/mcp-sessions.ts';
import pino from 'pino';

const BASE = 'http://127.0.0.1:9';
const principal = { userId: 'usr_1', keyId: 'key_1', scopes: ['models:read'] } as unknown as KeyPrincipal;
const other = { userId: 'usr_2', keyId: 'key_2', scopes: ['models:read'] } as unknown as KeyPrincipal;

function memorySessions(): McpSessionsRepository & { all: Map<string, McpSessionRecord> } {
  const all = new Map<string, McpSessionRecord>();
  return {
    all,
    create: async (session) => void all.set(session.id, { ...session }),
    get: async (id) => (all.has(id) ? { ...all.get(id)! } : null),
    touch: async (id, at) => {
      const found = all.get(id);
      if (found && found.last_seen_at < at) found.last_seen_at = at;
    },
    delete: async (id) => all.delete(id),
    deleteIdle: async (before) => {
      let count = 0;
      for (const [id, session] of all) if (session.last_seen_at < before && all.delete(id)) count += 1;
      return count;
    },
  };
}

let cancelled = 0;
const tools = [
  defineTool({
    name: 'echo',
    title: 'Echo',
    description: 'Answers its text',
    input: Type.Object({
      text: Type.String({ minLength: 1, errorMessage: 'text must be a non-empty string' }),
    }),
    output: Type.Object({ text: Type.String() }),
    readOnly: true,
    run: async (_ctx, input) => ({
      structured: { text: input.text },
      text: `echo: ${input.text}`,
      links: [{ uri: `${BASE}/media/med_x.png`, name: 'med_x.png', mimeType: 'image/png' }],
    }),
  }),
  defineTool({
    name: 'needs_scope',
    title: 'Needs a scope',
    description: 'Needs video:write',
    input: Type.Object({}),
    output: Type.Object({}),
    scope: 'video:write',
    readOnly: false,
    run: async () => assert.fail('ran without its scope'),
  }),
  defineTool({
    name: 'refuses',
    title: 'Refuses',
    description: 'Fails the way services do',
    input: Type.Object({ how: Type.String() }),
    output: Type.Object({}),
    readOnly: true,
    run: async (_ctx, input) => {
      if (input.how === 'tool') throw new ToolError('no such job');
      if (input.how === 'app') {
        throw new AppError('insufficient_credits', 'Insufficient credits', {
          credits_required: 1135,
          credits_remaining: 3,
        });
      }
      throw new Error('boom');
    },
  }),
  defineTool({
    name: 'slow',
    title: 'Slow',
    description: 'Reports progress until cancelled',
    input: Type.Object({}),
    output: Type.Object({ steps: Type.Integer() }),
    readOnly: true,
    run: async (ctx) => {
      for (let step = 1; step <= 3; step += 1) await ctx.progress(step, 3, `step ${step}`);
      if (ctx.signal.aborted) return { structured: { steps: 3 }, text: 'done' };
      await new Promise<void>((resolve) => {
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
        setTimeout(resolve, 5000);
      });
      if (ctx.signal.aborted) cancelled += 1;
      return { structured: { steps: 3 }, text: 'done' };
    },
  }),
];

describe('the MCP endpoint', () => {
  const sessions = memorySessions();
  let now = Date.parse('2026-11-24T12:00:00Z');
  const endpoint = createMcpEndpoint({
    tools,
    sessions,
    clock: { now: () => now },
    idleMs: 60_000,
    origin: BASE,
    instructions: 'Use job_wait after media_forge_generate.',
    version: '0.1.0',
    log: pino({ level: 'silent' }),
    bus: { publish: async () => undefined, subscribe: () => () => undefined },
  });
  /** The fetch a client uses: its requests go to the endpoint as `who`. */
  const fetchAs =
    (who: KeyPrincipal) =>
    async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const request = new Request(input, init);
      const text = request.method === 'POST' ? await request.clone().text() : '';
      return endpoint.handle({ request, principal: who, body: text ? JSON.parse(text) : undefined });
    };
  async function connect(who = principal) {
    const client = new Client({ name: 'test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/api/mcp`), { fetch: fetchAs(who) });
    await client.connect(transport);
    return { client, transport };
  }
  let client: Client;
  let transport: StreamableHTTPClientTransport;
  before(async () => ({ client, transport } = await connect()));

  it('opens a session of ours at initialize, with the instructions', async () => {
    assert.match(client.getInstructions() ?? '', /job_wait/);
    assert.match(transport.sessionId ?? '', /^mcps_[\w-]{32}$/);
    const stored = sessions.all.get(transport.sessionId!);
    assert.equal(stored?.key_id, 'key_1');
  });

  it('lists the tools with their JSON Schemas and annotations', async () => {
    const { tools: listed } = await client.listTools();
    assert.deepEqual(
      listed.map((tool) => tool.name),
      ['echo', 'needs_scope', 'refuses', 'slow'],
    );
    const echo = listed[0]!;
    assert.equal(echo.inputSchema.type, 'object');
    assert.deepEqual(echo.inputSchema.required, ['text']);
    assert.equal(echo.outputSchema?.type, 'object');
    assert.equal(echo.annotations?.readOnlyHint, true);
  });

  it('answers structuredContent, a text and media links', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    assert.deepEqual(result.structuredContent, { text: 'hi' });
    assert.deepEqual(result.content, [
      { type: 'text', text: 'echo: hi' },
      { type: 'resource_link', uri: `${BASE}/media/med_x.png`, name: 'med_x.png', mimeType: 'image/png' },
    ]);
  });

  it('turns a missing scope, a bad input and service refusals into tool errors', async () => {
    const scope = await client.callTool({ name: 'needs_scope', arguments: {} });
    assert.deepEqual(scope, {
      isError: true,
      content: [{ type: 'text', text: 'Missing required scope: video:write' }],
    });
    const input = await client.callTool({ name: 'echo', arguments: { text: '' } });
    assert.deepEqual(input.content, [{ type: 'text', text: 'text must be a non-empty string' }]);
    assert.equal(input.isError, true);
    const tool = await client.callTool({ name: 'refuses', arguments: { how: 'tool' } });
    assert.deepEqual(tool.content, [{ type: 'text', text: 'no such job' }]);
    const app = await client.callTool({ name: 'refuses', arguments: { how: 'app' } });
    assert.deepEqual(app.content, [
      { type: 'text', text: 'Insufficient credits {"credits_required":1135,"credits_remaining":3}' },
    ]);
    const crash = await client.callTool({ name: 'refuses', arguments: { how: 'crash' } });
    assert.deepEqual(crash.content, [{ type: 'text', text: 'Internal server error' }]);
    await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), /Unknown tool: nope/);
  });

  it('sends progress notifications to a client that asked for them', async () => {
    const seen: { progress: number; total?: number; message?: string }[] = [];
    const controller = new AbortController();
    const call = client.callTool({ name: 'slow', arguments: {} }, undefined, {
      onprogress: (progress) => {
        seen.push(progress);
        if (seen.length === 3) controller.abort();
      },
      signal: controller.signal,
    });
    await assert.rejects(call);
    assert.deepEqual(
      seen.map((p) => [p.progress, p.total, p.message]),
      [
        [1, 3, 'step 1'],
        [2, 3, 'step 2'],
        [3, 3, 'step 3'],
      ],
    );
    // The client's cancellation reached the running call (notifications/cancelled on another request).
    for (let i = 0; i < 50 && cancelled === 0; i += 1) await new Promise((r) => setTimeout(r, 20));
    assert.equal(cancelled, 1);
  });

  it('refuses requests without a session, with an unknown one, or one of another key', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' });
    const post = (headers: Record<string, string>, who = principal) =>
      endpoint.handle({
        request: new Request(`${BASE}/api/mcp`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...headers,
          },
          body,
        }),
        principal: who,
        body: JSON.parse(body),
      });
    assert.equal((await post({})).status, 400);
    assert.equal((await post({ 'mcp-session-id': 'mcps_unknown' })).status, 404);
    assert.equal((await post({ 'mcp-session-id': transport.sessionId! }, other)).status, 404);
    assert.equal(
      (await post({ 'mcp-session-id': transport.sessionId!, origin: 'https://evil.example' })).status,
      403,
    );
    assert.equal((await post({ 'mcp-session-id': transport.sessionId! })).status, 200);
  });

  it('keeps a session in use alive past MCP_SESSION_IDLE_MS, however seldom it is written', async () => {
    const used = await connect();
    for (let i = 0; i < 4; i += 1) {
      now += 40_000; // each use within the idle time of the one before: 160 s in all
      await used.client.listTools();
    }
    assert.ok(sessions.all.get(used.transport.sessionId!)!.last_seen_at.getTime() > now - 60_000);
  });

  it('drops a session idle past MCP_SESSION_IDLE_MS, and ends one on DELETE', async () => {
    const idle = await connect();
    now += 61_000;
    await assert.rejects(idle.client.listTools(), /Session not found|404/);
    const ended = await connect();
    const id = ended.transport.sessionId!;
    await ended.transport.terminateSession();
    assert.equal(sessions.all.has(id), false);
    await assert.rejects(ended.client.listTools());
  });
});
