// The dashboard's session API end to end (docs/dashboard.md, The session API): the
// service as a process on a fresh MongoDB-wire server, browsers signed in through /sign-in (cookie jar over
// fetch), the API keys they make used from here as any client would, a real webhook receiver on loopback, and
// the page's short-lived bearer tokens on /api/v1 and on the events WebSocket.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import {
  startService,
  call,
  adminClient,
  TEST_ADMIN_TOKEN,
  type RunningService,
} from '../helpers/service.ts';
import { Browser, findSetCookie } from '../helpers/browser-form.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { assertSigned, submitImage, until, type Delivery } from '../helpers/webhooks.ts';
import { jobsClient } from '../helpers/jobs.ts';
import { openEventsSocket, refusedHandshake } from '../helpers/events-socket.ts';

const API = '/api/dashboard/v1';
const NOT_SIGNED_IN = 'Not signed in';
const FOREIGN_ORIGIN = 'https://evil.example';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;
/** A delivery or a sandbox job is a liveness bound, not a budget (ffmpeg renders on shared cores). */
const JOB_MS = 20_000;

const DB = 'dashboard_api';

let mongo: TestMongo;
let db: MongoClient;
let service: RunningService;
let admin: ReturnType<typeof adminClient>;
const receivers: WebhookReceiver[] = [];
const jobs = jobsClient(() => service);

before(async () => {
  mongo = await startMongo();
  service = await startService({
    MONGO_URL: mongo.uri,
    MONGO_DB: DB,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    SANDBOX_IMAGE_MS: '200',
    PROVIDER_POLL_INTERVAL_MS: '100',
    RATE_LIMIT_PER_MINUTE: '100000',
  });
  admin = adminClient(service);
  db = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
  await db.connect();
});

after(async () => {
  await db?.close();
  await Promise.all(receivers.map((r) => r.close()));
  await service?.stop();
  await mongo?.stop();
});

interface TestUser {
  id: string;
  email: string;
  password: string;
}

let counter = 0;

/** A user with `credits` and a password, made through the admin API. */
async function newUser(prefix: string, credits = 0): Promise<TestUser> {
  const email = `${prefix}-${++counter}-${Date.now()}@example.com`;
  const id = await admin.createUser(email, credits);
  const password = `pass-${prefix}-${randomBytes(8).toString('hex')}`;
  const set = await call(service.url, 'POST', `/api/admin/v1/users/${id}/password`, {
    token: TEST_ADMIN_TOKEN,
    body: { password },
  });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  return { id, email, password };
}

/** A session API answer, parsed; `raw` is the whole answer as text (headers and body) for leak checks. */
interface DashAnswer<T> {
  status: number;
  body: T;
  raw: string;
}

/** A browser signed in as the user, with its session's CSRF token. */
class Session {
  constructor(
    readonly browser: Browser,
    readonly user: TestUser,
    public csrf: string,
  ) {}

  get cookie(): string {
    return this.browser.cookie('mf_session') ?? '';
  }

  /**
   * A session API call as the page makes it: the cookie, JSON, and for a change the CSRF token and the own
   * Origin (override with `csrf` / `origin`; `null` leaves the header out). Every answer is checked not to
   * carry the session cookie's value anywhere.
   */
  async send<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: { body?: unknown; csrf?: string | null; origin?: string | null } = {},
  ): Promise<DashAnswer<T>> {
    const change = method !== 'GET' && method !== 'HEAD';
    const csrf = options.csrf === undefined ? (change ? this.csrf : null) : options.csrf;
    const headers: Record<string, string> = {};
    if (csrf !== null) headers['x-csrf-token'] = csrf;
    const cookie = this.cookie;
    const page = await this.browser.request(method, `${API}${path}`, {
      headers,
      ...(options.origin !== undefined ? { origin: options.origin } : {}),
      ...(options.body !== undefined
        ? { body: JSON.stringify(options.body), contentType: 'application/json' }
        : {}),
    });
    const raw = `${[...page.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${page.text}`;
    if (cookie) assert.ok(!raw.includes(cookie), `${method} ${path} echoed the session cookie: ${raw}`);
    assert.equal(findSetCookie(page, 'mf_session'), undefined, `${method} ${path} set the session cookie`);
    let body: unknown;
    try {
      body = page.text ? JSON.parse(page.text) : undefined;
    } catch {
      assert.fail(`${method} ${path}: not JSON: ${page.status} ${page.text.slice(0, 300)}`);
    }
    return { status: page.status, body: body as T, raw };
  }
}

