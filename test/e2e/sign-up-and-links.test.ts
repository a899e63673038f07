// Accounts (docs/accounts.md): one-time
// sign-in links an operator hands over, self-registration with SIGNUP=open, and the embedded mode's demo
// password. The service runs as a process; browsers are cookie jars over fetch reading the server-rendered pages.
//
// The main service runs with TRUST_PROXY=true and every Browser sends its own X-Forwarded-For address, so the
// per-address sign-up limit of one test never reaches another.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import {
  assertNoSessionCookie,
  assertPage,
  assertSeeOther,
  freshAddresses,
} from '../helpers/account-pages.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import {
  startService,
  call,
  adminClient,
  TEST_ADMIN_TOKEN,
  type RunningService,
} from '../helpers/service.ts';
import {
  Browser,
  findForm,
  findSetCookie,
  forms,
  labels,
  textContent,
  type Page,
} from '../helpers/browser-form.ts';

const FOREIGN_ORIGIN = 'https://evil.example';
const SESSION_MAX_AGE = String(14 * 24 * 3600);
const LINK_SPENT = 'This sign-in link has expired or was already used';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;
const LINK_PATH = /^\/sign-in\/link\/(mfsl_[0-9A-Za-z]+)$/;
const SIGNUP_CREDITS = 250;

const DB = 'sign_up_links';

let mongo: TestMongo;
let db: MongoClient;
/** SIGNUP=open, SIGNUP_CREDITS=250, TRUST_PROXY=true. */
let service: RunningService;
/** Embedded mode (no MONGO_URL): SIGNUP unset, the banner's demo user. */
let embedded: RunningService;

before(async () => {
  mongo = await startMongo();
  [service, embedded] = await Promise.all([
    startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: DB,
      SIGNUP: 'open',
      SIGNUP_CREDITS: String(SIGNUP_CREDITS),
      TRUST_PROXY: 'true',
    }),
    startService({}),
  ]);
  db = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
  await db.connect();
});

after(async () => {
  await db?.close();
  await Promise.all([service?.stop(), embedded?.stop()]);
  await mongo?.stop();
});

let counter = 0;
const freshAddress = freshAddresses();

function newBrowser(address = freshAddress(), target: RunningService = service): Browser {
  return new Browser(target.url, { headers: { 'x-forwarded-for': address } });
}

const freshEmail = (prefix: string) =>
  `${prefix}-${++counter}-${randomBytes(3).toString('hex')}@example.com`.toLowerCase();
const freshPassword = () => `correct horse ${randomBytes(6).toString('hex')}`;

/** The answer set the session cookie, with the attributes of /sign-in's. */
function assertSessionCookie(page: Page): void {
  const cookie = findSetCookie(page, 'mf_session');
  assert.ok(cookie && cookie.value.length >= 32, `Set-Cookie: ${page.setCookies.join(' | ')}`);
  assert.equal(cookie.attributes.path, '/');
  assert.equal(cookie.attributes['max-age'], SESSION_MAX_AGE);
  assert.equal(cookie.attributes.httponly, true);
  assert.equal(String(cookie.attributes.samesite).toLowerCase(), 'lax');
  assert.equal(cookie.attributes.secure, undefined, 'no Secure on http');
}

interface SessionView {
  user: { id: string; email: string; credits: number };
  csrf_token: string;
}

/** `GET /api/dashboard/v1/session` as the browser: the session, or fails. */
async function assertSignedIn(browser: Browser, email: string): Promise<SessionView> {
  const page = await browser.get('/api/dashboard/v1/session');
  assert.equal(page.status, 200, `${page.status} ${page.text}`);
  const session = JSON.parse(page.text) as SessionView;
  assert.equal(session.user.email, email);
  return session;
}

async function assertNotSignedIn(browser: Browser): Promise<void> {
  const page = await browser.get('/api/dashboard/v1/session');
  assert.equal(page.status, 401, `${page.status} ${page.text}`);
}

