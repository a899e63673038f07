import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, type ApiAnswer, type RunningService } from '../helpers/service.ts';

const MISSING = 'Missing Authorization header';
const INVALID = 'Invalid or revoked API key';
/** Well-formed (`mf_` + 43 base62 characters) but never issued. */
const UNKNOWN_KEY = `mf_${'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'.slice(0, 43)}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const AUTH_FAILURES = 5;

let mongo: TestMongo;
/** Default settings: the 401 messages, revocation, admin token, request ids. */
let service: RunningService;
/** AUTH_FAILURES_PER_MINUTE=5, TRUST_PROXY unset: the block on the socket address. */
let limited: RunningService;
/** AUTH_FAILURES_PER_MINUTE=5, TRUST_PROXY unset: X-Forwarded-For must not split the count. */
let untrusted: RunningService;
/** AUTH_FAILURES_PER_MINUTE=5, TRUST_PROXY=true: counted per forwarded address. */
let proxied: RunningService;

before(async () => {
  mongo = await startMongo();
  const failures = String(AUTH_FAILURES);
  [service, limited, untrusted, proxied] = await Promise.all([
    startService({ MONGO_URL: mongo.uri, MONGO_DB: 'mf_auth_default' }),
    startService({ MONGO_URL: mongo.uri, MONGO_DB: 'mf_auth_limited', AUTH_FAILURES_PER_MINUTE: failures }),
    startService({ MONGO_URL: mongo.uri, MONGO_DB: 'mf_auth_untrusted', AUTH_FAILURES_PER_MINUTE: failures }),
    startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: 'mf_auth_proxied',
      AUTH_FAILURES_PER_MINUTE: failures,
      TRUST_PROXY: 'true',
    }),
  ]);
});

after(async () => {
  await Promise.all([service?.stop(), limited?.stop(), untrusted?.stop(), proxied?.stop()]);
  await mongo?.stop();
});

/** A fresh user with one key on the given service. */
async function newKey(target: RunningService, email: string): Promise<{ id: string; apiKey: string }> {
  const admin = adminClient(target);
  const userId = await admin.createUser(email, 0);
  return admin.createKey(userId);
}

/** Asserts an error answer: the status, a JSON content type and a body that is exactly `{ error: message }`. */
function assertError(answer: ApiAnswer, status: number, message: string): void {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(answer.body, { error: message });
}

/** Asserts a 429 with an integer `Retry-After` of at most a minute and a body holding only `error`. */
function assertBlocked(answer: ApiAnswer): void {
  assert.equal(answer.status, 429, JSON.stringify(answer.body));
  assert.deepEqual(Object.keys(answer.body), ['error']);
  assert.equal(typeof answer.body.error, 'string');
  const retryAfter = answer.headers.get('retry-after');
  assert.match(retryAfter ?? '', /^\d+$/, `Retry-After: ${retryAfter}`);
  assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After: ${retryAfter}`);
}

const models = (target: RunningService, headers: Record<string, string> = {}, token?: string) =>
  call(target.url, 'GET', '/api/v1/models', { headers, ...(token !== undefined ? { token } : {}) });