/** Signs a new browser in through the /sign-in form and reads its session's CSRF token. */
async function signIn(user: TestUser): Promise<Session> {
  const browser = new Browser(service.url);
  const answer = await browser.postForm('/sign-in', {
    email: user.email,
    password: user.password,
    next: '/account',
  });
  assert.equal(answer.status, 303, `sign-in: ${answer.status} ${answer.text.slice(0, 300)}`);
  assert.ok(browser.cookie('mf_session'), 'signed in: a session cookie');
  const session = new Session(browser, user, '');
  const current = await session.send<{ csrf_token: string }>('GET', '/session');
  assert.equal(current.status, 200, current.raw);
  session.csrf = current.body.csrf_token;
  return session;
}

async function receiver(): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver();
  receivers.push(started);
  return started;
}

const account = (token: string) =>
  call<{ user_id: string; credits: number; error?: string }>(service.url, 'GET', '/api/v1/account', {
    token,
  });

interface KeyView {
  id: string;
  name: string | null;
  scopes: string[];
  prefix: string;
  created_at: string;
  revoked_at?: string | null;
}

describe('the session API without a session', () => {
  it('answers 401 Not signed in without a cookie, and with a forged, malformed or ended one', async () => {
    const user = await newUser('nosession');
    const signedOut = await signIn(user);
    const ended = signedOut.cookie;
    const out = await signedOut.browser.postForm('/sign-out', { csrf_token: signedOut.csrf });
    assert.equal(out.status, 303, out.text);

    const cookies: Array<string | undefined> = [
      undefined,
      `mfs_${randomBytes(32).toString('base64url').replace(/[-_]/g, 'a').slice(0, 43)}`,
      'not-a-session',
      '',
      ended,
    ];
    const routes: Array<[string, string]> = [
      ['GET', '/session'],
      ['POST', '/token'],
      ['GET', '/keys'],
      ['POST', '/keys'],
      ['GET', '/balance'],
      ['GET', '/ledger'],
      ['DELETE', '/keys/key_doesnotexist000'],
      ['GET', '/keys/key_doesnotexist000/webhook'],
    ];
    for (const cookie of cookies) {
      const browser = new Browser(service.url);
      if (cookie !== undefined) browser.setCookie('mf_session', cookie);
      const session = new Session(browser, user, 'x'.repeat(32));
      for (const [method, path] of routes) {
        const answer = await session.send(method, path, method === 'POST' ? { body: { scopes: [] } } : {});
        assert.equal(answer.status, 401, `${method} ${path} with cookie ${String(cookie)}: ${answer.raw}`);
        assert.deepEqual(answer.body, { error: NOT_SIGNED_IN }, `${method} ${path}`);
      }
    }
  });
});

