// Webhook URLs at configuration (docs/webhooks.md, The URL): https only (http only with WEBHOOK_ALLOW_PRIVATE=true); unless
// private targets are allowed, a host that is a literal non-public address in any notation, or a special-use name
// (`localhost`, `*.local`, `*.internal`, `*.home.arpa`, `*.onion`...), is refused; what is stored is the parsed,
// normalised URL. The address rules are the egress guard's own.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isNonPublicHost } from '../../src/platform/net/address-policy.ts';
import { assertWebhookUrl } from '../../src/accounts/admin-keys.ts';
import { AppError } from '../../src/platform/core/errors.ts';

const NOT_HTTPS = 'url must be a https URL';
const PRIVATE = 'url must not point to a private or local address';

/** What assertWebhookUrl answers: the stored URL, or the 400's message. */
function verdict(url: string, allowPrivate = false): string {
  try {
    return assertWebhookUrl(url, allowPrivate);
  } catch (error) {
    assert.ok(error instanceof AppError && error.status === 400, String(error));
    return `400 ${error.message}`;
  }
}

/** Literal private and local hosts, in the notations people (and attackers) write them. */
const PRIVATE_URLS = [
  'https://127.0.0.1',
  'https://127.0.0.1:8443/hook',
  'https://127.1',
  'https://127.255.255.254/x',
  'https://2130706433', // decimal
  'https://0x7f.0.0.1', // hex
  'https://0x7f000001',
  'https://0177.0.0.1', // octal
  'https://017700000001',
  'https://%31%32%37.0.0.1', // percent-encoded
  'https://１２７.0.0.1', // full-width digits
  'https://127.0.0.1.', // final dot
  'https://[::1]',
  'https://[0:0:0:0:0:0:0:1]',
  'https://[::]',
  'https://0.0.0.0',
  'https://0',
  'https://[::ffff:127.0.0.1]', // IPv4-mapped
  'https://[::ffff:7f00:1]',
  'https://[::ffff:10.0.0.1]',
  'https://[64:ff9b::127.0.0.1]', // NAT64 of loopback
  'https://[fe80::1]', // link-local
  'https://[fc00::1]', // unique local
  'https://[fd12:3456::1]',
  'https://169.254.169.254/latest/meta-data/', // cloud metadata
  'https://10.0.0.1',
  'https://172.16.0.1',
  'https://192.168.1.1',
  'https://100.64.0.1',
  'https://localhost',
  'https://LOCALHOST:443/hook',
  'https://localhost.',
  'https://api.localhost',
  'https://foo.localhost./hook',
  'https://printer.local/hook',
  'https://DB.Internal/hook',
  'https://x.home.arpa/hook',
  'https://abc.onion/hook',
  'https:\\\\127.0.0.1\\', // backslashes are slashes in special URLs
];

describe('isNonPublicHost', () => {
  it('is true for literal non-public addresses and localhost names, as WHATWG URL gives the host', () => {
    const wrong = PRIVATE_URLS.filter((url) => !isNonPublicHost(new URL(url).hostname));
    assert.deepEqual(wrong, []);
  });

  it('is false for names (judged when resolved) and for public addresses', () => {
    for (const host of [
      'example.com',
      'hooks.example.com',
      'localhost.example.com',
      'mylocalhost',
      'xn--nxasmq6b.com',
      '8.8.8.8',
      '93.184.216.34',
      '[2606:4700:4700::1111]',
      '[::ffff:8.8.8.8]',
      'a1.b2',
      'host-127.0.0.1.example.com',
    ]) {
      assert.equal(isNonPublicHost(host), false, host);
    }
  });

  it('fails closed on numeric hosts that are not canonical addresses (never left by WHATWG parsing)', () => {
    for (const host of [
      '0x7f.0.0.1',
      '2130706433',
      '0177.0.0.1',
      '127.1',
      '1.2.3.04',
      '999.1.1.1',
      '[::1',
      '[zz::1]',
    ])
      assert.equal(isNonPublicHost(host), true, host);
  });
});

describe('assertWebhookUrl', () => {
  it('refuses every literal private or local host unless private targets are allowed', () => {
    for (const url of PRIVATE_URLS) assert.equal(verdict(url), `400 ${PRIVATE}`, url);
    for (const url of PRIVATE_URLS) assert.equal(verdict(url, true), new URL(url).href, url);
  });

  it('answers the https rule first, then the address rule', () => {
    for (const url of ['http://127.0.0.1/hook', 'ftp://localhost', 'file:///etc/passwd', 'not a url', '']) {
      assert.equal(verdict(url), `400 ${NOT_HTTPS}`, url);
    }
    for (const url of ['https://user:pass@127.0.0.1/', 'https://user@example.com/']) {
      assert.equal(verdict(url), `400 ${NOT_HTTPS}`, url);
    }
    assert.equal(verdict('ftp://127.0.0.1', true), `400 ${NOT_HTTPS}`);
    assert.equal(verdict('http://127.0.0.1:9/hook', true), 'http://127.0.0.1:9/hook');
  });

  it('answers the parsed, normalised URL: what is checked is what is stored', () => {
    assert.equal(verdict('https://example.com/hook'), 'https://example.com/hook');
    assert.equal(verdict('https://EXAMPLE.com'), 'https://example.com/');
    assert.equal(verdict('https://example.com:443/a/../b?x=1#f'), 'https://example.com/b?x=1#f');
    assert.equal(verdict('https:\\\\example.com\\hooks'), 'https://example.com/hooks');
    assert.equal(verdict('  https://example.com/a b  '), 'https://example.com/a%20b');
    assert.equal(verdict('https://0x7f.0.0.1/hook', true), 'https://127.0.0.1/hook');
    assert.equal(verdict('https://[::ffff:127.0.0.1]/', true), 'https://[::ffff:7f00:1]/');
    assert.equal(verdict('https://8.8.8.8/hook'), 'https://8.8.8.8/hook');
    assert.equal(verdict('https://[2606:4700:4700::1111]/'), 'https://[2606:4700:4700::1111]/');
  });
});
