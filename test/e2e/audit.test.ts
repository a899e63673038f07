import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, serviceEnv, call, adminClient, type RunningService } from '../helpers/service.ts';

interface AuditRow {
  kind: string;
  request_id: string;
  ts: string;
  key_id: string | null;
  user_id: string | null;
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  ip: string;
  user_agent: string | null;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const USER_AGENT = 'mediaforge-audit-test/1.0 (+e2e)';
/** Well-formed, but no such key exists. */
const UNKNOWN_API_KEY = `mf_${'Z'.repeat(43)}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every audit row in the JSON-lines files of an audit folder, in file order. */
async function rowsInAuditDir(dir: string): Promise<AuditRow[]> {
  const names = (await readdir(dir)).filter((name) => /^audit-\d{8}-\d{3,}\.jsonl$/.test(name)).sort();
  const rows: AuditRow[] = [];
  for (const name of names) {
    const text = await readFile(join(dir, name), 'utf8');
    for (const line of text.split('\n')) if (line.trim()) rows.push(JSON.parse(line) as AuditRow);
  }
  return rows;
}

/** What one public request leaves behind: the answer and the request id the service gave it. */
interface Made {
  status: number;
  requestId: string;
}

describe('audit log', () => {
  let mongo: TestMongo;
  before(async () => {
    mongo = await startMongo();
  });
  after(async () => {
    await mongo?.stop();
  });

  for (const sink of ['mongo', 'file'] as const) {
    describe(`${sink} sink`, () => {
      let service: RunningService;
      let auditDir: string;
      let admin: ReturnType<typeof adminClient>;
      let userId: string;
      let key: { id: string; apiKey: string };
      let limitedKey: { id: string; apiKey: string };
      const made = {} as Record<'ok' | 'unauthorized' | 'notFound' | 'limited' | 'auditProbe', Made>;
      let adminRequestId: string;

      /** A public request with the custom User-Agent; the answer's X-Request-Id identifies its audit row. */
      const publicCall = async (path: string, token: string): Promise<Made> => {
        const answer = await call(service.url, 'GET', path, { token, headers: { 'user-agent': USER_AGENT } });
        const requestId = answer.headers.get('x-request-id');
        assert.ok(requestId, 'every answer carries X-Request-Id');
        return { status: answer.status, requestId };
      };

      const readAudit = async (query = '') => {
        const answer = await admin.call<{ entries: AuditRow[] }>('GET', `/audit${query}`);
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        return answer.body.entries;
      };

      /** Polls the audit log until every request id has a row (entries are written in batches, off the request path). */
      const waitForRows = async (requestIds: string[], query = '?limit=1000'): Promise<AuditRow[]> => {
        const deadline = Date.now() + 5_000;
        for (;;) {
          const entries = await readAudit(query);
          if (requestIds.every((id) => entries.some((e) => e.request_id === id))) return entries;
          if (Date.now() > deadline) {
            const missing = requestIds.filter((id) => !entries.some((e) => e.request_id === id));
            assert.fail(`audit rows missing after 5 s for ${missing.join(', ')}`);
          }
          await sleep(100);
        }
      };

      const rowOf = (entries: AuditRow[], made: Made): AuditRow => {
        const rows = entries.filter((e) => e.request_id === made.requestId);
        assert.equal(rows.length, 1, `exactly one audit row for ${made.requestId}`);
        return rows[0]!;
      };

      before(async () => {
        auditDir = serviceEnv().AUDIT_DIR!;
        service = await startService({
          MONGO_URL: mongo.uri,
          MONGO_DB: `audit_${sink}`,
          AUDIT_SINK: sink,
          AUDIT_DIR: auditDir,
          RATE_LIMIT_PER_MINUTE: '3',
        });
        admin = adminClient(service);
        userId = await admin.createUser(`audit-${sink}@example.com`, 10);
        key = await admin.createKey(userId, ['video:write']);
        limitedKey = await admin.createKey(userId, ['image:write']);

        made.ok = await publicCall('/api/v1/account', key.apiKey);
        made.unauthorized = await publicCall('/api/v1/account', UNKNOWN_API_KEY);
        made.notFound = await publicCall('/api/v1/no-such-route', key.apiKey);
        made.auditProbe = await publicCall('/api/v1/audit', key.apiKey);
        const limited: Made[] = [];
        for (let i = 0; i < 4; i++) limited.push(await publicCall('/api/v1/account', limitedKey.apiKey));
        made.limited = limited.at(-1)!;
        assert.deepEqual(
          limited.map((m) => m.status),
          [200, 200, 200, 429],
        );

        const adminAnswer = await call(service.url, 'GET', `/api/admin/v1/users/${userId}`, {
          token: service.adminToken,
          headers: { 'user-agent': USER_AGENT },
        });
        assert.equal(adminAnswer.status, 200);
        adminRequestId = adminAnswer.headers.get('x-request-id') ?? '';
      });
      after(async () => {
        await service?.stop();
      });

      it('answers 200, 401, 404 and 429 to the audited requests', () => {
        assert.equal(made.ok.status, 200);
        assert.equal(made.unauthorized.status, 401);
        assert.equal(made.notFound.status, 404);
        assert.equal(made.limited.status, 429);
      });

      it('records a request row with every field for a 200', async () => {
        const entries = await waitForRows([made.ok.requestId]);
        const row = rowOf(entries, made.ok);
        assert.equal(row.kind, 'request');
        assert.equal(row.request_id, made.ok.requestId);
        assert.match(row.ts, ISO);
        assert.ok(Math.abs(Date.parse(row.ts) - Date.now()) < 60_000, 'ts is now-ish');
        assert.equal(row.key_id, key.id);
        assert.equal(row.user_id, userId);
        assert.equal(row.method, 'GET');
        assert.equal(row.path, '/api/v1/account');
        assert.equal(row.status, 200);
        assert.equal(typeof row.duration_ms, 'number');
        assert.ok(row.duration_ms >= 0);
        assert.equal(typeof row.ip, 'string');
        assert.match(row.ip, /127\.0\.0\.1|::1/);
        assert.equal(row.user_agent, USER_AGENT);
        assert.equal(JSON.stringify(row).includes(key.apiKey), false, 'the API key itself is never stored');
      });

      it('records a 401 for an unknown key without a key or user', async () => {
        const row = rowOf(await waitForRows([made.unauthorized.requestId]), made.unauthorized);
        assert.equal(row.kind, 'request');
        assert.equal(row.status, 401);
        assert.equal(row.key_id, null);
        assert.equal(row.user_id, null);
        assert.equal(row.path, '/api/v1/account');
        assert.equal(row.user_agent, USER_AGENT);
        assert.equal(
          JSON.stringify(row).includes(UNKNOWN_API_KEY),
          false,
          'the presented key is never stored',
        );
      });

      it('records a 404 for an unknown /api/v1 path with the key that asked', async () => {
        const row = rowOf(await waitForRows([made.notFound.requestId]), made.notFound);
        assert.equal(row.status, 404);
        assert.equal(row.key_id, key.id);
        assert.equal(row.user_id, userId);
        assert.equal(row.method, 'GET');
        assert.equal(row.path, '/api/v1/no-such-route');
      });

      it('records a 429 once the key exceeds RATE_LIMIT_PER_MINUTE', async () => {
        const row = rowOf(await waitForRows([made.limited.requestId]), made.limited);
        assert.equal(row.status, 429);
        assert.equal(row.key_id, limitedKey.id);
        assert.equal(row.user_id, userId);
        assert.equal(row.path, '/api/v1/account');
      });

      it('audits admin API requests too', async () => {
        const entries = await waitForRows([adminRequestId]);
        const row = entries.find((e) => e.request_id === adminRequestId)!;
        assert.equal(row.kind, 'request');
        assert.equal(row.method, 'GET');
        assert.equal(row.path, `/api/admin/v1/users/${userId}`);
        assert.equal(row.status, 200);
        assert.equal(row.key_id, null);
        assert.equal(row.user_agent, USER_AGENT);
        assert.equal(
          JSON.stringify(row).includes(service.adminToken),
          false,
          'the admin token is never stored',
        );
        // The audit reads themselves are requests like any other.
        const readId = `audit-read-${sink}-${Date.now()}`;
        await call(service.url, 'GET', '/api/admin/v1/audit?limit=1', {
          token: service.adminToken,
          headers: { 'x-request-id': readId },
        });
        const read = (await waitForRows([readId])).find((e) => e.request_id === readId)!;
        assert.equal(read.path, '/api/admin/v1/audit', 'GET /api/admin/v1/audit is audited');
      });

      it("keeps a client's own X-Request-Id and ignores X-Forwarded-For without TRUST_PROXY", async () => {
        const requestId = `e2e-${sink}-${Date.now()}`;
        const answer = await call(service.url, 'GET', `/api/admin/v1/users/${userId}`, {
          token: service.adminToken,
          headers: { 'x-request-id': requestId, 'x-forwarded-for': '203.0.113.9' },
        });
        assert.equal(answer.status, 200);
        assert.equal(answer.headers.get('x-request-id'), requestId);
        const row = rowOf(await waitForRows([requestId]), { status: 200, requestId });
        assert.match(row.ip, /127\.0\.0\.1|::1/);
      });

      it('is not readable through /api/v1', async () => {
        assert.equal(made.auditProbe.status, 404);
        const probeKey = await admin.createKey(userId, ['video:write', 'image:write', 'video-editor:read']);
        for (const path of ['/api/v1/audit', '/api/v1/admin/audit', '/api/v1/audit?limit=5']) {
          const answer = await call<{ error: string }>(service.url, 'GET', path, { token: probeKey.apiKey });
          assert.equal(answer.status, 404, path);
          assert.deepEqual(Object.keys(answer.body), ['error']);
        }
        const withKey = await call(service.url, 'GET', '/api/admin/v1/audit', { token: key.apiKey });
        assert.equal(withKey.status, 401, 'an API key does not open the admin audit read');
        const anonymous = await call(service.url, 'GET', '/api/admin/v1/audit');
        assert.equal(anonymous.status, 401);
      });

      it('answers entries newest first', async () => {
        await waitForRows([made.ok.requestId, made.limited.requestId, adminRequestId]);
        const entries = await readAudit('?limit=1000');
        assert.ok(entries.length >= 8);
        for (let i = 1; i < entries.length; i++) {
          assert.ok(
            entries[i - 1]!.ts >= entries[i]!.ts,
            `entry ${i - 1} (${entries[i - 1]!.ts}) before ${entries[i]!.ts}`,
          );
        }
        const position = (m: Made | string) =>
          entries.findIndex((e) => e.request_id === (typeof m === 'string' ? m : m.requestId));
        // Made one after the other: the later request is listed first.
        assert.ok(position(adminRequestId) < position(made.limited));
        assert.ok(position(made.limited) < position(made.notFound));
        assert.ok(position(made.notFound) < position(made.unauthorized));
        assert.ok(position(made.unauthorized) < position(made.ok));
      });

      it('filters by key_id', async () => {
        await waitForRows([made.limited.requestId]);
        const entries = await readAudit(`?key_id=${encodeURIComponent(limitedKey.id)}&limit=1000`);
        assert.equal(entries.length, 4, 'the four requests of the rate-limited key');
        assert.ok(entries.every((e) => e.key_id === limitedKey.id));
        assert.deepEqual(
          entries.map((e) => e.status),
          [429, 200, 200, 200],
        );
        assert.deepEqual(await readAudit('?key_id=key_nobody&limit=10'), []);
      });

      it('filters by kind', async () => {
        await waitForRows([made.ok.requestId]);
        const requests = await readAudit('?kind=request&limit=1000');
        assert.ok(requests.length >= 8);
        assert.ok(requests.every((e) => e.kind === 'request'));
        assert.deepEqual(await readAudit('?kind=webhook_attempt'), [], 'no webhook was ever attempted');
        const bad = await admin.call<{ error: string }>('GET', '/audit?kind=nonsense');
        assert.equal(bad.status, 400);
        assert.equal(typeof bad.body.error, 'string');
      });

      it('limits the number of entries, keeping the newest', async () => {
        await waitForRows([adminRequestId]);
        const all = await readAudit('?limit=1000');
        const two = await readAudit('?limit=2');
        assert.equal(two.length, 2);
        assert.ok(two[0]!.ts >= two[1]!.ts);
        // Rows only get added between the two reads: the newest of the second is at least as new.
        assert.ok(two[0]!.ts >= all[0]!.ts);
        const one = await readAudit(`?key_id=${encodeURIComponent(limitedKey.id)}&limit=1`);
        assert.equal(one.length, 1);
        assert.equal(one[0]!.request_id, made.limited.requestId);
        for (const limit of ['0', '1001', 'x']) {
          const answer = await admin.call<{ error: string }>('GET', `/audit?limit=${limit}`);
          assert.equal(answer.status, 400, `limit=${limit}`);
          assert.equal(answer.body.error, 'limit must be an integer from 1 to 1000');
        }
      });

      if (sink === 'file') {
        it('writes the rows to a .jsonl file under AUDIT_DIR', async () => {
          const ids = [made.ok, made.unauthorized, made.notFound, made.limited].map((m) => m.requestId);
          await waitForRows([...ids, adminRequestId]);
          const rows = await rowsInAuditDir(auditDir);
          for (const id of [...ids, adminRequestId]) {
            const found = rows.filter((r) => r.request_id === id);
            assert.equal(found.length, 1, `one row for ${id} in the file`);
            assert.equal(found[0]!.kind, 'request');
          }
          const api = await readAudit('?limit=1000');
          const stored = rows.find((r) => r.request_id === made.ok.requestId);
          assert.deepEqual(stored, rowOf(api, made.ok), 'the API answers what the file holds');
        });
      }
    });
  }

  describe('shutdown', () => {
    /** Starts a service, makes a burst of requests, and sends SIGTERM at once, while their rows are still buffered. */
    const burstThenStop = async (sink: 'file' | 'mongo', db: string) => {
      const auditDir = serviceEnv().AUDIT_DIR!;
      const service = await startService({
        MONGO_URL: mongo.uri,
        MONGO_DB: db,
        AUDIT_SINK: sink,
        AUDIT_DIR: auditDir,
      });
      try {
        const admin = adminClient(service);
        const key = await admin.createKey(await admin.createUser(`shutdown-${sink}@example.com`, 1));
        // Let the buffer write the set-up requests, so the burst below is what is still buffered at SIGTERM.
        await sleep(500);
        const requestIds: string[] = [];
        for (let i = 0; i < 6; i++) {
          const answer = await call(service.url, 'GET', '/api/v1/account', {
            token: key.apiKey,
            headers: { 'user-agent': USER_AGENT },
          });
          assert.equal(answer.status, 200);
          requestIds.push(answer.headers.get('x-request-id') ?? '');
        }
        const exit = await service.stop('SIGTERM');
        return { exit, requestIds, keyId: key.id, auditDir };
      } finally {
        await service.stop();
      }
    };

    it('exits 0 on SIGTERM with the rows of the requests made just before it flushed to the file', async () => {
      const { exit, requestIds, keyId, auditDir } = await burstThenStop('file', 'audit_shutdown_file');
      assert.deepEqual(exit, { code: 0, signal: null });
      const rows = await rowsInAuditDir(auditDir);
      for (const id of requestIds) {
        const row = rows.find((r) => r.request_id === id);
        assert.ok(row, `row for ${id} flushed on shutdown`);
        assert.equal(row.status, 200);
        assert.equal(row.key_id, keyId);
        assert.equal(row.user_agent, USER_AGENT);
      }
    });

    it('exits 0 on SIGTERM with the rows of the requests made just before it flushed to MongoDB', async () => {
      const { exit, requestIds, keyId } = await burstThenStop('mongo', 'audit_shutdown_mongo');
      assert.deepEqual(exit, { code: 0, signal: null });
      const client = await MongoClient.connect(mongo.uri);
      try {
        const rows = await client
          .db('audit_shutdown_mongo')
          .collection<{ request_id?: string; status?: number; key_id: string | null }>('audit_log')
          .find({ request_id: { $in: requestIds } })
          .toArray();
        assert.deepEqual(rows.map((r) => r.request_id).sort(), [...requestIds].sort());
        for (const row of rows) {
          assert.equal(row.status, 200);
          assert.equal(row.key_id, keyId);
        }
      } finally {
        await client.close();
      }
    });
  });
});