describe('the session API', () => {
  it('GET /session answers the user, the CSRF token and when the session ends', async () => {
    const user = await newUser('session', 700);
    const session = await signIn(user);
    const answer = await session.send<{
      user: { id: string; email: string; credits: number };
      csrf_token: string;
      expires_at: string;
    }>('GET', '/session');
    assert.equal(answer.status, 200, answer.raw);
    assert.deepEqual(Object.keys(answer.body).sort(), ['csrf_token', 'expires_at', 'user']);
    assert.deepEqual(answer.body.user, { id: user.id, email: user.email, credits: 700 });
    assert.equal(typeof answer.body.csrf_token, 'string');
    assert.ok(answer.body.csrf_token.length >= 16, `a short CSRF token: ${answer.body.csrf_token}`);
    assert.notEqual(answer.body.csrf_token, session.cookie, 'the CSRF token is not the cookie');
    assert.match(answer.body.expires_at, ISO);
    const days = (Date.parse(answer.body.expires_at) - Date.now()) / 86_400_000;
    assert.ok(days > 13 && days <= 14.01, `the session ends in ${days} days, expected 14`);
    // Another session of the same user has its own CSRF token.
    const other = await signIn(user);
    assert.notEqual(other.csrf, session.csrf);
  });

  it('refuses every change without the CSRF token, with a wrong one, without Origin or from a foreign Origin (403), changing nothing', async () => {
    const user = await newUser('csrf', 100);
    const session = await signIn(user);
    const key = await admin.createKey(user.id, ['image:write']);
    const hookUrl = 'https://hooks.example.com/mediaforge';
    const set = await admin.call('PUT', `/keys/${key.id}/webhook`, { url: hookUrl });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const keysBefore = await session.send<{ keys: KeyView[] }>('GET', '/keys');
    assert.equal(keysBefore.status, 200, keysBefore.raw);
    assert.equal(keysBefore.body.keys.length, 1);

    const changes: Array<[string, string, unknown]> = [
      ['POST', '/token', undefined],
      ['POST', '/keys', { name: 'sneaky', scopes: ['image:write'] }],
      ['DELETE', `/keys/${key.id}`, undefined],
      ['PUT', `/keys/${key.id}/webhook`, { url: 'https://evil.example/hook' }],
      ['DELETE', `/keys/${key.id}/webhook`, undefined],
    ];
    const refusals: Array<[string, { csrf?: string | null; origin?: string | null }]> = [
      ['no X-CSRF-Token', { csrf: null }],
      ['an empty X-CSRF-Token', { csrf: '' }],
      ['a wrong X-CSRF-Token', { csrf: `${session.csrf}x` }],
      ['a same-length wrong X-CSRF-Token', { csrf: 'A'.repeat(session.csrf.length) }],
      ['no Origin', { origin: null }],
      ['a foreign Origin', { origin: FOREIGN_ORIGIN }],
      ['the Origin null', { origin: 'null' }],
    ];
    for (const [method, path, body] of changes)
      for (const [label, options] of refusals) {
        const answer = await session.send<{ error?: string; token?: string; api_key?: string }>(
          method,
          path,
          { ...options, ...(body !== undefined ? { body } : {}) },
        );
        assert.equal(answer.status, 403, `${method} ${path} with ${label}: ${answer.raw}`);
        assert.equal(typeof answer.body?.error, 'string', `${method} ${path} with ${label}: an error`);
        assert.equal(answer.body.token, undefined, `${method} ${path} with ${label}: no token`);
        assert.equal(answer.body.api_key, undefined, `${method} ${path} with ${label}: no key`);
      }

    // Nothing changed: the one key, not revoked, still working, its webhook as it was.
    const keysAfter = await session.send<{ keys: KeyView[] }>('GET', '/keys');
    assert.deepEqual(keysAfter.body, keysBefore.body, 'the keys changed');
    assert.equal(keysAfter.body.keys[0]!.revoked_at ?? null, null);
    assert.equal((await account(key.apiKey)).status, 200, 'the key still works');
    const hook = await session.send<{ url: string | null; enabled: boolean }>(
      'GET',
      `/keys/${key.id}/webhook`,
    );
    assert.equal(hook.status, 200, hook.raw);
    assert.equal(hook.body.url, hookUrl, 'the webhook changed');
    // The session still works, and the same change with the token and the own Origin goes through.
    const cleared = await session.send('DELETE', `/keys/${key.id}/webhook`);
    assert.deepEqual([cleared.status, cleared.body], [200, { cleared: true }]);
  });

  it('creates a key whose secret is shown once, usable from any client, then revokes it', async () => {
    const user = await newUser('keys', 300);
    const session = await signIn(user);
    const empty = await session.send<{ keys: KeyView[] }>('GET', '/keys');
    assert.deepEqual([empty.status, empty.body], [200, { keys: [] }]);

    const created = await session.send<{ key: KeyView; api_key: string }>('POST', '/keys', {
      body: { name: 'laptop', scopes: ['image:write'] },
    });
    assert.equal(created.status, 201, created.raw);
    const { key, api_key: apiKey } = created.body;
    assert.deepEqual(Object.keys(key).sort(), ['created_at', 'id', 'name', 'prefix', 'scopes']);
    assert.equal(key.name, 'laptop');
    assert.ok(key.scopes.includes('image:write'), JSON.stringify(key.scopes));
    assert.match(key.created_at, ISO);
    assert.equal(typeof apiKey, 'string');
    assert.ok(apiKey.startsWith(key.prefix), `the key ${apiKey.slice(0, 8)}… starts with ${key.prefix}`);
    assert.ok(apiKey.length > key.prefix.length + 16);

    const second = await session.send<{ key: KeyView; api_key: string }>('POST', '/keys', {
      body: { scopes: ['video:write'] },
    });
    assert.equal(second.status, 201, second.raw);

    const listed = await session.send<{ keys: KeyView[] }>('GET', '/keys');
    assert.equal(listed.status, 200, listed.raw);
    assert.deepEqual(listed.body.keys.map((k) => k.id).sort(), [second.body.key.id, key.id].sort());
    assert.ok(!listed.raw.includes(apiKey), 'GET /keys shows the secret');
    assert.ok(!listed.raw.includes(second.body.api_key), 'GET /keys shows the secret');
    const listedKey = listed.body.keys.find((k) => k.id === key.id)!;
    assert.equal(listedKey.prefix, key.prefix);
    assert.equal(listedKey.revoked_at, null);
    assert.equal(listedKey.name, 'laptop');

    const using = await account(apiKey);
    assert.equal(using.status, 200, JSON.stringify(using.body));
    assert.deepEqual(using.body, { user_id: user.id, credits: 300 });

    const revoked = await session.send('DELETE', `/keys/${key.id}`);
    assert.deepEqual([revoked.status, revoked.body], [200, { id: key.id, revoked: true }]);
    const refused = await account(apiKey);
    assert.deepEqual([refused.status, refused.body], [401, { error: 'Invalid or revoked API key' }]);
    const after = await session.send<{ keys: KeyView[] }>('GET', '/keys');
    const revokedKey = after.body.keys.find((k) => k.id === key.id)!;
    assert.match(revokedKey.revoked_at ?? '', ISO, 'GET /keys shows when it was revoked');
    assert.equal((await account(second.body.api_key)).status, 200, 'the other key still works');
    // Last, so that a wrong order does not hide the rest: the contract lists keys newest first.
    assert.deepEqual(
      listed.body.keys.map((k) => k.id),
      [second.body.key.id, key.id],
      'GET /keys lists the newest first',
    );
  });

  it("answers 404 API key not found for another user's key on every key route, and leaves it alone", async () => {
    const mine = await newUser('mine', 100);
    const theirs = await newUser('theirs', 100);
    const session = await signIn(mine);
    const own = await admin.createKey(mine.id, ['image:write']);
    const other = await admin.createKey(theirs.id, ['image:write']);
    const theirHook = 'https://hooks.example.com/theirs';
    assert.equal((await admin.call('PUT', `/keys/${other.id}/webhook`, { url: theirHook })).status, 200);

    for (const keyId of [other.id, 'key_doesnotexist000']) {
      const routes: Array<[string, string, unknown]> = [
        ['DELETE', `/keys/${keyId}`, undefined],
        ['GET', `/keys/${keyId}/webhook`, undefined],
        ['PUT', `/keys/${keyId}/webhook`, { url: 'https://evil.example/hook' }],
        ['DELETE', `/keys/${keyId}/webhook`, undefined],
        ['GET', `/keys/${keyId}/deliveries?limit=10`, undefined],
      ];
      for (const [method, path, body] of routes) {
        const answer = await session.send(method, path, body !== undefined ? { body } : {});
        assert.equal(answer.status, 404, `${method} ${path}: ${answer.raw}`);
        assert.deepEqual(answer.body, { error: 'API key not found' }, `${method} ${path}`);
      }
    }
    const listed = await session.send<{ keys: KeyView[] }>('GET', '/keys');
    assert.deepEqual(
      listed.body.keys.map((k) => k.id),
      [own.id],
      'only my own keys are listed',
    );

    assert.equal((await account(other.apiKey)).status, 200, 'their key still works');
    const hook = await admin.call<{ url: string | null }>('GET', `/keys/${other.id}/webhook`);
    assert.equal(hook.body.url, theirHook, 'their webhook is unchanged');
    const theirKeys = await admin.call<{ keys: KeyView[] }>('GET', `/users/${theirs.id}/keys`);
    assert.equal(theirKeys.status, 200, JSON.stringify(theirKeys.body));
    assert.equal(theirKeys.body.keys.find((k) => k.id === other.id)?.revoked_at ?? null, null);
  });

  it('sets a webhook (the secret shown on first enablement only), and a job of the key is delivered and listed', async () => {
    const hook = await receiver();
    const user = await newUser('hooks', 1000);
    const session = await signIn(user);
    const created = await session.send<{ key: KeyView; api_key: string }>('POST', '/keys', {
      body: { name: 'hooked', scopes: ['image:write'] },
    });
    assert.equal(created.status, 201, created.raw);
    const keyId = created.body.key.id;

    const none = await session.send('GET', `/keys/${keyId}/webhook`);
    assert.equal(none.status, 200, none.raw);
    assert.equal((none.body as { url: unknown }).url, null);

    const first = await session.send<{ url: string; secret?: string }>('PUT', `/keys/${keyId}/webhook`, {
      body: { url: hook.url },
    });
    assert.equal(first.status, 200, first.raw);
    assert.equal(first.body.url, hook.url);
    const secret = first.body.secret ?? '';
    assert.match(secret, /^whsec_/, 'the first enablement shows the secret');

    const shown = await session.send<{ url: string; enabled: boolean }>('GET', `/keys/${keyId}/webhook`);
    assert.equal(shown.status, 200, shown.raw);
    assert.deepEqual(shown.body, { url: hook.url, enabled: true });
    assert.ok(!shown.raw.includes(secret), 'GET shows the secret');
    const again = await session.send<{ url: string; secret?: string }>('PUT', `/keys/${keyId}/webhook`, {
      body: { url: hook.url },
    });
    assert.equal(again.status, 200, again.raw);
    assert.equal(again.body.secret, undefined, 'a second PUT does not show the secret again');
    assert.ok(!again.raw.includes(secret));
    const keys = await session.send('GET', '/keys');
    assert.ok(!keys.raw.includes(secret), 'GET /keys shows the webhook secret');

    const jobId = await submitImage(service, created.body.api_key, 'a dashboard fox');
    const [req] = await hook.waitFor(1, JOB_MS);
    assertSigned(req!, secret, { event: 'job.completed' });
    assert.equal((JSON.parse(req!.body.toString('utf8')) as { job_id: string }).job_id, jobId);

    const deliveries = await until(
      'the delivery listed as delivered',
      async () => {
        const answer = await session.send<{ deliveries: Delivery[] }>(
          'GET',
          `/keys/${keyId}/deliveries?limit=10`,
        );
        assert.equal(answer.status, 200, answer.raw);
        return answer.body.deliveries;
      },
      (list) => list.some((d) => d.job_id === jobId && d.state === 'delivered'),
      10_000,
      100,
    );
    assert.equal(deliveries.length, 1);
    const delivery = deliveries[0]!;
    assert.equal(delivery.event, 'job.completed');
    assert.equal(delivery.next_attempt_at, null);
    assert.match(delivery.created_at, ISO);
    assert.deepEqual(
      delivery.attempts.map((a) => [a.attempt, a.url, a.status, a.error]),
      [[1, hook.url, 200, null]],
    );
    assert.equal(delivery.id, req!.headers['x-svc-delivery-id']);

    const cleared = await session.send('DELETE', `/keys/${keyId}/webhook`);
    assert.deepEqual([cleared.status, cleared.body], [200, { cleared: true }]);
    const gone = await session.send<{ url: string | null }>('GET', `/keys/${keyId}/webhook`);
    assert.equal(gone.body.url, null);
  });

  it("shows the balance and the ledger with a job's charge", async () => {
    const user = await newUser('ledger', 1000);
    const session = await signIn(user);
    const start = await session.send('GET', '/balance');
    assert.deepEqual([start.status, start.body], [200, { user_id: user.id, credits: 1000 }]);

    const created = await session.send<{ key: KeyView; api_key: string }>('POST', '/keys', {
      body: { scopes: ['image:write'] },
    });
    assert.equal(created.status, 201, created.raw);
    const jobId = await submitImage(service, created.body.api_key, 'a ledger fox');
    const job = await jobs.waitForEnd(created.body.api_key, jobId, JOB_MS);
    assert.equal(job.status, 'completed', JSON.stringify(job));
    const charge = job.credits_consumed;
    assert.ok(charge > 0, `the job cost ${charge}`);

    const balance = await session.send('GET', '/balance');
    assert.deepEqual([balance.status, balance.body], [200, { user_id: user.id, credits: 1000 - charge }]);
    const current = await session.send<{ user: { credits: number } }>('GET', '/session');
    assert.equal(current.body.user.credits, 1000 - charge);

    const ledger = await session.send<{
      entries: Array<{
        id: string;
        delta: number;
        balance_after: number;
        reason: string;
        job_id?: string;
        created_at: string;
      }>;
    }>('GET', '/ledger');
    assert.equal(ledger.status, 200, ledger.raw);
    const entries = ledger.body.entries;
    assert.equal(entries.length, 2, JSON.stringify(entries));
    const [jobEntry, grant] = entries;
    assert.equal(jobEntry!.job_id, jobId, 'newest first: the job');
    assert.equal(jobEntry!.delta, -charge);
    assert.equal(jobEntry!.balance_after, 1000 - charge);
    assert.match(jobEntry!.created_at, ISO);
    assert.equal(typeof jobEntry!.id, 'string');
    assert.equal(grant!.delta, 1000, 'the opening balance is a grant');
    assert.equal(grant!.balance_after, 1000);
    assert.equal(grant!.job_id ?? null, null);
  });
});

