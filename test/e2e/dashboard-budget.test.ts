// The dashboard's own rate budget, its not-found page and its test deliveries, end to end (docs/dashboard.md
// "Rate limits", "Pages that do not exist"; docs/webhooks.md "Test deliveries"): the service as a process, a
// browser signed in through /sign-in (a cookie jar over fetch), its bearer token used on /api/v1 as the page
// uses it, an API key of the same user used as any client would, and a real webhook receiver on loopback.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net, { type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, type RunningService } from '../helpers/service.ts';
import { Browser } from '../helpers/browser-form.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { assertSigned, type Delivery } from '../helpers/webhooks.ts';
import { openEventsSocket } from '../helpers/events-socket.ts';
import { sleep } from '../helpers/wait.ts';

const API = '/api/dashboard/v1';
/** The defaults the first service runs with: an API key's budget and a session's. */
const KEY_BUDGET = 60;
const SESSION_BUDGET = 600;
/** The second service's session budget, low enough to meet. */
const LOW_SESSION_BUDGET = 20;
const REBIND_NAME = 'rebind.mediaforge.test';
/** The second service's recheck of open events sockets (keys, tokens, projects). */
const RECHECK_MS = 200;
const PRELOAD = fileURLToPath(new URL('../helpers/rebinding-dns.preload.mjs', import.meta.url));

let mongo: TestMongo;
/** Default budgets, private webhook targets allowed (the receiver is on loopback). */
let service: RunningService;
/** DASHBOARD_RATE_PER_MINUTE=20; private targets refused, one name rebinding to loopback after its first lookup. */
let strict: RunningService;
const receivers: WebhookReceiver[] = [];

before(async () => {
  mongo = await startMongo();
  [service, strict] = await Promise.all([
    startService({ MONGO_URL: mongo.uri, MONGO_DB: 'dashboard_budget', WEBHOOK_ALLOW_PRIVATE: 'true' }),
    startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: 'dashboard_budget_strict',
      DASHBOARD_RATE_PER_MINUTE: String(LOW_SESSION_BUDGET),
      NODE_OPTIONS: `--import ${PRELOAD}`,
      MF_TEST_REBIND_NAME: REBIND_NAME,
      WEBHOOK_TIMEOUT_MS: '1000',
      WS_RECHECK_MS: String(RECHECK_MS),
    }),
  ]);
});

after(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await Promise.all([service?.stop(), strict?.stop()]);
  await mongo?.stop();
});

async function receiver(answers: number[] = []): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver(answers);
  receivers.push(started);
  return started;
}

/** One answer, its body parsed when it is JSON. */
interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
}

/** A browser signed in as a new user (with one API key made by the admin), and the page's calls. */
class SignedIn {
  private csrf = '';
  private token = '';

  private constructor(
    readonly target: RunningService,
    readonly browser: Browser,
    readonly user: { id: string; email: string; password: string },
  ) {}

  get userId(): string {
    return this.user.id;
  }

  /** The session's CSRF token (the sign-out form carries it). */
  get csrfToken(): string {
    return this.csrf;
  }

  static async start(target: RunningService, label: string): Promise<SignedIn> {
    const admin = adminClient(target);
    const email = `${label}-${randomBytes(4).toString('hex')}@example.com`;
    const password = `pass-${randomBytes(8).toString('hex')}`;
    const userId = await admin.createUser(email, 1000);
    const set = await admin.call('POST', `/users/${userId}/password`, { password });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    return SignedIn.as(target, { id: userId, email, password });
  }

  /** A browser signed in as the user (another session when the user has one already). */
  static async as(target: RunningService, user: { id: string; email: string; password: string }) {
    const browser = new Browser(target.url);
    const page = await browser.postForm('/sign-in', {
      email: user.email,
      password: user.password,
      next: '/keys',
    });
    assert.equal(page.status, 303, `sign-in: ${page.status} ${page.text.slice(0, 200)}`);
    const signedIn = new SignedIn(target, browser, user);
    const session = await signedIn.dash<{ csrf_token: string }>('GET', '/session');
    assert.equal(session.status, 200, JSON.stringify(session.body));
    signedIn.csrf = session.body.csrf_token;
    return signedIn;
  }

