import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, type RunningService } from '../helpers/service.ts';

const BIN = fileURLToPath(new URL('../../bin/mediaforge.js', import.meta.url));

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `mediaforge <args>` as an operator would, with only the CLI's own variables set. */
function mediaforge(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Parses the command's stdout, which must be exactly one JSON document. */
function json<T>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    assert.fail(`stdout is not JSON (exit ${result.code}):\n${result.stdout}\nstderr:\n${result.stderr}`);
  }
}

// Each command starts a Node process with the tsx loader (~1.5 s of CPU): the tests are independent, two run at once.
describe('mediaforge admin CLI', { concurrency: 2 }, () => {
  let mongo: TestMongo;
  let service: RunningService;
  let env: Record<string, string>;

  /** `mediaforge admin <args>` against the test service; asserts exit 0 and answers the parsed JSON. */
  const admin = async <T = Record<string, unknown>>(...args: string[]): Promise<T> => {
    const result = await mediaforge(['admin', ...args], env);
    assert.equal(
      result.code,
      0,
      `admin ${args.join(' ')} exited ${result.code}:\n${result.stdout}\n${result.stderr}`,
    );
    return json<T>(result);
  };

  before(async () => {
    mongo = await startMongo();
    service = await startService({ MONGO_URL: mongo.uri, MONGO_DB: 'admin_cli' });
    env = { MEDIAFORGE_URL: service.url, MEDIAFORGE_ADMIN_TOKEN: service.adminToken };
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  it('creates a user and prints it as JSON', async () => {
    const created = await admin<{ user: { id: string; email: string; credits: number } }>(
      'user',
      'create',
      'Cli.User@Example.com',
    );
    assert.equal(created.user.email, 'cli.user@example.com');
    assert.equal(created.user.credits, 0);
    const shown = await admin<{ user: { id: string } }>('user', 'get', created.user.id);
    assert.deepEqual(shown, created);
  });

  it('creates a user with --credits', async () => {
    const created = await admin<{ user: { id: string; credits: number } }>(
      'user',
      'create',
      'cli-credits@example.com',
      '--credits',
      '300',
    );
    assert.equal(created.user.credits, 300);
  });

  it('creates a key with --scopes and --name, printing the key once', async () => {
    const userId = await adminClient(service).createUser('cli-key@example.com', 9);
    const created = await admin<{
      key: { id: string; name: string; scopes: string[]; prefix: string };
      api_key: string;
    }>('key', 'create', userId, '--scopes', 'video:write,image:write', '--name', 'ci');
    assert.equal(created.key.name, 'ci');
    assert.deepEqual([...created.key.scopes].sort(), ['image:write', 'models:read', 'video:write']);
    assert.match(created.api_key, /^mf_[0-9A-Za-z]{32,}$/);
    assert.ok(created.api_key.startsWith(created.key.prefix));
    const account = await call(service.url, 'GET', '/api/v1/account', { token: created.api_key });
    assert.equal(account.status, 200);
    assert.deepEqual(account.body, { user_id: userId, credits: 9 });
  });

  it('grants credits once per --op-id: the repeated command prints the same result', async () => {
    const userId = await adminClient(service).createUser('cli-grant@example.com');
    const first = await admin('credits', 'grant', userId, '500', '--op-id', 'x');
    assert.deepEqual(first, { user_id: userId, credits: 500 });
    const second = await admin('credits', 'grant', userId, '500', '--op-id', 'x');
    assert.deepEqual(second, first);
    const ledger = await adminClient(service).call<{ entries: Array<{ delta: number; reason: string }> }>(
      'GET',
      `/users/${userId}/ledger`,
    );
    assert.equal(ledger.body.entries.length, 1);
    assert.equal(ledger.body.entries[0]!.delta, 500);
  });

  it('takes back credits with a negative amount, as the usage text says', async () => {
    const userId = await adminClient(service).createUser('cli-negative@example.com', 500);
    assert.deepEqual(await admin('credits', 'grant', userId, '-100'), { user_id: userId, credits: 400 });
  });

  it('grants credits with --reason, recorded in the ledger', async () => {
    const userId = await adminClient(service).createUser('cli-reason@example.com');
    assert.deepEqual(await admin('credits', 'grant', userId, '25', '--reason', 'goodwill'), {
      user_id: userId,
      credits: 25,
    });
    const ledger = await adminClient(service).call<{ entries: Array<{ reason: string }> }>(
      'GET',
      `/users/${userId}/ledger`,
    );
    assert.equal(ledger.body.entries[0]!.reason, 'goodwill');
  });

  it('sets a webhook (printing the secret once), clears it, and sets a new secret after clearing', async () => {
    const client = adminClient(service);
    const key = await client.createKey(await client.createUser('cli-hook@example.com'), ['video:write']);
    const set = await admin<{ url: string; secret?: string }>(
      'webhook',
      'set',
      key.id,
      'https://example.com/hook',
    );
    assert.equal(set.url, 'https://example.com/hook');
    assert.match(set.secret ?? '', /^whsec_/);

    const again = await admin<{ url: string; secret?: string }>(
      'webhook',
      'set',
      key.id,
      'https://example.com/hook2',
    );
    assert.deepEqual(again, { url: 'https://example.com/hook2' });

    assert.deepEqual(await admin('webhook', 'clear', key.id), { cleared: true });
    assert.deepEqual((await client.call('GET', `/keys/${key.id}/webhook`)).body, {
      url: null,
      enabled: false,
    });

    const rotated = await admin<{ secret?: string }>('webhook', 'set', key.id, 'https://example.com/hook');
    assert.match(rotated.secret ?? '', /^whsec_/);
    assert.notEqual(rotated.secret, set.secret);
  });

  it("lists a key's webhook deliveries, with --limit checked by the API", async () => {
    const client = adminClient(service);
    const key = await client.createKey(await client.createUser('cli-deliveries@example.com'));
    assert.deepEqual(await admin('webhook', 'deliveries', key.id, '--limit', '5'), { deliveries: [] });
    const tooMany = await mediaforge(['admin', 'webhook', 'deliveries', key.id, '--limit', '101'], env);
    assert.equal(tooMany.code, 1);
    assert.deepEqual(json(tooMany), { error: 'limit must be an integer from 1 to 100' });
    const unknown = await mediaforge(['admin', 'webhook', 'deliveries', 'key_doesnotexist00'], env);
    assert.equal(unknown.code, 1);
    assert.deepEqual(json(unknown), { error: 'API key not found' });
    const notANumber = await mediaforge(['admin', 'webhook', 'deliveries', key.id, '--limit', 'x'], env);
    assert.equal(notANumber.code, 2);
  });

  it('revokes a key, which then answers 401', async () => {
    const client = adminClient(service);
    const key = await client.createKey(await client.createUser('cli-revoke@example.com'));
    assert.deepEqual(await admin('key', 'revoke', key.id), { id: key.id, revoked: true });
    const answer = await call(service.url, 'GET', '/api/v1/account', { token: key.apiKey });
    assert.equal(answer.status, 401);
  });

  it('exits 1 and prints the JSON error for an unknown user', async () => {
    for (const args of [
      ['credits', 'grant', 'usr_doesnotexist000', '5'],
      ['key', 'create', 'usr_doesnotexist000', '--scopes', 'video:write'],
    ]) {
      const result = await mediaforge(['admin', ...args], env);
      assert.equal(result.code, 1, `${args.join(' ')}: ${result.stdout}${result.stderr}`);
      assert.equal(json<{ error: string }>(result).error, 'User not found');
    }
  });

  it('exits 1 and prints the JSON error for a request the API refuses', async () => {
    const client = adminClient(service);
    const key = await client.createKey(await client.createUser('cli-badurl@example.com'));
    const badUrl = await mediaforge(['admin', 'webhook', 'set', key.id, 'ftp://x'], env);
    assert.equal(badUrl.code, 1);
    assert.deepEqual(json(badUrl), { error: 'url must be a https URL' });
    const duplicate = await mediaforge(['admin', 'user', 'create', 'cli-badurl@example.com'], env);
    assert.equal(duplicate.code, 1);
    assert.equal(typeof json<{ error: string }>(duplicate).error, 'string');
  });

  it('exits 1 when the admin token is wrong', async () => {
    const result = await mediaforge(['admin', 'user', 'get', 'usr_x'], {
      ...env,
      MEDIAFORGE_ADMIN_TOKEN: 'wrong',
    });
    assert.equal(result.code, 1);
    assert.equal(typeof json<{ error: string }>(result).error, 'string');
  });

  it('exits 2 without MEDIAFORGE_ADMIN_TOKEN, naming the variable, and sends nothing', async () => {
    const result = await mediaforge(['admin', 'user', 'create', 'cli-notoken@example.com'], {
      MEDIAFORGE_URL: service.url,
    });
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /MEDIAFORGE_ADMIN_TOKEN/);
    const users = await adminClient(service).call<{ users: Array<{ email: string }> }>(
      'GET',
      '/users?limit=1000',
    );
    assert.ok(!users.body.users.some((u) => u.email === 'cli-notoken@example.com'));
  });

  it('exits 2 for an unknown admin command or a missing argument', async () => {
    for (const args of [
      ['user', 'explode'],
      ['user', 'create'],
      ['credits', 'grant', 'usr_x', 'lots'],
    ]) {
      const result = await mediaforge(['admin', ...args], env);
      assert.equal(result.code, 2, args.join(' '));
      assert.equal(result.stdout, '');
      assert.match(result.stderr, /mediaforge admin:/);
    }
  });

  it('exits 1 with a message when the service cannot be reached', async () => {
    const result = await mediaforge(['admin', 'user', 'get', 'usr_x'], {
      MEDIAFORGE_URL: 'http://127.0.0.1:1',
      MEDIAFORGE_ADMIN_TOKEN: service.adminToken,
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /cannot reach/);
  });
});
