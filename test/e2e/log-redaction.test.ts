import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import {
  startService,
  call,
  adminClient,
  TEST_ADMIN_TOKEN,
  type RunningService,
} from '../helpers/service.ts';

describe('logs', () => {
  let mongo: TestMongo;
  let service: RunningService;
  before(async () => {
    mongo = await startMongo();
    service = await startService({ MONGO_URL: mongo.uri, LOG_LEVEL: 'debug', WEBHOOK_ALLOW_PRIVATE: 'true' });
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  it('never contain API keys, webhook secrets or the admin token, even at debug level', async () => {
    const admin = adminClient(service);
    const userId = await admin.createUser('logs@example.com', 5);
    const key = await admin.createKey(userId, ['video:write']);
    const webhook = await admin.call<{ secret: string }>('PUT', `/keys/${key.id}/webhook`, {
      url: 'http://127.0.0.1:9/hook',
    });
    const secret = webhook.body.secret;
    assert.match(secret, /^whsec_/);

    await call(service.url, 'GET', '/api/v1/models', { token: key.apiKey });
    await call(service.url, 'GET', `/api/v1/models?access_token=${key.apiKey}`);
    await call(service.url, 'GET', '/api/v1/account', { token: `${key.apiKey}x` });
    await call(service.url, 'GET', '/api/admin/v1/users', { token: `${TEST_ADMIN_TOKEN}-wrong` });
    await call(service.url, 'POST', '/api/admin/v1/users', {
      token: TEST_ADMIN_TOKEN,
      rawBody: `{"email": "${key.apiKey}`,
    });
    await new Promise((resolve) => setTimeout(resolve, 300)); // let the asynchronous log destination write

    const output = service.lines.join('\n');
    assert.ok(
      service.lines.some((line) => line.includes('"msg":"request"')),
      'debug request lines were logged',
    );
    assert.ok(output.includes('[REDACTED]'), 'the secrets were there to be redacted');
    for (const secretValue of [key.apiKey, secret, TEST_ADMIN_TOKEN]) {
      assert.ok(!output.includes(secretValue), `a secret leaked into the logs: ${secretValue.slice(0, 6)}…`);
    }
  });
});