  /** A session API call as the page makes it (CSRF token and own Origin on a change, unless told otherwise). */
  async dash<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: { body?: unknown; csrf?: string | null; origin?: string | null } = {},
  ): Promise<Answer<T>> {
    const change = method !== 'GET';
    const csrf = options.csrf === undefined ? (change ? this.csrf : null) : options.csrf;
    const page = await this.browser.request(method, `${API}${path}`, {
      headers: csrf === null ? {} : { 'x-csrf-token': csrf },
      ...(options.origin !== undefined ? { origin: options.origin } : {}),
      ...(options.body !== undefined
        ? { body: JSON.stringify(options.body), contentType: 'application/json' }
        : {}),
    });
    return { status: page.status, headers: page.headers, body: JSON.parse(page.text || 'null') as T };
  }

  /** The session's bearer token, fetched once (the page keeps it). */
  async bearer(): Promise<string> {
    if (!this.token) {
      const issued = await this.dash<{ token: string }>('POST', '/token');
      assert.equal(issued.status, 200, JSON.stringify(issued.body));
      this.token = issued.body.token;
    }
    return this.token;
  }

  /** GET /api/v1/account with the session's bearer token. */
  async v1Account(): Promise<Answer<{ error?: string }>> {
    return call(this.target.url, 'GET', '/api/v1/account', { token: await this.bearer() });
  }
}

const account = (target: RunningService, apiKey: string) =>
  call<{ error?: string }>(target.url, 'GET', '/api/v1/account', { token: apiKey });

function assertRateLimited(answer: Answer<{ error?: string }>, label: string): void {
  assert.equal(answer.status, 429, `${label}: ${answer.status} ${JSON.stringify(answer.body)}`);
  assert.deepEqual(answer.body, { error: 'Rate limit exceeded' }, label);
  const retryAfter = Number(answer.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `${label}: ${retryAfter}`);
}

