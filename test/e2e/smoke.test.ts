import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, type RunningService } from '../helpers/service.ts';

describe('service against MongoDB', () => {
  let mongo: TestMongo;
  let service: RunningService;
  before(async () => {
    mongo = await startMongo();
    service = await startService({ MONGO_URL: mongo.uri });
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  it('serves the models catalogue to a new key', async () => {
    const admin = adminClient(service);
    const user = await admin.createUser('smoke@example.com', 10);
    const key = await admin.createKey(user);
    const answer = await call<{ models: unknown[] }>(service.url, 'GET', '/api/v1/models', {
      token: key.apiKey,
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.body.models.length, 3);
  });
});
