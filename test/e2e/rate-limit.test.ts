import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, type ApiAnswer, type RunningService } from '../helpers/service.ts';

const LIMIT = 60;

let mongo: TestMongo;
let service: RunningService;
let users = 0;

before(async () => {
  mongo = await startMongo();
  service = await startService({ MONGO_URL: mongo.uri }); // RATE_LIMIT_PER_MINUTE left at its default
});

after(async () => {
  await service?.stop();
  await mongo?.stop();
});

/** A fresh user with `count` keys. */
async function newKeys(count: number): Promise<string[]> {
  const admin = adminClient(service);
  const userId = await admin.createUser(`rate-${++users}@example.com`, 0);
  const keys: string[] = [];
  for (let i = 0; i < count; i++) keys.push((await admin.createKey(userId)).apiKey);
  return keys;
}

const get = (path: string, token?: string) =>
  call(service.url, 'GET', path, token === undefined ? {} : { token });

/** The three X-RateLimit headers as integers; fails when one is missing or not an integer. */
function rateLimitHeaders(answer: ApiAnswer): { limit: number; remaining: number; reset: number } {
  const read = (name: string) => {
    const value = answer.headers.get(name);
    assert.match(value ?? '', /^\d+$/, `${name}: ${value} (status ${answer.status})`);
    return Number(value);
  };
  return {
    limit: read('x-ratelimit-limit'),
    remaining: read('x-ratelimit-remaining'),
    reset: read('x-ratelimit-reset'),
  };
}

const nowSeconds = () => Date.now() / 1000;

/** Spends `count` requests of the key's minute on `GET /api/v1/models`, checking each is served. */
async function spend(token: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) assert.equal((await get('/api/v1/models', token)).status, 200);
}

describe('per-key rate limit (RATE_LIMIT_PER_MINUTE=60)', () => {
  it('serves 60 requests in a minute with X-RateLimit-Remaining counting down from 59 to 0', async () => {
    const [key] = await newKeys(1);
    for (let n = 1; n <= LIMIT; n++) {
      const answer = await get('/api/v1/models', key);
      assert.equal(answer.status, 200, `request ${n}`);
      const headers = rateLimitHeaders(answer);
      assert.equal(headers.limit, LIMIT);
      assert.equal(headers.remaining, LIMIT - n, `request ${n}`);
      assert.ok(
        headers.reset > nowSeconds() - 1 && headers.reset <= nowSeconds() + 61,
        `reset ${headers.reset}`,
      );
    }
  });

  it('answers 429 with Retry-After on the 61st request in a minute', async () => {
    const [key] = await newKeys(1);
    await spend(key!, LIMIT);
    const answer = await get('/api/v1/models', key);
    const now = nowSeconds();
    assert.equal(answer.status, 429);
    assert.deepEqual(answer.body, { error: 'Rate limit exceeded' });
    const retryAfter = answer.headers.get('retry-after');
    assert.match(retryAfter ?? '', /^\d+$/, `Retry-After: ${retryAfter}`);
    assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After: ${retryAfter}`);
    const headers = rateLimitHeaders(answer);
    assert.equal(headers.limit, LIMIT);
    assert.equal(headers.remaining, 0);
    assert.ok(headers.reset > now, `X-RateLimit-Reset ${headers.reset} is not after ${now}`);
    assert.ok(headers.reset <= now + 61, `X-RateLimit-Reset ${headers.reset} is more than a minute away`);
    // Retry-After and X-RateLimit-Reset name the same moment.
    assert.ok(
      Math.abs(headers.reset - Math.floor(now) - Number(retryAfter)) <= 1,
      `${headers.reset} vs ${retryAfter}`,
    );
  });

  it('keeps refusing while the minute lasts without counting the refused requests', async () => {
    const [key] = await newKeys(1);
    await spend(key!, LIMIT);
    const first = await get('/api/v1/models', key);
    for (let i = 0; i < 5; i++) assert.equal((await get('/api/v1/models', key)).status, 429);
    const later = await get('/api/v1/models', key);
    assert.equal(later.status, 429);
    // Refused requests do not push the moment a slot frees further away.
    assert.equal(rateLimitHeaders(later).reset, rateLimitHeaders(first).reset);
  });

  it('limits each key separately: another key of the same user is unaffected', async () => {
    const [exhausted, fresh] = await newKeys(2);
    await spend(exhausted!, LIMIT);
    assert.equal((await get('/api/v1/models', exhausted)).status, 429);
    const answer = await get('/api/v1/models', fresh);
    assert.equal(answer.status, 200);
    assert.equal(rateLimitHeaders(answer).remaining, LIMIT - 1);
    assert.equal((await get('/api/v1/account', fresh)).status, 200);
  });

  it('counts GET /api/v1/account toward the same limit as GET /api/v1/models', async () => {
    const [key] = await newKeys(1);
    for (let n = 1; n <= LIMIT; n++) {
      const answer = await get(n % 2 === 0 ? '/api/v1/account' : '/api/v1/models', key);
      assert.equal(answer.status, 200, `request ${n}`);
      assert.equal(rateLimitHeaders(answer).remaining, LIMIT - n, `request ${n}`);
    }
    const account = await get('/api/v1/account', key);
    assert.equal(account.status, 429);
    assert.deepEqual(account.body, { error: 'Rate limit exceeded' });
    assert.match(account.headers.get('retry-after') ?? '', /^\d+$/);
    assert.equal((await get('/api/v1/models', key)).status, 429);
  });

  it('puts the X-RateLimit headers on 401, 404 and 405 answers under /api/v1 too', async () => {
    const [key] = await newKeys(1);
    const answers: Array<[string, ApiAnswer]> = [
      ['401 without a key', await get('/api/v1/models')],
      ['401 for an unknown key', await get('/api/v1/models', `mf_${'k'.repeat(43)}`)],
      ['404 for an unknown path', await get('/api/v1/nothing-here', key)],
      [
        '405 for a wrong method',
        await call(service.url, 'POST', '/api/v1/models', { token: key!, body: {} }),
      ],
      ['200 for the OpenAPI document', await get('/api/v1/openapi.json', key)],
    ];
    const expected = [401, 401, 404, 405, 200];
    answers.forEach(([what, answer], i) => {
      assert.equal(answer.status, expected[i], what);
      const headers = rateLimitHeaders(answer);
      assert.ok(headers.limit >= 1, what);
      assert.ok(headers.remaining <= headers.limit, what);
    });
    // The answers given with a valid key count toward that key's minute.
    const after = await get('/api/v1/models', key);
    assert.equal(rateLimitHeaders(after).remaining, LIMIT - 4);
  });

  it('leaves the admin API and /healthz without X-RateLimit headers', async () => {
    const health = await get('/healthz');
    assert.equal(health.status, 200);
    assert.equal(health.headers.get('x-ratelimit-limit'), null);
    const admin = await adminClient(service).call('GET', '/users?limit=1');
    assert.equal(admin.status, 200);
    assert.equal(admin.headers.get('x-ratelimit-limit'), null);
  });
});
