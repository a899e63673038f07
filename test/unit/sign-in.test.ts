// Sign-in (docs/accounts.md): growing delays per address and per account that never lock an owner out, one
// attempt at a time per address, sessions named by a hashed cookie, and the pages' escaping and redirects.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  FAILURE_WINDOW_MS,
  SIGN_IN_DELAYS,
  createSignInThrottle,
  delayAfter,
} from '../../src/accounts/sign-in-throttle.ts';
import { createWebSessions, SESSION_TTL_MS, SIGN_IN_LINK_TTL_MS } from '../../src/accounts/web-sessions.ts';
import { sessionPrincipal, SESSION_TOKEN_TTL_MS } from '../../src/accounts/session-tokens.ts';
import { hashPassword } from '../../src/accounts/passwords.ts';
import { hashSecret } from '../../src/accounts/api-key.ts';
import type {
  SessionTokenRecord,
  SignInLinkRecord,
  WebSessionRecord,
} from '../../src/accounts/ports/web-sessions.ts';
import type { UserRecord } from '../../src/accounts/ports/users-repository.ts';
import { createHash } from 'node:crypto';
import { escapeHtml, html, cookieOf, page } from '../../src/platform/http/html.ts';
import { localPath } from '../../src/accounts/routes/sign-in.ts';

describe('sign-in delays', () => {
  it('grow from the first failure past the free ones, doubling up to a cap', () => {
    const { address, account } = SIGN_IN_DELAYS;
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 6, 20].map((n) => delayAfter(n, address)),
      [0, 0, 0, 500, 1000, 2000, 4000, 30_000],
    );
    assert.deepEqual(
      [4, 5, 6, 7, 8, 100].map((n) => delayAfter(n, account)),
      [0, 500, 1000, 2000, 4000, 5000],
    );
  });

  it('count per address and per account, the larger delay applying; success forgets both', () => {
    let now = 0;
    const throttle = createSignInThrottle(() => now);
    const attempt = (address: string, account: string, ok: boolean) => {
      const started = throttle.begin(address, account);
      assert.notEqual(started, 'busy');
      throttle.end(address, account, ok);
      return started === 'busy' ? -1 : started.delayMs;
    };
    for (let i = 0; i < 3; i++) assert.equal(attempt('1.1.1.1', 'a@x', false), 0);
    assert.equal(attempt('1.1.1.1', 'b@x', false), 500, 'the address is slowed whatever the account');
    // The account has 1 failure from 1.1.1.1 (a@x 3 + b@x …): spread over addresses, the account curve applies.
    for (let i = 0; i < 5; i++) attempt(`2.0.0.${i}`, 'c@x', false);
    assert.equal(attempt('3.3.3.3', 'c@x', true), 500, 'a fresh address waits for the attacked account…');
    assert.equal(attempt('4.4.4.4', 'c@x', true), 0, '…until its owner signs in');
    now += FAILURE_WINDOW_MS;
    assert.equal(attempt('1.1.1.1', 'a@x', false), 0, 'old failures are forgotten');
  });

  it('never stops an account for longer than its cap, whatever a stranger does', () => {
    const throttle = createSignInThrottle(() => 0);
    for (let i = 0; i < 1000; i++) {
      throttle.begin(`10.0.${i >> 8}.${i & 255}`, 'victim@x');
      throttle.end(`10.0.${i >> 8}.${i & 255}`, 'victim@x', false);
    }
    const owner = throttle.begin('192.0.2.1', 'victim@x');
    assert.deepEqual(owner, { delayMs: SIGN_IN_DELAYS.account.maxMs });
  });

  it('allows one attempt at a time per address', () => {
    const throttle = createSignInThrottle(() => 0);
    assert.notEqual(throttle.begin('1.1.1.1', 'a@x'), 'busy');
    assert.equal(throttle.begin('1.1.1.1', 'b@x'), 'busy');
    assert.notEqual(throttle.begin('2.2.2.2', 'a@x'), 'busy', 'other addresses go on');
    throttle.end('1.1.1.1', 'a@x', false);
    assert.notEqual(throttle.begin('1.1.1.1', 'a@x'), 'busy');
  });

  it('sweeps entries older than the window', () => {
    let now = 0;
    const throttle = createSignInThrottle(() => now);
    for (let i = 0; i < 4; i++) {
      throttle.begin('1.1.1.1', 'a@x');
      throttle.end('1.1.1.1', 'a@x', false);
    }
    now += FAILURE_WINDOW_MS + 1;
    throttle.sweep();
    now -= FAILURE_WINDOW_MS; // even read back in time, the swept failures are gone
    assert.deepEqual(throttle.begin('1.1.1.1', 'a@x'), { delayMs: 0 });
  });
});