describe('API key authentication', () => {
  it('answers 401 Missing Authorization header when no Authorization header is sent', async () => {
    assertError(await models(service), 401, MISSING);
  });

  it('answers 401 Missing Authorization header when the Authorization header is empty', async () => {
    assertError(await models(service, { authorization: '' }), 401, MISSING);
  });

  it('answers 401 Invalid or revoked API key for a scheme other than Bearer, even around a valid key', async () => {
    const key = await newKey(service, 'scheme@example.com');
    assertError(await models(service, { authorization: 'Basic dXNlcjpwYXNzd29yZA==' }), 401, INVALID);
    assertError(await models(service, { authorization: `Token ${key.apiKey}` }), 401, INVALID);
    assertError(await models(service, { authorization: key.apiKey }), 401, INVALID);
  });

  it('answers 401 Invalid or revoked API key for a malformed key', async () => {
    assertError(await models(service, {}, 'mf_short'), 401, INVALID);
    assertError(await models(service, {}, 'not-a-key'), 401, INVALID);
  });

  it('answers 401 Invalid or revoked API key for a well-formed key that was never issued', async () => {
    assert.match(UNKNOWN_KEY, /^mf_[0-9A-Za-z]{43}$/);
    assertError(await models(service, {}, UNKNOWN_KEY), 401, INVALID);
  });

  it('accepts a key until it is revoked and answers 401 Invalid or revoked API key right after', async () => {
    const key = await newKey(service, 'revoked@example.com');
    assert.equal((await models(service, {}, key.apiKey)).status, 200);
    const revoked = await adminClient(service).call('DELETE', `/keys/${key.id}`);
    assert.equal(revoked.status, 200);
    assert.deepEqual(revoked.body, { id: key.id, revoked: true });
    assertError(await models(service, {}, key.apiKey), 401, INVALID);
    assertError(await call(service.url, 'GET', '/api/v1/account', { token: key.apiKey }), 401, INVALID);
  });

  it('accepts the Bearer scheme whatever its letter case', async () => {
    const key = await newKey(service, 'case@example.com');
    const answer = await models(service, { authorization: `bearer ${key.apiKey}` });
    assert.equal(answer.status, 200);
  });

  it('authenticates unknown /api/v1 paths before answering 404', async () => {
    assertError(await call(service.url, 'GET', '/api/v1/no-such-thing'), 401, MISSING);
    const key = await newKey(service, 'unknown-path@example.com');
    assert.equal(
      (await call(service.url, 'GET', '/api/v1/no-such-thing', { token: key.apiKey })).status,
      404,
    );
  });
});

describe('admin API authentication', () => {
  it('answers 401 with an error body when no admin token is sent', async () => {
    const answer = await call(service.url, 'GET', '/api/admin/v1/users');
    assert.equal(answer.status, 401);
    assert.deepEqual(Object.keys(answer.body), ['error']);
    assert.equal(typeof answer.body.error, 'string');
  });

  it('answers 401 with an error body for a wrong admin token or an API key in its place', async () => {
    const key = await newKey(service, 'not-admin@example.com');
    for (const token of ['wrong-admin-token', `${service.adminToken}x`, key.apiKey]) {
      const answer = await call(service.url, 'GET', '/api/admin/v1/users', { token });
      assert.equal(answer.status, 401, token);
      assert.deepEqual(Object.keys(answer.body), ['error']);
      assert.equal(typeof answer.body.error, 'string');
    }
  });

  it('refuses a request that would change data without the admin token', async () => {
    const answer = await call(service.url, 'POST', '/api/admin/v1/users', {
      token: 'wrong-admin-token',
      body: { email: 'intruder@example.com', credits: 1000 },
    });
    assert.equal(answer.status, 401);
    const listed = await adminClient(service).call<{ users: Array<{ email: string }> }>(
      'GET',
      '/users?limit=100',
    );
    assert.equal(listed.status, 200);
    assert.ok(!listed.body.users.some((u) => u.email === 'intruder@example.com'));
  });
});

describe('request ids', () => {
  it('echoes a valid X-Request-Id sent by the client, on success and on 401', async () => {
    const key = await newKey(service, 'reqid@example.com');
    const ok = await models(service, { 'x-request-id': 'client-req_42.a:b' }, key.apiKey);
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('x-request-id'), 'client-req_42.a:b');
    const refused = await models(service, { 'x-request-id': 'client-req-43' });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('x-request-id'), 'client-req-43');
  });

  it('generates a distinct UUID request id when the client sends none', async () => {
    const first = await models(service);
    const second = await models(service);
    const a = first.headers.get('x-request-id') ?? '';
    const b = second.headers.get('x-request-id') ?? '';
    assert.match(a, UUID);
    assert.match(b, UUID);
    assert.notEqual(a, b);
  });

  it('replaces an X-Request-Id that is too long or has forbidden characters with a generated one', async () => {
    for (const given of ['has spaces in it', 'x'.repeat(129), 'semi;colon', 'quote"d']) {
      const answer = await models(service, { 'x-request-id': given });
      assert.match(answer.headers.get('x-request-id') ?? '', UUID, given);
    }
    const longest = 'y'.repeat(128);
    assert.equal((await models(service, { 'x-request-id': longest })).headers.get('x-request-id'), longest);
  });
});

