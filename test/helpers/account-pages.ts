import assert from 'node:assert/strict';
import { findSetCookie, textContent, type Page } from './browser-form.ts';

// Checks shared by the tests of the account pages (sign-in, sign-up, sign-in links): what every page and
// redirect of them must be, and fresh client addresses so that one test's failed sign-ins never slow another's.

/** A source of client addresses never used before (the benchmarking range 198.18.0.0/15). */
export function freshAddresses(): () => string {
  let used = 0;
  return () => {
    used++;
    return `198.18.${Math.floor(used / 250)}.${(used % 250) + 1}`;
  };
}

/** Every HTML page: content type, no framing, no caching. */
export function assertPage(page: Page, status: number): void {
  const what = `${page.status} ${page.url}: ${textContent(page.text).slice(0, 300)}`;
  assert.equal(page.status, status, what);
  assert.equal(page.headers.get('content-type')?.toLowerCase(), 'text/html; charset=utf-8', what);
  assert.equal(page.headers.get('x-frame-options')?.toUpperCase(), 'DENY', what);
  assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/, what);
  assert.match(page.headers.get('cache-control') ?? '', /no-store/, what);
}

/** A 303 to `location` (exactly). */
export function assertSeeOther(page: Page, location: string): void {
  assert.equal(page.status, 303, `${page.url}: ${page.status} ${textContent(page.text).slice(0, 300)}`);
  assert.equal(page.location, location);
}

/** An answer that sets no session cookie (or clears it). */
export function assertNoSessionCookie(page: Page): void {
  const cookie = findSetCookie(page, 'mf_session');
  assert.ok(
    cookie === undefined || cookie.value === '',
    `unexpected Set-Cookie: ${page.setCookies.join(' | ')}`,
  );
}