describe("the dashboard's rate budget", () => {
  it("lets a session make 200 requests in a minute while the user's API key still gets exactly its 60", async () => {
    const page = await SignedIn.start(service, 'budget');
    const key = await adminClient(service).createKey(page.userId);
    const started = Date.now();

    // Half of the key's budget, then 200 requests of the page, then the other half: the page's requests
    // must not have used any of it.
    for (let i = 0; i < KEY_BUDGET / 2; i++) {
      const answer = await account(service, key.apiKey);
      assert.equal(answer.status, 200, `key request ${i + 1}: ${JSON.stringify(answer.body)}`);
    }
    const sessionPaths = ['/balance', '/keys', '/ledger', '/session'];
    let lastRemaining = Infinity;
    for (let i = 0; i < 200; i++) {
      if (i % 2 === 0) {
        const answer = await page.dash('GET', sessionPaths[(i / 2) % sessionPaths.length]!);
        assert.equal(answer.status, 200, `page request ${i + 1}: ${JSON.stringify(answer.body)}`);
      } else {
        const answer = await page.v1Account();
        assert.equal(answer.status, 200, `page request ${i + 1}: ${JSON.stringify(answer.body)}`);
        // /api/v1 answers show the session's budget, not the key's.
        assert.equal(answer.headers.get('x-ratelimit-limit'), String(SESSION_BUDGET));
        const remaining = Number(answer.headers.get('x-ratelimit-remaining'));
        assert.ok(remaining < lastRemaining, `remaining falls: ${remaining} after ${lastRemaining}`);
        lastRemaining = remaining;
      }
    }
    // Every request counted once against the session: the sign-in's /session, /token, and these 200.
    assert.equal(lastRemaining, SESSION_BUDGET - 2 - 200);

    let last: Answer<{ error?: string }> | undefined;
    for (let i = KEY_BUDGET / 2; i < KEY_BUDGET; i++) {
      last = await account(service, key.apiKey);
      assert.equal(last.status, 200, `key request ${i + 1}: ${JSON.stringify(last.body)}`);
    }
    assert.equal(last!.headers.get('x-ratelimit-limit'), String(KEY_BUDGET));
    assert.equal(last!.headers.get('x-ratelimit-remaining'), '0');
    assertRateLimited(await account(service, key.apiKey), `key request ${KEY_BUDGET + 1}`);
    // The key's 429 is the key's alone: the page goes on.
    assert.equal((await page.v1Account()).status, 200);
    assert.equal((await page.dash('GET', '/balance')).status, 200);
    assert.ok(Date.now() - started < 60_000, 'all within one minute');
  });

  it('refuses a session past DASHBOARD_RATE_PER_MINUTE on the session API and its token alike', async () => {
    const page = await SignedIn.start(strict, 'low');
    const key = await adminClient(strict).createKey(page.userId);
    // Sign-in's GET /session was one; POST /token (in the first v1Account) another.
    let used = 1;
    for (let i = 0; used < LOW_SESSION_BUDGET; i++) {
      const answer = i % 2 === 0 ? await page.v1Account() : await page.dash('GET', '/balance');
      used += i === 0 ? 2 : 1;
      assert.equal(answer.status, 200, `request ${used}: ${JSON.stringify(answer.body)}`);
    }
    const refusedV1 = await page.v1Account();
    assertRateLimited(refusedV1, 'bearer token past the budget');
    assert.equal(refusedV1.headers.get('x-ratelimit-limit'), String(LOW_SESSION_BUDGET));
    assert.equal(refusedV1.headers.get('x-ratelimit-remaining'), '0');
    assertRateLimited(await page.dash('GET', '/balance'), 'session API past the budget');
    assertRateLimited(
      await page.dash('POST', '/keys', { body: { name: 'late', scopes: [] } }),
      'a change past the budget',
    );

    // The budget is the session's: the user's API key keeps its own, and so does another session.
    const keyAnswer = await account(strict, key.apiKey);
    assert.equal(keyAnswer.status, 200, JSON.stringify(keyAnswer.body));
    assert.equal(keyAnswer.headers.get('x-ratelimit-limit'), String(KEY_BUDGET));
    const other = await SignedIn.as(strict, page.user);
    assert.equal((await other.dash('GET', '/balance')).status, 200);
    assert.equal((await other.v1Account()).status, 200);
  });
});

describe("the dashboard's events sockets", () => {
  it('stay open across rechecks while the session lasts, and close with 1008 when it ends', async () => {
    const page = await SignedIn.start(strict, 'socket');
    const token = await page.bearer();
    const project = await call<{ project: { id: string } }>(
      strict.url,
      'POST',
      '/api/v1/media-studio/projects',
      {
        token,
        body: { name: 'sockets' },
      },
    );
    assert.equal(project.status, 200, JSON.stringify(project.body));
    const socket = await openEventsSocket(strict.url, project.body.project.id, {
      accessToken: token,
      origin: new URL(strict.url).origin,
    });
    await sleep(RECHECK_MS * 8); // a wait for nothing: the socket must not be closed by any recheck
    assert.equal(socket.closed, undefined, 'the socket outlived several rechecks');

    const signedOut = await page.browser.postForm('/sign-out', { csrf_token: page.csrfToken });
    assert.equal(signedOut.status, 303, signedOut.text.slice(0, 200));
    assert.deepEqual(await socket.waitForClose(5_000), {
      code: 1008,
      reason: 'Session token expired or revoked',
    });
  });
});

