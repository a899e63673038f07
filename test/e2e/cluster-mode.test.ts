import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startNats, skipWithoutNats, type TestNats } from '../helpers/nats.ts';
import { startService, call, type RunningService } from '../helpers/service.ts';

describe('cluster mode', { skip: skipWithoutNats() }, () => {
  let mongo: TestMongo;
  let nats: TestNats;
  let service: RunningService;
  before(async () => {
    [mongo, nats] = await Promise.all([startMongo(), startNats()]);
    service = await startService({ MONGO_URL: mongo.uri, NATS_URL: nats.url, NODE_ID: 'node-a' });
  });
  after(async () => {
    await service?.stop();
    await Promise.all([mongo?.stop(), nats?.stop()]);
  });

  it('reports MongoDB and NATS up in the health check', async () => {
    const health = await call(service.url, 'GET', '/healthz');
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { ok: true, node_id: 'node-a', mongo: 'up', nats: 'up' });
  });

  it('answers 503 while NATS is down', async () => {
    await nats.stop();
    let health = await call(service.url, 'GET', '/healthz');
    for (let i = 0; i < 20 && health.status === 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      health = await call(service.url, 'GET', '/healthz');
    }
    assert.equal(health.status, 503);
    assert.equal(health.body.ok, false);
    assert.equal(health.body.nats, 'down');
  });
});
