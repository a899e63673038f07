// The MCP server (docs/mcp.md) seen by an outside client: the MCP Inspector's CLI (installed devDependency, no
// network), authenticated with an API key header, against the service as a process.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, type RunningService } from '../helpers/service.ts';
import { editorUser } from '../helpers/editor.ts';

const require = createRequire(import.meta.url);

/** The Inspector's launcher (its `mcp-inspector` bin), run with this Node. */
function inspectorBin(): string {
  const manifest = require.resolve('@modelcontextprotocol/inspector/package.json');
  const { bin } = require(manifest) as { bin: Record<string, string> };
  return join(dirname(manifest), bin['mcp-inspector']!);
}

const TOOL_COUNT = 17;

describe('MCP Inspector CLI against /api/mcp', () => {
  let mongo: TestMongo;
  let service: RunningService;
  let token: string;
  // The Inspector keeps a catalogue and storage under HOME: a throwaway one.
  const home = mkdtempSync(join(tmpdir(), 'mf-inspector-home-'));

  before(async () => {
    mongo = await startMongo();
    service = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: 'mcp_inspector',
      SANDBOX_VIDEO_MS: '300',
      SANDBOX_IMAGE_MS: '200',
      PROVIDER_POLL_INTERVAL_MS: '200',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
    token = (await editorUser(service, { credits: 4321, scopes: ['models:read'] })).token;
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  /** Runs `mcp-inspector --cli <url>/api/mcp --transport http --header ... <args>`; its stdout parsed as JSON. */
  function inspector(args: string[], key = token): Promise<{ code: number; json: unknown; stderr: string }> {
    const argv = [
      inspectorBin(),
      '--cli',
      `${service.url}/api/mcp`,
      '--transport',
      'http',
      '--header',
      `Authorization: Bearer ${key}`,
      ...args,
    ];
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        argv,
        {
          env: { PATH: process.env.PATH, HOME: home, MCP_CATALOG_PATH: join(home, 'mcp.json') },
          timeout: 30_000,
        },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
          let json: unknown;
          try {
            json = JSON.parse(stdout);
          } catch {
            json = stdout;
          }
          resolve({ code, json, stderr });
        },
      );
    });
  }

  it('tools/list lists the 17 tools with their schemas', async () => {
    const { code, json, stderr } = await inspector(['--method', 'tools/list']);
    assert.equal(code, 0, stderr);
    const tools = (
      json as { tools: { name: string; inputSchema: { type: string }; outputSchema?: { type: string } }[] }
    ).tools;
    assert.equal(tools.length, TOOL_COUNT, tools.map((t) => t.name).join(', '));
    for (const name of [
      'list_models',
      'media_forge_generate',
      'job_wait',
      'video_editor_instruct',
      'get_account',
    ])
      assert.ok(
        tools.some((t) => t.name === name),
        name,
      );
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', t.name);
      assert.equal(t.outputSchema?.type, 'object', t.name);
    }
  });

  it('tools/list --strict: the schema portability check prints no error and no warning', async () => {
    const { code, json, stderr } = await inspector(['--method', 'tools/list', '--strict']);
    assert.equal(code, 0, stderr);
    // The Inspector prints its findings (and their count) on stderr only when there is one.
    assert.equal(stderr, '');
    assert.equal((json as { tools: unknown[] }).tools.length, TOOL_COUNT);
  });

  it('tools/list --strict --format json: no schemaFindings', async () => {
    const { code, json, stderr } = await inspector([
      '--method',
      'tools/list',
      '--strict',
      '--format',
      'json',
    ]);
    assert.equal(code, 0, stderr);
    assert.equal(stderr, '');
    const envelope = json as { result: { tools: unknown[] }; schemaFindings?: unknown };
    assert.equal(envelope.result.tools.length, TOOL_COUNT);
    assert.equal(envelope.schemaFindings, undefined, JSON.stringify(envelope.schemaFindings));
  });

  it('tools/call get_account answers the REST account', async () => {
    const { code, json, stderr } = await inspector(['--method', 'tools/call', '--tool-name', 'get_account']);
    assert.equal(code, 0, stderr);
    const result = json as {
      structuredContent: unknown;
      content: { type: string; text?: string }[];
      isError?: boolean;
    };
    assert.notEqual(result.isError, true, JSON.stringify(result));
    const account = await call(service.url, 'GET', '/api/v1/account', { token });
    assert.deepEqual(result.structuredContent, account.body);
    assert.equal((result.structuredContent as { credits: number }).credits, 4321);
    assert.ok(result.content.some((item) => item.type === 'text' && item.text));
  });

  it('tools/call estimate_cost with --tool-arg', async () => {
    const { code, json, stderr } = await inspector([
      '--method',
      'tools/call',
      '--tool-name',
      'estimate_cost',
      '--tool-arg',
      'model=vidmodel-2.0',
      'duration_seconds=5',
      'resolution=720p',
    ]);
    assert.equal(code, 0, stderr);
    const result = json as { structuredContent: unknown; isError?: boolean };
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.deepEqual(result.structuredContent, { model: 'vidmodel-2.0', credits: 1135 });
  });

  it('a tool the key lacks the scope for is a tool error naming it', async () => {
    const { json } = await inspector([
      '--method',
      'tools/call',
      '--tool-name',
      'media_forge_generate',
      '--tool-arg',
      'model=imgmodel-2',
      'prompt=a cat',
    ]);
    assert.equal((json as { isError?: boolean }).isError, true, JSON.stringify(json));
    assert.match(JSON.stringify(json), /image:write/);
  });

  it('a bad key fails to connect', async () => {
    const { code } = await inspector(['--method', 'tools/list'], 'not-a-key');
    assert.notEqual(code, 0);
  });
});