/** A user made by the operator (no password unless given). */
async function operatorUser(prefix: string, password?: string): Promise<{ id: string; email: string }> {
  const email = freshEmail(prefix);
  const id = await adminClient(service).createUser(email, 0);
  if (password !== undefined) {
    const set = await call(service.url, 'POST', `/api/admin/v1/users/${id}/password`, {
      token: TEST_ADMIN_TOKEN,
      body: { password },
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
  }
  return { id, email };
}

/** A new sign-in link for the user: its path (`/sign-in/link/mfsl_…`) and token. */
async function newLink(userId: string): Promise<{ path: string; token: string; url: string }> {
  const answer = await call<{ url: string; expires_at: string }>(
    service.url,
    'POST',
    `/api/admin/v1/users/${userId}/sign-in-links`,
    { token: TEST_ADMIN_TOKEN },
  );
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  const url = new URL(answer.body.url);
  const match = LINK_PATH.exec(url.pathname);
  assert.ok(match, `a sign-in link URL: ${answer.body.url}`);
  return { path: url.pathname, token: match[1]!, url: answer.body.url };
}

describe('sign-in links', () => {
  it('are made by the operator: 201 { url, expires_at } valid 30 minutes; 401 without the admin token, 404 for an unknown user', async () => {
    const user = await operatorUser('link-admin');
    const answer = await call<{ url: string; expires_at: string }>(
      service.url,
      'POST',
      `/api/admin/v1/users/${user.id}/sign-in-links`,
      { token: TEST_ADMIN_TOKEN },
    );
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    assert.deepEqual(Object.keys(answer.body).sort(), ['expires_at', 'url']);
    const url = new URL(answer.body.url);
    assert.equal(url.origin, new URL(service.url).origin, 'the link is on the service (PUBLIC_BASE_URL)');
    assert.match(url.pathname, /^\/sign-in\/link\/mfsl_[0-9A-Za-z]{20,}$/);
    assert.match(answer.body.expires_at, ISO);
    const minutes = (Date.parse(answer.body.expires_at) - Date.now()) / 60_000;
    assert.ok(minutes > 28 && minutes <= 30.1, `valid for ${minutes.toFixed(2)} minutes, expected 30`);

    const second = await newLink(user.id);
    assert.notEqual(second.url, answer.body.url, 'every link is new');

    for (const token of [undefined, 'wrong-admin-token', `${TEST_ADMIN_TOKEN}x`]) {
      const refused = await call(service.url, 'POST', `/api/admin/v1/users/${user.id}/sign-in-links`, {
        ...(token !== undefined ? { token } : {}),
      });
      assert.equal(refused.status, 401, `${String(token)}: ${JSON.stringify(refused.body)}`);
      assert.ok(!JSON.stringify(refused.body).includes('mfsl_'), 'no link without the admin token');
    }
    const unknown = await call(
      service.url,
      'POST',
      '/api/admin/v1/users/usr_doesnotexist0000/sign-in-links',
      {
        token: TEST_ADMIN_TOKEN,
      },
    );
    assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
  });

  it('show a page that does not spend the link, then sign in once with a POST: 303 to / with the session cookie', async () => {
    const user = await operatorUser('link-once');
    const link = await newLink(user.id);
    const browser = newBrowser();

    // Opening it (a person, or a mail scanner) spends nothing.
    for (let i = 0; i < 2; i++) {
      const page = await browser.get(link.url);
      assertPage(page, 200);
      assertNoSessionCookie(page);
      assert.ok(textContent(page.text).includes(`Sign in as ${user.email}`), textContent(page.text));
      const form = forms(page.text).find((f) => f.method === 'post');
      assert.ok(form, `a POST form: ${page.text}`);
      assert.ok(
        [link.path, link.url, ''].includes(form.action),
        `the form posts to the link itself, not ${form.action}`,
      );
      assert.ok(
        form.controls.some(
          (c) =>
            (c.tag === 'button' && c.text === 'Sign in') || (c.type === 'submit' && c.value === 'Sign in'),
        ),
        'a "Sign in" button',
      );
    }
    await assertNotSignedIn(browser);

    const page = await browser.get(link.path);
    const form = forms(page.text).find((f) => f.method === 'post')!;
    const signedIn = await browser.postForm(link.path, form.fields);
    assertSeeOther(signedIn, '/');
    assertSessionCookie(signedIn);
    const session = await assertSignedIn(browser, user.email);
    assert.equal(session.user.id, user.id);

    // Spent: a second POST (another browser, or the same one) and a GET answer the 400 page.
    for (const again of [newBrowser(), browser]) {
      const refused = await again.postForm(link.path, form.fields);
      assertPage(refused, 400);
      assert.ok(textContent(refused.text).includes(LINK_SPENT), textContent(refused.text));
      assertNoSessionCookie(refused);
    }
    const other = newBrowser();
    const spentPage = await other.get(link.path);
    assertPage(spentPage, 400);
    assert.ok(textContent(spentPage.text).includes(LINK_SPENT), textContent(spentPage.text));
    await assertNotSignedIn(other);
    // The session the link opened is a session like any other.
    await assertSignedIn(browser, user.email);
  });

  it('sign in without an Origin header too, and each link of a user is its own', async () => {
    const user = await operatorUser('link-two');
    const first = await newLink(user.id);
    const second = await newLink(user.id);
    const one = newBrowser();
    assertSeeOther(await one.postForm(first.path, {}, { origin: null }), '/');
    await assertSignedIn(one, user.email);
    const two = newBrowser();
    assertSeeOther(await two.postForm(second.path, {}), '/');
    await assertSignedIn(two, user.email);
  });

  it('refuse a POST from a foreign Origin (403) without spending the link', async () => {
    const user = await operatorUser('link-foreign');
    const link = await newLink(user.id);
    const attacker = newBrowser();
    const refused = await attacker.postForm(link.path, {}, { origin: FOREIGN_ORIGIN });
    assert.equal(refused.status, 403, `${refused.status} ${textContent(refused.text).slice(0, 300)}`);
    assertNoSessionCookie(refused);
    await assertNotSignedIn(attacker);

    const browser = newBrowser();
    assertPage(await browser.get(link.path), 200);
    assertSeeOther(await browser.postForm(link.path, {}), '/');
    await assertSignedIn(browser, user.email);
  });

  it('answer 400 once expired (the stored expiry moved into the past: no 30-minute wait)', async () => {
    const user = await operatorUser('link-expired');
    const link = await newLink(user.id);
    const browser = newBrowser();
    assertPage(await browser.get(link.path), 200);
    const moved = await db
      .db(DB)
      .collection('sign_in_links')
      .updateMany({ user_id: user.id }, { $set: { expires_at: new Date(Date.now() - 60_000) } });
    assert.equal(moved.matchedCount, 1, 'the link is stored in sign_in_links (test set-up)');
    const page = await browser.get(link.path);
    assertPage(page, 400);
    assert.ok(textContent(page.text).includes(LINK_SPENT), textContent(page.text));
    const posted = await browser.postForm(link.path, {});
    assertPage(posted, 400);
    assertNoSessionCookie(posted);
    await assertNotSignedIn(browser);
  });

  it('answer 400 for unknown and garbled tokens, on GET and POST', async () => {
    const unknown = `mfsl_${randomBytes(32).toString('base64url').replace(/[-_]/g, 'a').slice(0, 43)}`;
    for (const token of [unknown, 'mfsl_short', 'garbage', `${unknown}x`, 'mfs_notalink']) {
      const browser = newBrowser();
      const path = `/sign-in/link/${token}`;
      const page = await browser.get(path);
      assertPage(page, 400);
      assert.ok(textContent(page.text).includes(LINK_SPENT), `${token}: ${textContent(page.text)}`);
      const posted = await browser.postForm(path, {});
      assertPage(posted, 400);
      assert.ok(textContent(posted.text).includes(LINK_SPENT), `${token}: ${textContent(posted.text)}`);
      assertNoSessionCookie(posted);
      await assertNotSignedIn(browser);
    }
  });

  it('sign a user with a password in without changing it', async () => {
    const password = freshPassword();
    const user = await operatorUser('link-password', password);
    const link = await newLink(user.id);
    const browser = newBrowser();
    assertSeeOther(await browser.postForm(link.path, {}), '/');
    await assertSignedIn(browser, user.email);
    const withPassword = newBrowser();
    assertSeeOther(
      await withPassword.postForm('/sign-in', { email: user.email, password, next: '/account' }),
      '/account',
    );
  });
});

describe('sign-up (SIGNUP=open, SIGNUP_CREDITS=250)', () => {
  it('GET /sign-up is a form: Email, Password, Create account', async () => {
    const page = await newBrowser().get('/sign-up');
    assertPage(page, 200);
    const form = findForm(page.text, '/sign-up');
    assert.ok(form, page.text);
    assert.equal(form.method, 'post');
    const byName = (name: string) => form.controls.find((c) => c.name === name);
    const email = byName('email');
    const password = byName('password');
    assert.ok(email && email.tag === 'input', 'an email input');
    assert.ok(password && password.tag === 'input', 'a password input');
    assert.equal(password.type, 'password');
    const texts = labels(page.text);
    assert.equal(texts[email.id ?? ''], 'Email');
    assert.equal(texts[password.id ?? ''], 'Password');
    assert.ok(
      form.controls.some(
        (c) =>
          (c.tag === 'button' && c.text === 'Create account') ||
          (c.type === 'submit' && c.value === 'Create account'),
      ),
      'a "Create account" button',
    );
  });

  it('creates the user with 250 credits and a ledger entry, signs in, and the password works at /sign-in', async () => {
    const email = freshEmail('signup');
    const password = freshPassword();
    const browser = newBrowser();
    const form = findForm((await browser.get('/sign-up')).text, '/sign-up')!;
    const answer = await browser.postForm('/sign-up', { ...form.fields, email, password });
    assertSeeOther(answer, '/');
    assertSessionCookie(answer);

    const session = await assertSignedIn(browser, email);
    assert.equal(session.user.credits, SIGNUP_CREDITS);
    const ledgerPage = await browser.get('/api/dashboard/v1/ledger');
    assert.equal(ledgerPage.status, 200, ledgerPage.text);
    const ledger = JSON.parse(ledgerPage.text) as {
      entries: Array<{ delta: number; balance_after: number; job_id?: string | null }>;
    };
    assert.equal(ledger.entries.length, 1, ledgerPage.text);
    assert.equal(ledger.entries[0]!.delta, SIGNUP_CREDITS);
    assert.equal(ledger.entries[0]!.balance_after, SIGNUP_CREDITS);

    // The operator sees the same user.
    const seen = await call<{ user: { id: string; email: string; credits: number } }>(
      service.url,
      'GET',
      `/api/admin/v1/users/${session.user.id}`,
      { token: TEST_ADMIN_TOKEN },
    );
    assert.equal(seen.status, 200, JSON.stringify(seen.body));
    assert.equal(seen.body.user.email, email);
    assert.equal(seen.body.user.credits, SIGNUP_CREDITS);

    const again = newBrowser();
    assertSeeOther(await again.postForm('/sign-in', { email, password, next: '/account' }), '/account');
    await assertSignedIn(again, email);
    const wrong = await newBrowser().postForm('/sign-in', { email, password: `${password}x`, next: '/' });
    assert.equal(wrong.status, 401, 'a wrong password is still refused');
  });

  it('answers 409 for an email that already has an account, signing no one in', async () => {
    const email = freshEmail('dup');
    const password = freshPassword();
    assertSeeOther(await newBrowser().postForm('/sign-up', { email, password }), '/');
    const existing = await operatorUser('dup-operator');
    for (const [taken, label] of [
      [email, 'signed up'],
      [email.toUpperCase(), 'the same email in capitals'],
      [existing.email, 'made by the operator'],
    ] as const) {
      const browser = newBrowser();
      const page = await browser.postForm('/sign-up', { email: taken, password: freshPassword() });
      assertPage(page, 409);
      assert.ok(
        textContent(page.text).includes('An account with this email already exists'),
        `${label}: ${textContent(page.text)}`,
      );
      assertNoSessionCookie(page);
      await assertNotSignedIn(browser);
    }
    // The first password still works: the account was not changed.
    const browser = newBrowser();
    assertSeeOther(await browser.postForm('/sign-in', { email, password, next: '/account' }), '/account');
  });

  it('answers 400 pages with the admin API messages for a short password and a bad email, creating nothing', async () => {
    const email = freshEmail('short');
    const browser = newBrowser();
    const short = await browser.postForm('/sign-up', { email, password: 'too-short' });
    assertPage(short, 400);
    assert.ok(
      textContent(short.text).includes('password must be at least 10 characters'),
      textContent(short.text),
    );
    assertNoSessionCookie(short);
    const missing = await browser.postForm('/sign-up', { email });
    assertPage(missing, 400);
    for (const bad of ['not-an-email', '', 'a@']) {
      const page = await browser.postForm('/sign-up', { email: bad, password: freshPassword() });
      assertPage(page, 400);
      assert.match(textContent(page.text), /email/i, `${bad}: ${textContent(page.text)}`);
      assertNoSessionCookie(page);
    }
    await assertNotSignedIn(browser);
    // Nothing was created: the email is still free.
    assertSeeOther(await newBrowser().postForm('/sign-up', { email, password: freshPassword() }), '/');
  });

  it('refuses a POST from a foreign Origin (403), creating nothing', async () => {
    const email = freshEmail('foreign');
    const browser = newBrowser();
    const page = await browser.postForm(
      '/sign-up',
      { email, password: freshPassword() },
      { origin: FOREIGN_ORIGIN },
    );
    assert.equal(page.status, 403, `${page.status} ${textContent(page.text).slice(0, 300)}`);
    assertNoSessionCookie(page);
    await assertNotSignedIn(browser);
    assertSeeOther(await newBrowser().postForm('/sign-up', { email, password: freshPassword() }), '/');
  });

  it('allows at most 10 sign-ups per client address per hour (429 page), not limiting other addresses', async () => {
    const address = freshAddress();
    for (let i = 0; i < 10; i++) {
      const page = await newBrowser(address).postForm('/sign-up', {
        email: freshEmail('many'),
        password: freshPassword(),
      });
      assertSeeOther(page, '/');
    }
    const browser = newBrowser(address);
    const limited = await browser.postForm('/sign-up', {
      email: freshEmail('many'),
      password: freshPassword(),
    });
    assertPage(limited, 429);
    assertNoSessionCookie(limited);
    await assertNotSignedIn(browser);
    assertSeeOther(
      await newBrowser().postForm('/sign-up', { email: freshEmail('other'), password: freshPassword() }),
      '/',
    );
  });
});

describe('the embedded mode', () => {
  it('answers 404 to GET and POST /sign-up when SIGNUP is not set', async () => {
    const browser = newBrowser(undefined, embedded);
    const page = await browser.get('/sign-up');
    assert.equal(page.status, 404, page.text.slice(0, 300));
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/i);
    const posted = await browser.postForm('/sign-up', {
      email: freshEmail('closed'),
      password: freshPassword(),
    });
    assert.equal(posted.status, 404, posted.text.slice(0, 300));
    assertNoSessionCookie(posted);
    await assertNotSignedIn(browser);
  });

  it("prints the dashboard and the demo user's password in the banner, and that password signs in", async () => {
    const output = embedded.lines.join('\n');
    const match = /dashboard:\s+(\S+)\s+\(sign in as (\S+) with the password (\S+)\)/.exec(output);
    assert.ok(match, `the banner names the dashboard and the demo password:\n${output}`);
    const [, dashboard, email, password] = match;
    assert.equal(dashboard, `${embedded.url}/`);
    assert.equal(email, 'demo@mediaforge.local');
    assert.ok(password!.length >= 10, 'a password of at least 10 characters');

    const browser = newBrowser(undefined, embedded);
    const answer = await browser.postForm('/sign-in', { email: email!, password: password!, next: '/' });
    assertSeeOther(answer, '/');
    const account = await browser.get('/account');
    assert.equal(account.status, 200);
    assert.ok(textContent(account.text).includes(`Signed in as ${email}`), textContent(account.text));
    const session = await assertSignedIn(browser, email!);
    assert.ok(session.user.credits > 0, 'the demo user has credits');
  });
});
