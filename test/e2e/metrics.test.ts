import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, type RunningService } from '../helpers/service.ts';
import { invalidPrometheusLines, sampleValue } from '../helpers/prometheus.ts';

const PROMETHEUS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

describe('GET /metrics', () => {
  let mongo: TestMongo;
  let service: RunningService;

  before(async () => {
    mongo = await startMongo();
    service = await startService({ MONGO_URL: mongo.uri, MONGO_DB: 'mf_metrics' });
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  /** Scrapes with the admin token, as Prometheus would. */
  async function scrape(): Promise<string> {
    const response = await fetch(`${service.url}/metrics`, {
      headers: { authorization: `Bearer ${service.adminToken}` },
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), PROMETHEUS_TYPE);
    return response.text();
  }

  it('answers 401 without the admin token or with a wrong one, like the admin API', async () => {
    const missing = await call(service.url, 'GET', '/metrics');
    assert.equal(missing.status, 401);
    assert.deepEqual(missing.body, { error: 'Missing Authorization header' });
    const wrong = await call(service.url, 'GET', '/metrics', { token: 'not-the-admin-token-at-all' });
    assert.equal(wrong.status, 401);
    assert.deepEqual(wrong.body, { error: 'Invalid admin token' });
  });

  it('counts requests by method, route pattern and status, in valid Prometheus text', async () => {
    const admin = adminClient(service);
    const userId = await admin.createUser('metrics@example.com');
    const { apiKey } = await admin.createKey(userId);
    for (let i = 0; i < 3; i++) {
      assert.equal((await call(service.url, 'GET', '/api/v1/models', { token: apiKey })).status, 200);
    }
    assert.equal((await call(service.url, 'GET', '/api/v1/models')).status, 401);
    assert.equal((await admin.call('GET', `/users/${userId}`)).status, 200);
    assert.equal((await fetch(`${service.url}/no/such/path`)).status, 404);
    assert.equal((await call(service.url, 'GET', `/api/v1/nothing-here`, { token: apiKey })).status, 404);

    await scrape();
    const text = await scrape();
    assert.deepEqual(invalidPrometheusLines(text), []);
    const requests = (labels: string) => sampleValue(text, `mf_http_requests_total{${labels}}`);
    assert.equal(requests('method="GET",route="/api/v1/models",status="200"'), 3);
    assert.equal(requests('method="GET",route="/api/v1/models",status="401"'), 1);
    assert.equal(requests('method="POST",route="/api/admin/v1/users",status="201"'), 1);
    assert.equal(requests('method="GET",route="/api/admin/v1/users/:user_id",status="200"'), 1);
    assert.equal(requests('method="GET",route="unmatched",status="404"'), 2);
    assert.equal(requests('method="GET",route="/metrics",status="200"'), 1); // the first scrape
    assert.doesNotMatch(text, /route="\/no\/such\/path"|route="\/api\/admin\/v1\/users\/usr_/);

    const duration = (series: string) => sampleValue(text, `mf_http_request_duration_seconds_${series}`);
    assert.equal(duration('count{method="GET",route="/api/v1/models"}'), 4);
    assert.equal(duration('bucket{method="GET",route="/api/v1/models",le="+Inf"}'), 4);
    assert.ok(duration('sum{method="GET",route="/api/v1/models"}')! > 0);
    assert.ok(sampleValue(text, 'mf_process_resident_memory_bytes')! > 0);
  });
});
