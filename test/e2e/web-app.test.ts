// The dashboard as the service serves it (docs/dashboard.md): the page Vite built into dist/web answers every
// client-side path, never cached, under a Content-Security-Policy without inline script or style and never
// framed; its hashed assets are immutable; anything else under /assets is 404.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startService, type RunningService } from '../helpers/service.ts';

describe('the dashboard application', () => {
  let service: RunningService;
  before(async () => {
    service = await startService({});
  });
  after(async () => {
    await service?.stop();
  });

  const get = (path: string) => fetch(`${service.url}${path}`);

  it('answers its page on every client-side path, never cached, under a strict policy', async () => {
    let first: string | undefined;
    for (const path of [
      '/',
      '/keys',
      '/webhooks',
      '/credits',
      '/jobs',
      '/gallery',
      '/editor',
      '/editor/vp_x',
    ]) {
      const response = await get(path);
      assert.equal(response.status, 200, path);
      assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(response.headers.get('cache-control'), 'no-cache');
      assert.equal(response.headers.get('x-frame-options'), 'DENY');
      const policy = response.headers.get('content-security-policy') ?? '';
      for (const directive of [
        "script-src 'self'",
        "style-src 'self'",
        "frame-ancestors 'none'",
        "object-src 'none'",
        "base-uri 'none'",
      ]) {
        assert.ok(policy.includes(directive), `${path}: ${directive} in ${policy}`);
      }
      assert.ok(!policy.includes('unsafe-inline') && !policy.includes('unsafe-eval'), policy);
      const text = await response.text();
      first ??= text;
      assert.equal(text, first, 'one page for every path');
    }
    // No inline script or style: everything comes from /assets.
    assert.doesNotMatch(first!, /<script(?![^>]*\bsrc=)[^>]*>/i);
    assert.doesNotMatch(first!, /<style|\sstyle=/i);
    assert.match(first!, /<script[^>]+src="\/assets\/[^"]+\.js"/);
  });

  it('serves the hashed assets as immutable, with their types, and nothing else', async () => {
    const page = await (await get('/')).text();
    const assets = [...page.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1]!);
    assert.ok(
      assets.some((path) => path.endsWith('.js')),
      page,
    );
    for (const path of assets) {
      const response = await get(path);
      assert.equal(response.status, 200, path);
      assert.equal(response.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
      const type = response.headers.get('content-type') ?? '';
      assert.match(type, path.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      assert.ok((await response.arrayBuffer()).byteLength > 0);
    }
    for (const path of ['/assets/missing-abc123.js', '/assets/..%2Fpackage.json', '/assets/index.html']) {
      assert.equal((await get(path)).status, 404, path);
    }
  });
});