describe('paths the dashboard does not have', () => {
  for (const path of ['/nope', '/editor/nope/deeper', '/keys/extra']) {
    it(`answers a browser at ${path} with the application's page and 404`, async () => {
      const page = await fetch(`${service.url}${path}`, { headers: { accept: 'text/html,*/*;q=0.8' } });
      assert.equal(page.status, 404);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(page.headers.get('cache-control'), 'no-cache');
      assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
      const home = await (await fetch(`${service.url}/keys`)).text();
      assert.equal(await page.text(), home, 'the same application page');
    });
  }

  it('keeps JSON 404s for API clients and for the API, file and asset paths', async () => {
    const html = { accept: 'text/html' };
    for (const [path, headers] of [
      ['/nope', {}],
      ['/nope', { accept: 'application/json' }],
      ['/api/nope', html],
      ['/media/nope/deeper', html],
      ['/assets/nope.js', html],
      ['/.well-known/nope', html],
    ] as const) {
      const answer = await fetch(`${service.url}${path}`, { headers });
      assert.equal(answer.status, 404, path);
      assert.match(answer.headers.get('content-type') ?? '', /^application\/json/, path);
      assert.deepEqual(await answer.json(), { error: 'Not found' }, path);
    }
    const api = await call(service.url, 'GET', '/api/dashboard/v1/nope', {
      headers: { accept: 'text/html' },
    });
    assert.equal(api.status, 401, 'the session API authenticates before any 404');
  });
});

