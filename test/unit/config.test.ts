import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, ConfigError } from '../../src/platform/config.ts';

const refused = (env: Record<string, string>, message: RegExp) =>
  assert.throws(
    () => loadConfig(env),
    (error: unknown) => error instanceof ConfigError && message.test(error.message),
  );

describe('loadConfig', () => {
  it('applies the documented defaults in embedded mode', () => {
    const config = loadConfig({});
    assert.equal(config.mode, 'embedded');
    assert.equal(config.port, 8080);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.rateLimitPerMinute, 60);
    assert.equal(config.authFailuresPerMinute, 100);
    assert.deepEqual(config.webhookRetryDelaysMs, [30000, 120000, 600000]);
    assert.equal(config.auditSink, 'file');
    assert.equal(config.providerTimeoutMs, 600000);
    assert.equal(config.actorPartitions, 64);
    assert.equal(config.trustProxy, false);
    assert.equal(config.providerEndpoints.textToVideo, 'fal-ai/vidmodel-2.0/text-to-video');
  });

  it('chooses single-node and cluster modes from MONGO_URL and NATS_URL', () => {
    const single = loadConfig({ MONGO_URL: 'mongodb://db:27017', ADMIN_TOKEN: 'x'.repeat(20) });
    assert.equal(single.mode, 'single-node');
    assert.equal(single.auditSink, 'mongo');
    const cluster = loadConfig({
      MONGO_URL: 'mongodb://db:27017',
      ADMIN_TOKEN: 'x'.repeat(20),
      NATS_URL: 'nats://a:4222, nats://b:4222',
    });
    assert.equal(cluster.mode, 'cluster');
    assert.deepEqual(cluster.natsUrls, ['nats://a:4222', 'nats://b:4222']);
  });

  it('parses integers, booleans and lists from strings', () => {
    const config = loadConfig({
      PORT: '0',
      TRUST_PROXY: 'true',
      WEBHOOK_ALLOW_PRIVATE: '1',
      WEBHOOK_RETRY_DELAYS_MS: '10,20',
      RATE_LIMIT_PER_MINUTE: '1000',
    });
    assert.equal(config.port, 0);
    assert.equal(config.trustProxy, true);
    assert.equal(config.webhookAllowPrivate, true);
    assert.deepEqual(config.webhookRetryDelaysMs, [10, 20]);
    assert.equal(config.rateLimitPerMinute, 1000);
  });

  it('treats empty variables as unset', () => {
    assert.equal(loadConfig({ PORT: '', MONGO_URL: '' }).port, 8080);
  });

  it('names the variable and the rule in each refusal', () => {
    refused({ PORT: 'abc' }, /^PORT must be an integer$/);
    refused({ PORT: '70000' }, /^PORT must be an integer at least 0 and at most 65535$/);
    refused({ RATE_LIMIT_PER_MINUTE: '0' }, /^RATE_LIMIT_PER_MINUTE must be an integer at least 1/);
    refused({ TRUST_PROXY: 'maybe' }, /^TRUST_PROXY must be a boolean$/);
    refused({ PROVIDER: 'other' }, /^PROVIDER must be one of sandbox, fal$/);
    refused({ AUDIT_SINK: 'syslog' }, /^AUDIT_SINK must be one of file, mongo$/);
    refused({ WEBHOOK_RETRY_DELAYS_MS: '30s' }, /^WEBHOOK_RETRY_DELAYS_MS must be a comma-separated list/);
    refused({ MONGO_URL: 'postgres://x', ADMIN_TOKEN: 'x'.repeat(20) }, /^MONGO_URL must be a mongodb/);
    refused({ NATS_URL: 'nats://x:4222' }, /^NATS_URL is set without MONGO_URL/);
    refused({ MONGO_URL: 'mongodb://x' }, /^ADMIN_TOKEN is required when MONGO_URL is set$/);
    refused({ ADMIN_TOKEN: 'short' }, /^ADMIN_TOKEN must be at least 16 characters$/);
    refused({ PROVIDER: 'fal' }, /^PROVIDER=fal needs FAL_KEY/);
  });

  it('keeps test-only and unread variables out of the schema, and the tuning constants in the config', () => {
    const config = loadConfig({ MF_TEST_MONGO: 'container' });
    assert.equal('mfTestMongo' in config, false);
    assert.equal(config.shutdownGraceMs, 30_000);
    assert.equal(config.tuning.maxBodyBytes, 1024 * 1024);
    assert.equal(loadConfig({ PROVIDER: 'fal', FAL_KEY: 'k' }).provider, 'fal');
  });

  it('reads the editor settings: agent, turn lease and queue, upload limit', () => {
    const config = loadConfig({ TURN_LEASE_MS: '5000', TURN_QUEUE_MAX: '3', UPLOAD_MAX_BYTES: '1000' });
    assert.deepEqual(
      [config.agent, config.turnLeaseMs, config.turnQueueMax, config.uploadMaxBytes],
      ['builtin', 5000, 3, 1000],
    );
    const defaults = loadConfig({});
    assert.deepEqual(
      [defaults.turnLeaseMs, defaults.turnQueueMax, defaults.uploadMaxBytes],
      [30_000, 10, 209_715_200],
    );
  });

  it('reads the LLM agent settings with their defaults; the base URL may be http (a local server)', () => {
    assert.deepEqual(loadConfig({ AGENT: 'llm' }).llm, {
      baseUrl: 'https://api.openai.com/v1',
      apiKey: undefined,
      model: 'gpt-4.1-mini',
      timeoutMs: 120_000,
      maxSteps: 8,
    });
    const local = loadConfig({
      AGENT: 'llm',
      LLM_BASE_URL: 'http://127.0.0.1:11434/v1/',
      LLM_API_KEY: 'ollama',
      LLM_MODEL: 'qwen3:8b',
      LLM_TIMEOUT_MS: '30000',
      AGENT_MAX_STEPS: '4',
    });
    assert.deepEqual(local.llm, {
      baseUrl: 'http://127.0.0.1:11434/v1',
      apiKey: 'ollama',
      model: 'qwen3:8b',
      timeoutMs: 30_000,
      maxSteps: 4,
    });
    assert.throws(
      () => loadConfig({ LLM_BASE_URL: 'ftp://example.com' }),
      /LLM_BASE_URL must be an http\(s\) URL/,
    );
    assert.throws(() => loadConfig({ AGENT_MAX_STEPS: '0' }), ConfigError);
    assert.throws(() => loadConfig({ LLM_TIMEOUT_MS: '10' }), ConfigError);
  });

  it('reads the events socket settings: allowed origins as browsers send them, and the recheck interval', () => {
    const config = loadConfig({
      WS_ALLOWED_ORIGINS: ' https://App.Example.com/ ,http://localhost:5173',
      WS_RECHECK_MS: '500',
    });
    assert.deepEqual(config.wsAllowedOrigins, ['https://app.example.com', 'http://localhost:5173']);
    assert.equal(config.wsRecheckMs, 500);
    const defaults = loadConfig({});
    assert.equal(defaults.wsAllowedOrigins, undefined, 'the origin of PUBLIC_BASE_URL applies');
    assert.equal(defaults.wsRecheckMs, 15_000);
    assert.equal(loadConfig({ WS_ALLOWED_ORIGINS: ' , ' }).wsAllowedOrigins, undefined);
    assert.throws(
      () => loadConfig({ WS_ALLOWED_ORIGINS: 'app.example.com' }),
      /WS_ALLOWED_ORIGINS: app\.example\.com/,
    );
    assert.throws(() => loadConfig({ WS_RECHECK_MS: '10' }), ConfigError);
  });
});
