import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, type RunningService } from '../helpers/service.ts';
import { Browser } from '../helpers/browser-form.ts';
import { runAtTerminal } from '../helpers/terminal.ts';

const BIN = fileURLToPath(new URL('../../bin/mediaforge.js', import.meta.url));

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `mediaforge <args>` as an operator would, with only the CLI's own variables set; `input` is piped to its
 * stdin (a pipe, never a terminal; empty without `input`).
 */
function mediaforge(
  args: string[],
  env: Record<string, string | undefined>,
  input?: string,
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.end(input);
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

  /** `mediaforge admin <args>` that must exit 0 with nothing on stderr; answers its stdout. */
  const adminText = async (args: string[], input?: string): Promise<string> => {
    const result = await mediaforge(['admin', ...args], env, input);
    assert.equal(result.code, 0, `admin ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`);
    assert.equal(result.stderr, '');
    return result.stdout;
  };

  /** Signs in with the browser form: 303 when the password is right, 401 when it is not. */
  /**
   * A sign-in's status. A failed sign-in makes the next one of the account wait (growing delays, answered 429
   * with `Retry-After`): wait as a person would, so the answer is about the password, not the timing.
   */
  const signInStatus = async (email: string, password: string): Promise<number> => {
    for (let attempt = 0; ; attempt++) {
      const page = await new Browser(service.url).postForm('/sign-in', { email, password, next: '/account' });
      if (page.status !== 429 || attempt === 5) return page.status;
      const seconds = Number(page.headers.get('retry-after') ?? '1');
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, seconds) * 1000));
    }
  };

  it("lists users in columns, a page at a time with the next page's command, all of them with --all", async () => {
    const client = adminClient(service);
    const created = [
      {
        id: await client.createUser('cli-list-a@example.com', 7),
        email: 'cli-list-a@example.com',
        credits: 7,
      },
      {
        id: await client.createUser('cli-list-b@example.com', 0),
        email: 'cli-list-b@example.com',
        credits: 0,
      },
    ];
    const all = await admin<{
      users: Array<{ id: string; email: string; credits: number }>;
      next_cursor: null;
    }>('user', 'list', '--all', '--limit', '2', '--json');
    assert.equal(all.next_cursor, null);
    for (const user of created) assert.ok(all.users.some((u) => JSON.stringify(u) === JSON.stringify(user)));
    const everyone = await adminClient(service).call<{ users: unknown[] }>('GET', '/users?limit=1000');
    assert.deepEqual(all.users, everyone.body.users.slice(0, all.users.length), 'in creation order');

    const text = await adminText(['user', 'list', '--all']);
    const lines = text.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID {2,}EMAIL {2,}CREDITS$/);
    for (const user of created) {
      assert.ok(
        lines.some((line) =>
          new RegExp(`^${user.id} +${user.email.replace('.', '\\.')} +${user.credits}$`).test(line),
        ),
        text,
      );
    }
    // Columns line up: every email starts where the header's EMAIL does.
    const column = lines[0]!.indexOf('EMAIL');
    assert.ok(
      lines
        .slice(1)
        .every((line) => /^\S+ +\S/.test(line) && line[column - 1] === ' ' && line[column] !== ' '),
    );

    // Paging: the first page names the command for the next, which goes on where the first stopped.
    const first = await adminText(['user', 'list', '--limit', '1']);
    const next = /^more: mediaforge admin user list --limit 1 --cursor (\S+)$/m.exec(first);
    assert.ok(next, first);
    assert.equal(first.trimEnd().split('\n').length, 4, 'header, one user, a blank line, the next command');
    assert.ok(first.includes(all.users[0]!.id));
    const second = await adminText(['user', 'list', '--limit', '1', '--cursor', next[1]!]);
    assert.ok(second.includes(all.users[1]!.id), second);

    const badLimit = await mediaforge(['admin', 'user', 'list', '--limit', '0'], env);
    assert.equal(badLimit.code, 1);
    assert.equal(badLimit.stdout, '');
    assert.equal(badLimit.stderr, 'mediaforge admin: limit must be an integer from 1 to 1000 (400)\n');
  });

  it("lists a user's keys with their scopes and status; --json prints the API's answer", async () => {
    const client = adminClient(service);
    const userId = await client.createUser('cli-keys@example.com');
    const kept = await client.createKey(userId, ['video:write']);
    const revoked = await client.createKey(userId, []);
    await client.call('DELETE', `/keys/${revoked.id}`);

    const text = await adminText(['key', 'list', userId]);
    const lines = text.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID +NAME +PREFIX +CREATED +STATUS +SCOPES$/);
    assert.equal(lines.length, 3, text);
    const row = (id: string) => lines.find((line) => line.startsWith(`${id} `)) ?? '';
    assert.match(row(kept.id), / mf_\w+ +\d{4}-\d\d-\d\dT\S+Z +active +models:read,video:write$/);
    assert.match(row(revoked.id), / revoked \d{4}-\d\d-\d\dT\S+Z +models:read$/);
    assert.ok(!text.includes(kept.apiKey), 'the secret is never shown again');

    const asJson = await admin('key', 'list', userId, '--json');
    assert.deepEqual(asJson, (await client.call('GET', `/users/${userId}/keys`)).body);

    const keyless = await client.createUser('cli-nokeys@example.com');
    assert.equal(await adminText(['key', 'list', keyless]), `no API keys for ${keyless}\n`);

    const unknown = await mediaforge(['admin', 'key', 'list', 'usr_doesnotexist000'], env);
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stdout, '');
    assert.equal(unknown.stderr, 'mediaforge admin: User not found (404)\n');
    const unknownJson = await mediaforge(['admin', 'key', 'list', 'usr_doesnotexist000', '--json'], env);
    assert.equal(unknownJson.code, 1);
    assert.deepEqual(json(unknownJson), { error: 'User not found' });
  });

  it('sets a password piped in with --password-stdin (one trailing newline dropped); the user signs in with it', async () => {
    const email = 'cli-pw-stdin@example.com';
    const userId = await adminClient(service).createUser(email);
    const password = ' spaces count, too 42 ';
    const set = await adminText(['password', 'set', userId, '--password-stdin'], `${password}\n`);
    assert.equal(set, `password set for ${userId}\n`);
    assert.equal(await signInStatus(email, password), 303);
    assert.equal(await signInStatus(email, password.trim()), 401);

    const asJson = await mediaforge(
      ['admin', 'password', 'set', userId, '--password-stdin', '--json'],
      env,
      'another secret 1\r\n',
    );
    assert.equal(asJson.code, 0, asJson.stderr);
    assert.deepEqual(json(asJson), { ok: true });
    assert.equal(await signInStatus(email, 'another secret 1'), 303);

    const short = await mediaforge(['admin', 'password', 'set', userId, '--password-stdin'], env, 'short\n');
    assert.equal(short.code, 1);
    assert.equal(short.stdout, '');
    assert.equal(short.stderr, 'mediaforge admin: password must be at least 10 characters (400)\n');
    const unknown = await mediaforge(
      ['admin', 'password', 'set', 'usr_doesnotexist000', '--password-stdin'],
      env,
      'long enough 123\n',
    );
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stderr, 'mediaforge admin: User not found (404)\n');
  });

  it('never takes the password from the command line, nor waits for one without a terminal (exit 2, nothing set)', async () => {
    const email = 'cli-pw-argv@example.com';
    const userId = await adminClient(service).createUser(email);
    const onArgv = await mediaforge(['admin', 'password', 'set', userId, 'a password on argv'], env);
    assert.equal(onArgv.code, 2);
    assert.equal(onArgv.stdout, '');
    assert.match(
      onArgv.stderr,
      /^mediaforge admin: the password is never taken from the command line .*--password-stdin/,
    );
    const noTerminal = await mediaforge(['admin', 'password', 'set', userId], env);
    assert.equal(noTerminal.code, 2);
    assert.match(noTerminal.stderr, /no terminal to type the password at: pipe it in with --password-stdin/);
    assert.equal(await signInStatus(email, 'a password on argv'), 401, 'no password was set');
  });

  it('asks for the password at a terminal, twice, without echoing it', async () => {
    const email = 'cli-pw-tty@example.com';
    const userId = await adminClient(service).createUser(email);
    const password = 'typed at the terminal 9';
    const argv = [process.execPath, BIN, 'admin', 'password', 'set', userId];
    const cliEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ...env };
    const typed = await runAtTerminal(argv, cliEnv, [
      { waitFor: `New password for ${userId}: `, type: `${password}x\u007f\r` },
      { waitFor: 'Repeat it: ', type: `${password}\r` },
    ]);
    assert.equal(typed.code, 0, typed.screen);
    assert.match(typed.screen, new RegExp(`password set for ${userId}`));
    assert.ok(!typed.screen.includes('typed at'), `the password is not echoed:\n${typed.screen}`);
    assert.equal(await signInStatus(email, password), 303, 'backspace removed the x');

    const differ = await runAtTerminal(argv, cliEnv, [
      { waitFor: 'New password', type: 'first attempt 1234\r' },
      { waitFor: 'Repeat it: ', type: 'second attempt 123\r' },
    ]);
    assert.equal(differ.code, 1, differ.screen);
    assert.match(differ.screen, /the two passwords differ; nothing was changed/);
    assert.equal(await signInStatus(email, password), 303, 'the password is unchanged');

    const unknown = await runAtTerminal([...argv.slice(0, -1), 'usr_doesnotexist000'], cliEnv, []);
    assert.equal(unknown.code, 1);
    assert.match(unknown.screen, /User not found \(404\)/);
    assert.ok(!unknown.screen.includes('New password'), 'no password is asked for an unknown user');
  });

  it("makes a sign-in link: the URL, then when it expires; --json prints the API's answer", async () => {
    const userId = await adminClient(service).createUser('cli-link@example.com');
    const text = await adminText(['sign-in-link', 'create', userId]);
    const [url, expiry, ...rest] = text.split('\n');
    assert.deepEqual(rest, ['']);
    assert.match(url!, new RegExp(`^${service.url.replace(/[.:/]/g, '\\$&')}/sign-in/link/\\S+$`));
    const expires = /^expires (\S+) \(in (\d+) minutes\); it signs (\S+) in once$/.exec(expiry!);
    assert.ok(expires, expiry);
    assert.ok(Math.abs(Date.parse(expires[1]!) - (Date.now() + 30 * 60_000)) < 60_000, expires[1]);
    assert.equal(expires[2], '30');
    assert.equal(expires[3], userId);
    const page = await new Browser(service.url).get(url!);
    assert.equal(page.status, 200);
    assert.match(page.text, /cli-link@example\.com/);

    const asJson = await admin<{ url: string; expires_at: string }>(
      'sign-in-link',
      'create',
      userId,
      '--json',
    );
    assert.deepEqual(Object.keys(asJson).sort(), ['expires_at', 'url']);
    assert.notEqual(asJson.url, url, 'every link is new');

    const unknown = await mediaforge(['admin', 'sign-in-link', 'create', 'usr_doesnotexist000'], env);
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stderr, 'mediaforge admin: User not found (404)\n');
    const missing = await mediaforge(['admin', 'sign-in-link', 'create'], env);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /missing <user_id>/);
  });
});

describe('mediaforge help', () => {
  it('--help, -h, help and admin --help print the usage on stdout and exit 0', async () => {
    for (const args of [['--help'], ['-h'], ['help'], ['admin', '--help']]) {
      const result = await mediaforge(args, {});
      assert.equal(result.code, 0, args.join(' '));
      assert.equal(result.stderr, '');
      assert.match(result.stdout, /^usage: mediaforge <command>\n/);
      for (const command of [
        'admin user list',
        'admin key list',
        'admin password set',
        'admin sign-in-link create',
      ]) {
        assert.ok(result.stdout.includes(command), `${args.join(' ')}: ${command}`);
      }
    }
  });

  it('an unknown command prints the usage on stderr and exits 2', async () => {
    const result = await mediaforge(['--halp'], {});
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^unknown command: --halp\n\nusage: mediaforge <command>\n/);
  });
});