describe('the bearer tokens of POST /token', () => {
  it('work for about 15 minutes on /api/v1 and the events socket, never on the admin API or MCP', async () => {
    const user = await newUser('token', 200);
    const session = await signIn(user);
    const issued = await session.send<{ token: string; expires_at: string }>('POST', '/token');
    assert.equal(issued.status, 200, issued.raw);
    assert.deepEqual(Object.keys(issued.body).sort(), ['expires_at', 'token']);
    const { token, expires_at: expiresAt } = issued.body;
    assert.match(token, /^mfdt_[0-9A-Za-z]+$/);
    assert.notEqual(token, session.cookie);
    assert.match(expiresAt, ISO);
    const minutes = (Date.parse(expiresAt) - Date.now()) / 60_000;
    assert.ok(minutes > 13 && minutes <= 15.1, `the token lasts ${minutes.toFixed(2)} minutes, expected 15`);

    const me = await account(token);
    assert.deepEqual([me.status, me.body], [200, { user_id: user.id, credits: 200 }]);

    // Every scope: the editor, and its events socket with ?access_token= as a browser passes it.
    const project = await call<{ project: { id: string } }>(
      service.url,
      'POST',
      '/api/v1/media-studio/projects',
      { token, body: { name: 'dashboard project' } },
    );
    assert.equal(project.status, 200, JSON.stringify(project.body));
    const projectId = project.body.project.id;
    const socket = await openEventsSocket(service.url, projectId, {
      accessToken: token,
      since: 0,
      origin: new URL(service.url).origin,
    });
    assert.equal(socket.closed, undefined, 'the events socket is open');
    await socket.close();

    // Not an operator.
    for (const path of ['/api/admin/v1/audit?limit=1', `/api/admin/v1/users/${user.id}`])
      assert.equal((await call(service.url, 'GET', path, { token })).status, 401, path);

    // A garbled token is refused everywhere.
    assert.equal((await account(`${token}x`)).status, 401);
    assert.equal((await refusedHandshake(service.url, projectId, { accessToken: `${token}x` })).status, 401);
    // Last, so that it hides nothing else: MCP takes API keys and its own OAuth tokens, not the page's.
    const mcpCall = async (authorization?: string) => {
      const answer = await fetch(`${service.url}/api/mcp`, {
        method: 'POST',
        headers: {
          ...(authorization !== undefined ? { authorization } : {}),
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'dashboard-test', version: '1' },
          },
        }),
      });
      await answer.arrayBuffer();
      return answer.status;
    };
    assert.equal(await mcpCall(), 401, 'MCP without a token');
    assert.equal(await mcpCall(`Bearer ${token}`), 401, 'MCP refuses the dashboard token');
  });

  it('stop working once expired (the stored expiry moved into the past: no 15-minute wait)', async () => {
    const user = await newUser('expiry', 100);
    const session = await signIn(user);
    const token = (await session.send<{ token: string }>('POST', '/token')).body.token;
    assert.equal((await account(token)).status, 200);
    const moved = await db
      .db(DB)
      .collection('session_tokens')
      .updateMany({ user_id: user.id }, { $set: { expires_at: new Date(Date.now() - 60_000) } });
    assert.equal(moved.matchedCount, 1, 'the token is stored in session_tokens (test set-up)');
    // A node trusts a token it has checked for up to 2 s: poll past that.
    await until(
      'the expired token refused',
      async () => (await account(token)).status,
      (status) => status === 401,
      6000,
      200,
    );
    // The session itself goes on, and gives a new token.
    const renewed = await session.send<{ token: string }>('POST', '/token');
    assert.equal(renewed.status, 200, renewed.raw);
    assert.notEqual(renewed.body.token, token);
    assert.equal((await account(renewed.body.token)).status, 200);
  });

  it('stop working when their session signs out', async () => {
    const user = await newUser('signout', 100);
    const session = await signIn(user);
    const other = await signIn(user);
    const tokens = await Promise.all(
      [1, 2].map(async () => (await session.send<{ token: string }>('POST', '/token')).body.token),
    );
    const otherToken = (await other.send<{ token: string }>('POST', '/token')).body.token;
    const project = await call<{ project: { id: string } }>(
      service.url,
      'POST',
      '/api/v1/media-studio/projects',
      { token: tokens[0], body: { name: 'to sign out of' } },
    );
    assert.equal(project.status, 200, JSON.stringify(project.body));
    for (const token of [...tokens, otherToken]) assert.equal((await account(token)).status, 200);

    const out = await session.browser.postForm('/sign-out', { csrf_token: session.csrf });
    assert.equal(out.status, 303, out.text);
    assert.equal(out.location, '/sign-in');
    for (const token of tokens) {
      await until(
        'the token refused after sign-out',
        async () => (await account(token)).status,
        (status) => status === 401,
        5000,
        100,
      );
      const refused = await refusedHandshake(service.url, project.body.project.id, { accessToken: token });
      assert.equal(refused.status, 401, JSON.stringify(refused.body));
    }
    const gone = await session.send('GET', '/session');
    assert.deepEqual([gone.status, gone.body], [401, { error: NOT_SIGNED_IN }]);
    // The other session and its token are untouched.
    assert.equal((await account(otherToken)).status, 200, "the other session's token");
    assert.equal((await other.send('GET', '/session')).status, 200);
    // A signed-out session cannot get a new token.
    const again = await session.send('POST', '/token');
    assert.equal(again.status, 401, again.raw);
  });

  it('stop working after sign-out everywhere from another session', async () => {
    const user = await newUser('everywhere', 100);
    const bystander = await newUser('bystander', 100);
    const laptop = await signIn(user);
    const phone = await signIn(user);
    const stranger = await signIn(bystander);
    const laptopToken = (await laptop.send<{ token: string }>('POST', '/token')).body.token;
    const phoneToken = (await phone.send<{ token: string }>('POST', '/token')).body.token;
    const strangerToken = (await stranger.send<{ token: string }>('POST', '/token')).body.token;
    for (const token of [laptopToken, phoneToken, strangerToken])
      assert.equal((await account(token)).status, 200);

    const out = await phone.browser.postForm('/sign-out-everywhere', { csrf_token: phone.csrf });
    assert.equal(out.status, 303, out.text);
    for (const token of [laptopToken, phoneToken])
      await until(
        'the token refused after sign-out everywhere',
        async () => (await account(token)).status,
        (status) => status === 401,
        5000,
        100,
      );
    for (const session of [laptop, phone]) {
      const answer = await session.send('GET', '/session');
      assert.equal(answer.status, 401, answer.raw);
    }
    assert.equal((await account(strangerToken)).status, 200, "another user's token still works");
    assert.equal((await stranger.send('GET', '/session')).status, 200);
  });
});