describe('test deliveries', () => {
  /** A signed-in user whose key has a webhook to `url`, and the secret shown when it was set. */
  async function hooked(target: RunningService, url: string) {
    const page = await SignedIn.start(target, 'hook');
    const created = await page.dash<{ key: { id: string } }>('POST', '/keys', {
      body: { name: 'hooked', scopes: ['image:write'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const keyId = created.body.key.id;
    const set = await page.dash<{ secret: string }>('PUT', `/keys/${keyId}/webhook`, { body: { url } });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    return { page, keyId, secret: set.body.secret };
  }

  it('signs and sends one sample job.completed marked as a test, and lists it in the delivery log', async () => {
    const hook = await receiver();
    const { page, keyId, secret } = await hooked(service, hook.url);

    // Refused without the CSRF token or from a foreign origin: nothing is sent.
    const path = `/keys/${keyId}/webhook/test`;
    const noCsrf = await page.dash('POST', path, { csrf: null });
    assert.equal(noCsrf.status, 403, JSON.stringify(noCsrf.body));
    assert.deepEqual(noCsrf.body, { error: 'Missing or wrong X-CSRF-Token header' });
    const foreign = await page.dash('POST', path, { origin: 'https://evil.example' });
    assert.equal(foreign.status, 403, JSON.stringify(foreign.body));
    assert.deepEqual(foreign.body, {
      error: 'A change must come from this site: the Origin header is missing or foreign',
    });
    const noOrigin = await page.dash('POST', path, { origin: null });
    assert.equal(noOrigin.status, 403, JSON.stringify(noOrigin.body));
    assert.equal(hook.requests.length, 0, 'a refused test sent nothing');

    const sent = await page.dash<{ delivery: Delivery }>('POST', path);
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const { delivery } = sent.body;
    assert.match(delivery.id, /^dlv_test_[0-9A-Za-z]{16}$/);
    assert.match(delivery.job_id, /^job_test_[0-9A-Za-z]{16}$/);
    assert.equal(delivery.event, 'job.completed');
    assert.equal(delivery.state, 'delivered');
    assert.equal(delivery.next_attempt_at, null);
    assert.deepEqual(
      delivery.attempts.map((a) => [a.attempt, a.url, a.status, a.error]),
      [[1, hook.url, 200, null]],
    );

    assert.equal(hook.requests.length, 1, 'sent once');
    const request = hook.requests[0]!;
    assertSigned(request, secret, { event: 'job.completed', label: 'test delivery' });
    assert.equal(request.headers['x-svc-delivery-id'], delivery.id);
    const body = JSON.parse(request.body.toString('utf8')) as Record<string, unknown>;
    assert.equal(body.test, true);
    assert.equal(body.job_id, delivery.job_id);
    assert.equal(body.status, 'completed');
    assert.equal(body.error, null);
    for (const field of ['model', 'type', 'credits_consumed', 'created_at', 'completed_at', 'result'])
      assert.ok(field in body, `the body has ${field}: ${JSON.stringify(body)}`);

    const log = await page.dash<{ deliveries: Delivery[] }>('GET', `/keys/${keyId}/deliveries?limit=5`);
    assert.equal(log.status, 200);
    assert.deepEqual(log.body.deliveries, [delivery]);
  });

  it('records a refused test as failed after one attempt, and answers 404 and 409 as it should', async () => {
    const hook = await receiver([500]);
    const { page, keyId } = await hooked(service, hook.url);
    const sent = await page.dash<{ delivery: Delivery }>('POST', `/keys/${keyId}/webhook/test`);
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.equal(sent.body.delivery.state, 'failed', 'a test is never retried');
    assert.deepEqual(
      sent.body.delivery.attempts.map((a) => [a.status, a.error]),
      [[500, null]],
    );
    assert.equal(hook.requests.length, 1);

    // Through the admin API too: any key, by the operator.
    const byAdmin = await adminClient(service).call<{ delivery: Delivery }>(
      'POST',
      `/keys/${keyId}/webhook/test`,
    );
    assert.equal(byAdmin.status, 200, JSON.stringify(byAdmin.body));
    assert.equal(byAdmin.body.delivery.state, 'delivered');
    assert.equal(hook.requests.length, 2);

    const log = await page.dash<{ deliveries: Delivery[] }>('GET', `/keys/${keyId}/deliveries?limit=5`);
    assert.deepEqual(
      log.body.deliveries.map((d) => [d.id, d.state]),
      [
        [byAdmin.body.delivery.id, 'delivered'],
        [sent.body.delivery.id, 'failed'],
      ],
    );

    const cleared = await page.dash('DELETE', `/keys/${keyId}/webhook`);
    assert.equal(cleared.status, 200);
    const none = await page.dash('POST', `/keys/${keyId}/webhook/test`);
    assert.equal(none.status, 409, JSON.stringify(none.body));
    assert.deepEqual(none.body, { error: 'This key has no webhook URL: set one first' });

    const stranger = await SignedIn.start(service, 'stranger');
    const theirs = await stranger.dash('POST', `/keys/${keyId}/webhook/test`);
    assert.equal(theirs.status, 404, JSON.stringify(theirs.body));
    assert.deepEqual(theirs.body, { error: 'API key not found' });
    const unknown = await adminClient(service).call('POST', '/keys/key_doesnotexist000/webhook/test');
    assert.equal(unknown.status, 404);
    assert.equal(hook.requests.length, 2, 'nothing more was sent');
  });

  it('refuses a private address at delivery unless WEBHOOK_ALLOW_PRIVATE', async () => {
    // What the name rebinds to: a listener on loopback that must never see a connection.
    let connections = 0;
    const loopback = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => loopback.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = loopback.address() as AddressInfo;
      const { page, keyId } = await hooked(strict, `https://${REBIND_NAME}:${port}/hook`);
      // The name's first lookup is a public address (unreachable here); every later one is loopback.
      const first = await page.dash<{ delivery: Delivery }>('POST', `/keys/${keyId}/webhook/test`);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const second = await page.dash<{ delivery: Delivery }>('POST', `/keys/${keyId}/webhook/test`);
      assert.equal(second.status, 200, JSON.stringify(second.body));
      assert.equal(second.body.delivery.state, 'failed');
      assert.deepEqual(
        second.body.delivery.attempts.map((a) => [a.status, a.error]),
        [[null, 'the URL points to a private or local address']],
      );
      assert.equal(connections, 0, 'loopback was never reached');
    } finally {
      await new Promise<void>((resolve) => loopback.close(() => resolve()));
    }
  });
});
