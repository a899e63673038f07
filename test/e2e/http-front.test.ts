import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, type RunningService } from '../helpers/service.ts';

/** Sends raw bytes and resolves with everything the server answered before closing or the time-out. */
function rawExchange(
  url: string,
  payload: string | Buffer,
  options: { endAfterMs?: number } = {},
): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('utf8')));
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
    socket.write(payload);
    setTimeout(() => socket.destroy(), options.endAfterMs ?? 3000);
  });
}

describe('HTTP front', () => {
  let mongo: TestMongo;
  let service: RunningService;
  let apiKey: string;
  before(async () => {
    mongo = await startMongo();
    service = await startService({ MONGO_URL: mongo.uri, AUDIT_SINK: 'mongo' });
    const admin = adminClient(service);
    apiKey = (await admin.createKey(await admin.createUser('front@example.com'))).apiKey;
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  it('answers unknown routes with a JSON 404', async () => {
    const api = await call(service.url, 'GET', '/api/v1/does-not-exist', { token: apiKey });
    assert.equal(api.status, 404);
    assert.deepEqual(api.body, { error: 'Not found' });
    assert.match(api.headers.get('content-type') ?? '', /^application\/json/);
    const outside = await call(service.url, 'GET', '/nothing-here');
    assert.equal(outside.status, 404);
    assert.deepEqual(outside.body, { error: 'Not found' });
  });

  it('answers 405 with Allow when the path exists with another method', async () => {
    const answer = await call(service.url, 'POST', '/api/v1/models', { token: apiKey, body: {} });
    assert.equal(answer.status, 405);
    assert.deepEqual(answer.body, { error: 'Method not allowed' });
    assert.equal(answer.headers.get('allow'), 'GET');
  });

  it('authenticates before telling whether an /api/v1 path exists', async () => {
    const answer = await call(service.url, 'GET', '/api/v1/does-not-exist');
    assert.equal(answer.status, 401);
  });

  it('echoes a valid X-Request-Id and generates one otherwise', async () => {
    const given = await call(service.url, 'GET', '/healthz', { headers: { 'x-request-id': 'abc-123.x' } });
    assert.equal(given.headers.get('x-request-id'), 'abc-123.x');
    const hostile = await call(service.url, 'GET', '/healthz', {
      headers: { 'x-request-id': 'a b<script>' },
    });
    assert.match(hostile.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });

  it('answers 400 Invalid JSON body for a malformed body', async () => {
    const answer = await call(service.url, 'POST', '/api/admin/v1/users', {
      token: service.adminToken,
      rawBody: '{"email": "x@example.com",',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(answer.status, 400);
    assert.deepEqual(answer.body, { error: 'Invalid JSON body' });
  });

  it('answers 400 when the body is JSON but not an object', async () => {
    const answer = await call(service.url, 'POST', '/api/admin/v1/users', {
      token: service.adminToken,
      body: [1, 2],
    });
    assert.equal(answer.status, 400);
    assert.deepEqual(answer.body, { error: 'Request body must be a JSON object' });
  });

  it('answers 413 for a body over 1 MiB, announced or streamed, and creates nothing', async () => {
    const big = JSON.stringify({ email: 'big@example.com', padding: 'x'.repeat(1024 * 1024) });
    const announced = await call(service.url, 'POST', '/api/admin/v1/users', {
      token: service.adminToken,
      rawBody: big,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(announced.status, 413);
    assert.match(String(announced.body.error), /too large/);

    const chunked = await rawExchange(
      service.url,
      [
        'POST /api/admin/v1/users HTTP/1.1',
        'Host: x',
        `Authorization: Bearer ${service.adminToken}`,
        'Content-Type: application/json',
        'Transfer-Encoding: chunked',
        '',
        `${Buffer.byteLength(big).toString(16)}\r\n${big}\r\n0\r\n\r\n`,
      ].join('\r\n'),
    );
    assert.match(chunked, /^HTTP\/1\.1 413/);

    const users = await call<{ users: { email: string }[] }>(service.url, 'GET', '/api/admin/v1/users', {
      token: service.adminToken,
    });
    assert.ok(!users.body.users.some((u) => u.email === 'big@example.com'));
  });

  it('survives clients that abort mid-request and keeps serving', async () => {
    const partial = (i: number) =>
      [
        'POST /api/admin/v1/users HTTP/1.1',
        'Host: x',
        `Authorization: Bearer ${service.adminToken}`,
        'Content-Type: application/json',
        'Content-Length: 500',
        '',
        `{"email": "aborted${i}@example.com", "cred`,
      ].join('\r\n');
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => rawExchange(service.url, partial(i), { endAfterMs: 50 })),
    );
    // A client that goes away right after sending a complete request must not hurt either.
    await Promise.all(
      Array.from({ length: 30 }, () =>
        rawExchange(
          service.url,
          `GET /api/v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${apiKey}\r\n\r\n`,
          {
            endAfterMs: 1,
          },
        ),
      ),
    );
    const health = await call(service.url, 'GET', '/healthz');
    assert.equal(health.status, 200);
    assert.equal(service.proc.child.exitCode, null);
    const users = await call<{ users: { email: string }[] }>(service.url, 'GET', '/api/admin/v1/users', {
      token: service.adminToken,
    });
    assert.ok(
      !users.body.users.some((u) => u.email.startsWith('aborted')),
      'an aborted request created a user',
    );
  });

  it('serves the health check without authentication', async () => {
    const answer = await call(service.url, 'GET', '/healthz');
    assert.equal(answer.status, 200);
    assert.deepEqual(Object.keys(answer.body).sort(), ['mongo', 'nats', 'node_id', 'ok']);
    assert.equal(answer.body.mongo, 'up');
    assert.equal(answer.body.nats, 'embedded');
  });
});