describe('web sessions', () => {
  async function harness() {
    const user: UserRecord = { id: 'usr_1', email: 'ada@example.com', credits: 0, created_at: new Date(0) };
    const hash = await hashPassword('a good long password');
    const stored = new Map<string, WebSessionRecord>();
    const tokens = new Map<string, SessionTokenRecord>();
    const links = new Map<string, SignInLinkRecord>();
    const slept: number[] = [];
    const everywhere: string[] = [];
    let now = 1_000_000;
    const sessions = createWebSessions({
      users: {
        create: async () => 'created',
        get: async (id) => (id === user.id ? user : null),
        findByEmail: async (email) => (email === user.email ? user : null),
        list: async () => [user],
      },
      credentials: {
        setPasswordHash: async () => undefined,
        passwordHash: async (id) => (id === user.id ? hash : null),
      },
      sessions: {
        create: async (session) => void stored.set(session.id, session),
        get: async (id) => stored.get(id) ?? null,
        // Deleting sessions deletes their tokens (as the MongoDB adapter does).
        delete: async (id) => {
          stored.delete(id);
          for (const [key, token] of tokens) if (token.session_id === id) tokens.delete(key);
        },
        deleteForUser: async (id) => {
          for (const [key, session] of stored) if (session.user_id === id) stored.delete(key);
          for (const [key, token] of tokens) if (token.user_id === id) tokens.delete(key);
        },
        createToken: async (token) => void tokens.set(token.id, token),
        getToken: async (id) => tokens.get(id) ?? null,
        createSignInLink: async (link) => void links.set(link.id, link),
        getSignInLink: async (id) => links.get(id) ?? null,
        spendSignInLink: async (id, at) => {
          const link = links.get(id);
          if (!link || link.spent_at) return false;
          links.set(id, { ...link, spent_at: at });
          return true;
        },
      },
      throttle: createSignInThrottle(() => now),
      clock: { now: () => now },
      onSignOutEverywhere: async (id) => void everywhere.push(id),
      sleep: async (ms) => void slept.push(ms),
    });
    return { sessions, stored, tokens, slept, everywhere, advance: (ms: number) => (now += ms) };
  }

  it('signs in with the right password only; stores the cookie hashed; expires after its lifetime', async () => {
    const h = await harness();
    assert.deepEqual(await h.sessions.signIn('ada@example.com', 'wrong password!', '1.1.1.1'), {
      kind: 'invalid',
    });
    assert.deepEqual(await h.sessions.signIn('nobody@example.com', 'a good long password', '1.1.1.1'), {
      kind: 'invalid',
    });
    const outcome = await h.sessions.signIn(' Ada@Example.com ', 'a good long password', '1.1.1.1');
    assert.equal(outcome.kind, 'signed_in');
    const { cookie } = outcome as { cookie: string };
    assert.match(cookie, /^mfs_[0-9A-Za-z]{43}$/);
    assert.deepEqual([...h.stored.keys()], [hashSecret(cookie)]);
    const current = await h.sessions.resolve(cookie);
    assert.equal(current?.user.id, 'usr_1');
    assert.equal(h.sessions.csrfMatches(current!.session, current!.session.csrf_token), true);
    assert.equal(h.sessions.csrfMatches(current!.session, 'forged'), false);
    assert.equal(h.sessions.csrfMatches(current!.session, undefined), false);
    assert.equal(await h.sessions.resolve(`${cookie}x`), null);
    assert.equal(await h.sessions.resolve(undefined), null);
    h.advance(SESSION_TTL_MS);
    assert.equal(await h.sessions.resolve(cookie), null);
  });

  it('waits the growing delay before checking, and still lets the right password in', async () => {
    const h = await harness();
    for (let i = 0; i < 6; i++) await h.sessions.signIn('ada@example.com', 'guess number ' + i, '6.6.6.6');
    assert.deepEqual(h.slept, [500, 1000, 2000]);
    const owner = await h.sessions.signIn('ada@example.com', 'a good long password', '7.7.7.7');
    assert.equal(owner.kind, 'signed_in');
    assert.equal(h.slept.at(-1), 1000, 'the account curve (6 failures) applied to the owner’s fresh address');
  });

  it('signs out one session, or every session and what they authorised', async () => {
    const h = await harness();
    const first = (await h.sessions.signIn('ada@example.com', 'a good long password', '1.1.1.1')) as {
      cookie: string;
    };
    const second = (await h.sessions.signIn('ada@example.com', 'a good long password', '1.1.1.1')) as {
      cookie: string;
    };
    await h.sessions.signOut((await h.sessions.resolve(first.cookie))!.session);
    assert.equal(await h.sessions.resolve(first.cookie), null);
    assert.ok(await h.sessions.resolve(second.cookie));
    await h.sessions.signOutEverywhere('usr_1');
    assert.equal(await h.sessions.resolve(second.cookie), null);
    assert.deepEqual(h.everywhere, ['usr_1']);
  });

  it('hands the page bearer tokens that act as the user, live 15 minutes and end with the session', async () => {
    const h = await harness();
    const signedIn = (await h.sessions.signIn('ada@example.com', 'a good long password', '1.1.1.1')) as {
      cookie: string;
    };
    const { session } = (await h.sessions.resolve(signedIn.cookie))!;
    const issued = await h.sessions.issueToken(session);
    assert.match(issued.token, /^mfdt_[0-9A-Za-z]{43}$/);
    assert.ok(!JSON.stringify([...h.tokens.values()]).includes(issued.token), 'only its hash is stored');
    const principal = await h.sessions.authenticateToken(issued.token);
    assert.equal(principal?.userId, 'usr_1');
    assert.equal(principal?.keyId, sessionPrincipal(session).keyId);
    assert.match(principal!.keyId, /^ses_[0-9a-f]{20}$/);
    assert.ok(!session.id.startsWith(signedIn.cookie) && principal!.keyId.length < session.id.length);
    assert.equal(await h.sessions.authenticateToken(`${issued.token.slice(0, -1)}x`), null);
    h.advance(SESSION_TOKEN_TTL_MS);
    assert.equal(await h.sessions.authenticateToken(issued.token), null, 'expired');
    const fresh = await h.sessions.issueToken(session);
    assert.ok(await h.sessions.authenticateToken(fresh.token));
    await h.sessions.signOut(session);
    assert.equal(await h.sessions.authenticateToken(fresh.token), null, 'ended with its session');
  });

  it('opens one session per sign-in link, within its lifetime, never by looking at it', async () => {
    const h = await harness();
    await assert.rejects(h.sessions.createSignInLink('usr_nobody'), /User not found/);
    const link = await h.sessions.createSignInLink('usr_1');
    assert.match(link.token, /^mfsl_[0-9A-Za-z]{43}$/);
    assert.equal((await h.sessions.linkUser(link.token))?.id, 'usr_1');
    assert.equal((await h.sessions.linkUser(link.token))?.id, 'usr_1', 'looking spends nothing');
    const opened = await h.sessions.signInWithLink(link.token);
    assert.equal(opened.kind, 'signed_in');
    assert.equal((await h.sessions.resolve((opened as { cookie: string }).cookie))?.user.id, 'usr_1');
    assert.deepEqual(await h.sessions.signInWithLink(link.token), { kind: 'invalid' }, 'once');
    assert.equal(await h.sessions.linkUser(link.token), null);
    const late = await h.sessions.createSignInLink('usr_1');
    h.advance(SIGN_IN_LINK_TTL_MS);
    assert.deepEqual(await h.sessions.signInWithLink(late.token), { kind: 'invalid' }, 'expired');
    assert.deepEqual(await h.sessions.signInWithLink('mfsl_garbled'), { kind: 'invalid' });
  });
});

