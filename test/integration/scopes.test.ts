import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { keyFixture } from '../helpers/keys.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { connectMongo, type MongoConnection } from '../../src/platform/mongo/connect.ts';
import { createMongoApiKeys } from '../../src/accounts/mongo/api-keys.ts';
import type { AuditEntry, AuditQuery, AuditSink } from '../../src/platform/audit/audit-sink.ts';
import { systemClock } from '../../src/platform/core/clock.ts';
import { RollingWindowLimiter } from '../../src/platform/core/rolling-window.ts';
import { SCOPES, normaliseScopes, type Scope } from '../../schemas/scopes.ts';
import { createPipeline } from '../../src/platform/http/pipeline.ts';
import { createMetricsRegistry } from '../../src/platform/observability/metrics.ts';
import { reply, type RouteDefinition } from '../../src/platform/http/route.ts';
import { Router } from '../../src/platform/http/router.ts';
import { startHttpServer, type HttpServer } from '../../src/platform/http/server.ts';
import { createAuditLog, type AuditLog } from '../../src/platform/audit/audit-log.ts';
import { createAuthenticator } from '../../src/accounts/authenticator.ts';
import type { ApiKeysRepository } from '../../src/accounts/ports/api-keys-repository.ts';

/** An in-memory audit sink that keeps every entry it is given, in order. */
class MemoryAuditSink implements AuditSink {
  readonly entries: AuditEntry[] = [];
  async write(entries: readonly AuditEntry[]): Promise<void> {
    this.entries.push(...entries);
  }
  async query(query: AuditQuery): Promise<AuditEntry[]> {
    return this.entries
      .filter(
        (e) =>
          (query.kind ? e.kind === query.kind : true) && (query.key_id ? e.key_id === query.key_id : true),
      )
      .reverse()
      .slice(0, query.limit);
  }
  async close(): Promise<void> {}
}

/** The path of the test route guarded by `scope` (`:` would read as a path parameter). */
const scopePath = (scope: Scope) => `/api/v1/test/${scope.replace(':', '-')}`;
const SCOPELESS_PATH = '/api/v1/test/any-key';

function testRoute(path: string, scope?: Scope): RouteDefinition {
  return {
    method: 'GET',
    path,
    auth: scope ? { kind: 'key', scope } : { kind: 'key' },
    summary: `test route for ${scope ?? 'any key'}`,
    responses: { 200: { description: 'ok' } },
    handle: async (ctx) => reply(200, { ok: true, key_id: ctx.principal?.keyId ?? null }),
  };
}

interface TestKey {
  id: string;
  userId: string;
  apiKey: string;
  scopes: Scope[];
}

let mongo: TestMongo;
let connection: MongoConnection;
let keys: ApiKeysRepository;
let sink: MemoryAuditSink;
let audit: AuditLog;
let server: HttpServer;
let baseUrl: string;

before(async () => {
  mongo = await startMongo();
  connection = await connectMongo(mongo.uri, 'mf_scopes');
  keys = await createMongoApiKeys(connection.db);
  const log = pino({ level: 'silent' });
  sink = new MemoryAuditSink();
  audit = createAuditLog({ sink, logger: log, flushIntervalMs: 10 });
  const router = new Router();
  for (const scope of SCOPES) router.add(testRoute(scopePath(scope), scope));
  router.add(testRoute(SCOPELESS_PATH));
  const handle = createPipeline({
    router,
    auth: createAuthenticator({ keys, adminToken: 'scopes-test-admin-token', clock: systemClock }),
    keyLimiter: new RollingWindowLimiter(10_000),
    sessionLimiter: new RollingWindowLimiter(10_000),
    authFailureLimiter: new RollingWindowLimiter(10_000),
    audit,
    log,
    trustProxy: false,
    metrics: createMetricsRegistry(),
  });
  server = await startHttpServer({ host: '127.0.0.1', port: 0, maxBodyBytes: 64 * 1024, handle, log });
  baseUrl = `http://127.0.0.1:${server.port}`;
});