describe('the audit log', () => {
  it("records session API and token requests under the session's ses_ id, never the cookie or the token", async () => {
    const user = await newUser('audit', 100);
    const session = await signIn(user);
    const other = await signIn(user);
    const cookie = session.cookie;
    assert.equal((await session.send('GET', '/keys')).status, 200);
    assert.equal((await session.send('GET', '/balance')).status, 200);
    const issued = await session.send<{ token: string }>('POST', '/token');
    assert.equal(issued.status, 200, issued.raw);
    const token = issued.body.token;
    assert.equal((await account(token)).status, 200);
    assert.equal((await other.send('GET', '/ledger')).status, 200);

    type Entry = { key_id: string | null; user_id: string | null; method: string; path: string };
    const wanted = (entries: Entry[]) =>
      entries.some((e) => e.path === '/api/v1/account') &&
      entries.some((e) => e.path === `${API}/token`) &&
      entries.some((e) => e.path === `${API}/ledger`);
    let raw = '';
    const mine = await until(
      "the user's requests in the audit log",
      async () => {
        const answer = await fetch(`${service.url}/api/admin/v1/audit?limit=1000&kind=request`, {
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
        });
        raw = await answer.text();
        assert.equal(answer.status, 200, raw);
        return (JSON.parse(raw) as { entries: Entry[] }).entries.filter((e) => e.user_id === user.id);
      },
      wanted,
      10_000,
      200,
    );
    for (const entry of mine) assert.match(entry.key_id ?? '', /^ses_/, JSON.stringify(entry));
    const keyOf = (path: string) => mine.find((e) => e.path === path)?.key_id;
    const sessionId = keyOf(`${API}/token`);
    assert.equal(keyOf(`${API}/keys`), sessionId);
    assert.equal(keyOf(`${API}/balance`), sessionId);
    assert.equal(keyOf('/api/v1/account'), sessionId, "a token request is under its session's id");
    assert.notEqual(keyOf(`${API}/ledger`), sessionId, 'another session has another id');

    assert.ok(!raw.includes(cookie), 'the audit log holds the session cookie');
    assert.ok(!raw.includes(other.cookie), 'the audit log holds the session cookie');
    assert.ok(!raw.includes(token), 'the audit log holds the bearer token');
    assert.ok(!raw.includes(token.slice(5)), 'the audit log holds the bearer token');
    assert.ok(!raw.includes(cookie.slice(4, 24)), 'the audit log holds part of the session cookie');
  });

  it('no session API answer echoes the session cookie (headers or body), errors included', async () => {
    const user = await newUser('echo', 100);
    const session = await signIn(user);
    const key = (await session.send<{ key: KeyView }>('POST', '/keys', { body: { scopes: ['image:write'] } }))
      .body.key;
    // Session.send checks every answer; these cover successes, refusals and bad requests.
    const calls: Array<[string, string, { body?: unknown; csrf?: string | null; origin?: string | null }]> = [
      ['GET', '/session', {}],
      ['POST', '/token', {}],
      ['GET', '/keys', {}],
      ['GET', `/keys/${key.id}/webhook`, {}],
      ['GET', `/keys/${key.id}/deliveries?limit=5`, {}],
      ['GET', '/balance', {}],
      ['GET', '/ledger', {}],
      ['POST', '/keys', { body: { scopes: ['no-such-scope'] } }],
      ['POST', '/keys', { body: { scopes: ['image:write'] }, csrf: null }],
      ['PUT', `/keys/${key.id}/webhook`, { body: { url: 'not a url' } }],
      ['GET', '/keys/key_doesnotexist000/webhook', {}],
      ['GET', '/nothing-here', {}],
    ];
    const statuses: number[] = [];
    for (const [method, path, options] of calls)
      statuses.push((await session.send(method, path, options)).status);
    assert.deepEqual(statuses.slice(0, 7), [200, 200, 200, 200, 200, 200, 200]);
    assert.equal(statuses[7], 400);
    assert.equal(statuses[8], 403);
    assert.equal(statuses[9], 400);
    assert.equal(statuses[10], 404);
    assert.equal(statuses[11], 404);
  });
});
