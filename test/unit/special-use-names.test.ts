// Special-use names are never public targets (docs/webhooks.md#the-url): judged from the text, before any DNS
// query, as WHATWG URL parsing leaves the host (lower case, IDNA- and percent-decoded).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isNonPublicHost, isSpecialUseName } from '../../src/platform/net/address-policy.ts';

const hostOf = (url: string) => new URL(url).hostname;

describe('isSpecialUseName', () => {
  it('is true for each special-use name and every name under it, in any case, with final dots', () => {
    for (const host of [
      'localhost',
      'localhost.',
      'LOCALHOST',
      'foo.localhost',
      'a.b.localhost.',
      'local',
      'printer.local',
      'Printer.Local.',
      'internal',
      'db.internal',
      'db.INTERNAL..',
      'home.arpa',
      'x.home.arpa',
      'nas.lan.home.arpa.',
      'onion',
      'abc.onion',
      'expyuzz4wqqyqhjn.onion',
    ])
      assert.equal(isSpecialUseName(host), true, host);
  });

  it('is false for names that only contain or resemble them', () => {
    for (const host of [
      'example.com',
      'localhost.example.com',
      'mylocalhost',
      'notlocal',
      'local.example.com',
      'internal.example.com',
      'myinternal',
      'arpa',
      'home.arpa.example.com',
      'xhome.arpa',
      'onion.example.com',
      'shallot',
      'localhost-1',
    ])
      assert.equal(isSpecialUseName(host), false, host);
  });

  it('sees through the spellings WHATWG URL parsing folds (case, percent-encoding, full-width, ideographic dots)', () => {
    for (const url of [
      'https://LocalHost/',
      'https://local%68ost/',
      'https://ｌｏｃａｌｈｏｓｔ/',
      'https://printer。local/',
      'https://db．internal/',
      'https://x.home.arpa./',
    ])
      assert.equal(isSpecialUseName(hostOf(url)), true, `${url} → ${hostOf(url)}`);
  });
});

describe('isNonPublicHost', () => {
  it('counts special-use names as non-public, next to literal private addresses', () => {
    for (const host of [
      'foo.localhost',
      'localhost.',
      'printer.local',
      'db.internal',
      'x.home.arpa',
      'abc.onion',
    ])
      assert.equal(isNonPublicHost(host), true, host);
    assert.equal(isNonPublicHost('127.0.0.1'), true);
    assert.equal(isNonPublicHost('images.example.com'), false);
  });
});