after(async () => {
  await server?.close(1000);
  await audit?.close();
  await connection?.close();
  await mongo?.stop();
});

/** Stores a key with exactly `scopes` (no normalisation: the caller decides) for a new user. */
async function storeKey(scopes: Scope[]): Promise<TestKey> {
  const { apiKey, record } = keyFixture(scopes);
  await keys.create(record);
  return { id: record.id, userId: record.user_id, apiKey, scopes };
}

interface Answer {
  status: number;
  body: unknown;
  requestId: string;
}

async function get(path: string, apiKey?: string): Promise<Answer> {
  const response = await fetch(
    `${baseUrl}${path}`,
    apiKey ? { headers: { authorization: `Bearer ${apiKey}` } } : {},
  );
  return {
    status: response.status,
    body: await response.json(),
    requestId: response.headers.get('x-request-id') ?? '',
  };
}

/** Calls `path` and asserts that exactly one `request` audit entry describes the call. */
async function getAudited(path: string, key: TestKey | null): Promise<Answer> {
  await audit.flush();
  const before = sink.entries.length;
  const answer = await get(path, key?.apiKey);
  await audit.flush();
  const added = sink.entries.slice(before);
  assert.equal(added.length, 1, `audit entries for GET ${path}: ${JSON.stringify(added)}`);
  const entry = added[0]!;
  assert.equal(entry.kind, 'request');
  assert.equal(entry.request_id, answer.requestId);
  assert.equal(entry.method, 'GET');
  assert.equal(entry.path, path);
  assert.equal(entry.status, answer.status);
  assert.equal(entry.key_id, key ? key.id : null);
  assert.equal(entry.user_id, key ? key.userId : null);
  assert.equal(entry.ip, '127.0.0.1');
  return answer;
}

describe('scopes at the HTTP front', () => {
  it('stores models:read on a key created with no scopes, and only it', async () => {
    assert.deepEqual(normaliseScopes([]), ['models:read']);
    const key = await storeKey(normaliseScopes([]));
    assert.deepEqual((await keys.get(key.id))?.scopes, ['models:read']);
    assert.equal((await getAudited(scopePath('models:read'), key)).status, 200);
  });

  for (const scope of SCOPES) {
    it(`answers 403 Missing required scope: ${scope} to a key holding every other scope`, async () => {
      const key = await storeKey(SCOPES.filter((s) => s !== scope));
      const answer = await getAudited(scopePath(scope), key);
      assert.equal(answer.status, 403);
      assert.deepEqual(answer.body, { error: `Missing required scope: ${scope}` });
    });

    it(`answers 200 to a key holding ${scope}`, async () => {
      const key = await storeKey(normaliseScopes([scope]));
      const answer = await getAudited(scopePath(scope), key);
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body, { ok: true, key_id: key.id });
    });
  }

  it('lets a key with only models:read reach no scope but models:read', async () => {
    const key = await storeKey(normaliseScopes([]));
    for (const scope of SCOPES) {
      const answer = await getAudited(scopePath(scope), key);
      if (scope === 'models:read') {
        assert.equal(answer.status, 200);
      } else {
        assert.equal(answer.status, 403, scope);
        assert.deepEqual(answer.body, { error: `Missing required scope: ${scope}` });
      }
    }
  });

  it('lets a key with every scope reach every scoped route', async () => {
    const key = await storeKey(normaliseScopes([...SCOPES]));
    for (const scope of SCOPES) assert.equal((await getAudited(scopePath(scope), key)).status, 200, scope);
  });

  it('serves a route without a scope to any valid key, even one stored with no scopes at all', async () => {
    const key = await storeKey([]);
    const answer = await getAudited(SCOPELESS_PATH, key);
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, { ok: true, key_id: key.id });
    assert.equal((await getAudited(scopePath('models:read'), key)).status, 403);
  });

  it('answers 401 before any scope check, audited without key or user', async () => {
    for (const scope of SCOPES) {
      const answer = await getAudited(scopePath(scope), null);
      assert.equal(answer.status, 401);
      assert.deepEqual(answer.body, { error: 'Missing Authorization header' });
    }
  });
});