describe('failed-authentication limit per client address (AUTH_FAILURES_PER_MINUTE=5)', () => {
  it('answers 429 with an integer Retry-After on the 6th failed attempt and refuses a valid key from that address', async () => {
    const key = await newKey(limited, 'blocked@example.com');
    assert.equal((await models(limited, {}, key.apiKey)).status, 200);
    for (let attempt = 1; attempt <= AUTH_FAILURES; attempt++) {
      assertError(await models(limited, {}, UNKNOWN_KEY), 401, INVALID);
    }
    assertBlocked(await models(limited, {}, UNKNOWN_KEY));
    // While the block lasts, even a valid key from that address is refused.
    assertBlocked(await models(limited, {}, key.apiKey));
    assertBlocked(await call(limited.url, 'GET', '/api/v1/account', { token: key.apiKey }));
  });

  it('ignores X-Forwarded-For without TRUST_PROXY: failures under different forwarded addresses add up', async () => {
    const key = await newKey(untrusted, 'untrusted@example.com');
    for (let attempt = 1; attempt <= AUTH_FAILURES; attempt++) {
      const answer = await models(untrusted, { 'x-forwarded-for': `198.51.100.${attempt}` }, UNKNOWN_KEY);
      assertError(answer, 401, INVALID);
    }
    assertBlocked(await models(untrusted, { 'x-forwarded-for': '198.51.100.77' }, UNKNOWN_KEY));
    assertBlocked(await models(untrusted, { 'x-forwarded-for': '198.51.100.78' }, key.apiKey));
    assertBlocked(await models(untrusted, {}, key.apiKey));
  });
});

describe('failed-authentication limit with TRUST_PROXY=true', () => {
  it('counts failures per X-Forwarded-For address: a blocked address does not block another', async () => {
    const key = await newKey(proxied, 'proxied@example.com');
    const blocked = { 'x-forwarded-for': '203.0.113.10' };
    const other = { 'x-forwarded-for': '203.0.113.20' };
    for (let attempt = 1; attempt <= AUTH_FAILURES; attempt++) {
      assertError(await models(proxied, blocked, UNKNOWN_KEY), 401, INVALID);
    }
    assertBlocked(await models(proxied, blocked, UNKNOWN_KEY));
    assertBlocked(await models(proxied, blocked, key.apiKey));
    // Another forwarded address, and the proxy's own socket address, are still served.
    assertError(await models(proxied, other, UNKNOWN_KEY), 401, INVALID);
    assert.equal((await models(proxied, other, key.apiKey)).status, 200);
    assert.equal((await models(proxied, {}, key.apiKey)).status, 200);
  });

  it('takes the right-most X-Forwarded-For entry, so an address a client prepends does not escape a block', async () => {
    const key = await newKey(proxied, 'prepended@example.com');
    for (let attempt = 1; attempt <= AUTH_FAILURES; attempt++) {
      const answer = await models(
        proxied,
        { 'x-forwarded-for': `10.0.0.${attempt}, 203.0.113.30` },
        UNKNOWN_KEY,
      );
      assertError(answer, 401, INVALID);
    }
    assertBlocked(await models(proxied, { 'x-forwarded-for': '10.9.9.9, 203.0.113.30' }, key.apiKey));
    assertBlocked(await models(proxied, { 'x-forwarded-for': '203.0.113.30' }, key.apiKey));
    assert.equal(
      (await models(proxied, { 'x-forwarded-for': '203.0.113.30, 203.0.113.31' }, key.apiKey)).status,
      200,
    );
  });
});