describe('pages', () => {
  it('escape every interpolated value unless it is markup built the same way', () => {
    assert.equal(
      escapeHtml(`<img src=x onerror="a('b')">&`),
      '&lt;img src=x onerror=&quot;a(&#39;b&#39;)&quot;&gt;&amp;',
    );
    const inner = html`<b>${'<i>'}</b>`;
    assert.equal(
      html`<p title="${'"x'}">${inner}${['<', html`<em>e</em>`]}${undefined}</p>`.markup,
      '<p title="&quot;x"><b>&lt;i&gt;</b>&lt;<em>e</em></p>',
    );
  });

  it('carry one stylesheet, allowed by its hash, and a referrer policy under which forms send their Origin', () => {
    const reply = page(200, 'Test', html`<p>hi</p>`);
    const markup = (reply.body as { text: string }).text;
    const styles = [...markup.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((match) => match[1]!);
    assert.equal(styles.length, 1);
    const hash = createHash('sha256').update(styles[0]!).digest('base64');
    const policy = reply.headers!['content-security-policy']!;
    assert.ok(policy.includes(`style-src 'sha256-${hash}'`), policy);
    assert.match(policy, /default-src 'none'/);
    assert.doesNotMatch(markup, /<script|name="referrer"/);
    // `no-referrer` makes browsers send `Origin: null` on a form's POST, which the pages refuse.
    assert.equal(reply.headers!['referrer-policy'], 'same-origin');
  });

  it('follow `next` only to a local path', () => {
    assert.equal(localPath('/oauth/authorize?client_id=x'), '/oauth/authorize?client_id=x');
    for (const next of [
      '//evil.example',
      'https://evil.example',
      '/\\evil.example',
      'evil',
      '',
      null,
      '/a\nb',
    ]) {
      assert.equal(localPath(next), '/', String(next));
    }
  });

  it('read one cookie among several', () => {
    const ctx = { headers: { cookie: 'a=1; mf_session=mfs_abc; b=2=3' } };
    assert.equal(cookieOf(ctx, 'mf_session'), 'mfs_abc');
    assert.equal(cookieOf(ctx, 'b'), '2=3');
    assert.equal(cookieOf(ctx, 'missing'), undefined);
    assert.equal(cookieOf({ headers: {} }, 'a'), undefined);
  });
});
