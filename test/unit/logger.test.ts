import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger, scrubSecrets } from '../../src/platform/logger.ts';
import { generateApiKey } from '../../src/accounts/api-key.ts';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, destination };
}

describe('log redaction', () => {
  it('scrubs API keys, webhook secrets and the admin token wherever they appear in a line', () => {
    const { apiKey } = generateApiKey();
    const line = scrubSecrets(`key=${apiKey} secret=whsec_abcDEF123-_xyz admin=topsecret-admin-token`, [
      'topsecret-admin-token',
    ]);
    assert.ok(!line.includes(apiKey));
    assert.ok(!line.includes('whsec_abcDEF123'));
    assert.ok(!line.includes('topsecret-admin-token'));
    assert.match(line, /mf_\[REDACTED\]/);
    assert.match(line, /whsec_\[REDACTED\]/);
  });

  it('never writes a secret through the logger, in fields, messages or errors', () => {
    const { lines, destination } = capture();
    const adminToken = 'admin-token-0123456789abcdef';
    const log = createLogger({ level: 'trace', nodeId: 'n1', secrets: [adminToken], destination });
    const { apiKey } = generateApiKey();
    log.info({ headers: { authorization: `Bearer ${apiKey}` }, api_key: apiKey }, 'with fields');
    log.info(`message mentioning ${apiKey} and ${adminToken}`);
    log.error({ err: new Error(`boom whsec_${'s'.repeat(40)} ${apiKey}`) }, 'error');
    log.child({ token: adminToken }).warn({ query: `access_token=${apiKey}` }, 'child');
    const all = lines.join('');
    assert.equal(lines.length, 4);
    assert.ok(!all.includes(apiKey));
    assert.ok(!all.includes(adminToken));
    assert.ok(!all.includes('whsec_ssss'));
    assert.ok(all.includes('[REDACTED]'));
  });
});
