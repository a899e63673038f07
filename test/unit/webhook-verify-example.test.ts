// The receiver's verification example in docs/webhooks.md, run as printed: it accepts what the service signs and
// rejects a changed body, another secret, a stale timestamp and a malformed header.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { webhookSignature } from '../../src/webhooks/webhook-signature.ts';

type Verify = (rawBody: Buffer, header: string, secret: string, toleranceSeconds?: number) => boolean;

describe('docs/webhooks.md verification example', () => {
  let verify: Verify;
  const secret = 'whsec_example_secret';
  const body = '{"job_id":"job_abc","status":"completed","model":"fal-ai/nano-banana"}';
  const now = () => Math.floor(Date.now() / 1000);

  before(async () => {
    const readme = await readFile(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('**Verifying a delivery**'));
    const code = /```js\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(code, 'docs/webhooks.md has the example');
    const file = join(await mkdtemp(join(tmpdir(), 'mf-readme-')), 'verify.mjs');
    await writeFile(file, code);
    verify = ((await import(pathToFileURL(file).href)) as { verifyMediaForgeWebhook: Verify })
      .verifyMediaForgeWebhook;
  });

  it('accepts a delivery signed as the service signs it', () => {
    assert.equal(verify(Buffer.from(body), webhookSignature(secret, now(), body), secret), true);
  });

  it('rejects a changed body, another secret, a stale timestamp and malformed headers', () => {
    const header = webhookSignature(secret, now(), body);
    assert.equal(verify(Buffer.from(body.replace('completed', 'failed')), header, secret), false);
    assert.equal(verify(Buffer.from(body), header, 'whsec_other'), false);
    assert.equal(verify(Buffer.from(body), webhookSignature(secret, now() - 301, body), secret), false);
    assert.equal(verify(Buffer.from(body), 'v1=deadbeef', secret), false);
    assert.equal(verify(Buffer.from(body), `t=${now()},v1=zz`, secret), false);
  });
});
