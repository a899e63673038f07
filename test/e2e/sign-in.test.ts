// User sign-in (docs/accounts.md): the server-rendered sign-in
// and account pages, the mf_session cookie, sessions in MongoDB (hashed, surviving a restart), sign-out and
// sign-out everywhere, Origin checks, and the growing delays against password guessing.
//
// The main service runs with TRUST_PROXY=true and every Browser sends its own X-Forwarded-For address, so
// the per-address failure counts of one test never slow another; every test also uses its own users.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import {
  startService,
  call,
  adminClient,
  TEST_ADMIN_TOKEN,
  type RunningService,
} from '../helpers/service.ts';
import { sleep } from '../helpers/wait.ts';
import {
  assertNoSessionCookie,
  assertPage,
  assertSeeOther,
  freshAddresses,
} from '../helpers/account-pages.ts';
import {
  Browser,
  findForm,
  findSetCookie,
  hiddenFields,
  labels,
  submitter,
  textContent,
  type Page,
} from '../helpers/browser-form.ts';

const DB = 'sign_in';
const RESTART_DB = 'sign_in_restart';
const HTTPS_DB = 'sign_in_https';
const HTTPS_BASE = 'https://media.example.test';
const INCORRECT = 'Incorrect email or password';
const FOREIGN_ORIGIN = 'https://evil.example';
const SESSION_MAX_AGE = String(14 * 24 * 3600);

let mongo: TestMongo;
let db: MongoClient;
/** TRUST_PROXY=true: each Browser is its own client address. */
let service: RunningService;
/** TRUST_PROXY unset; stopped and started again on the same database. */
let restartable: RunningService;
/** PUBLIC_BASE_URL is https: the cookie is Secure. */
let httpsBase: RunningService;

before(async () => {
  mongo = await startMongo();
  [service, restartable, httpsBase] = await Promise.all([
    startService({ MONGO_URL: mongo.uri, MONGO_DB: DB, TRUST_PROXY: 'true' }),
    startService({ MONGO_URL: mongo.uri, MONGO_DB: RESTART_DB }),
    startService({ MONGO_URL: mongo.uri, MONGO_DB: HTTPS_DB, PUBLIC_BASE_URL: HTTPS_BASE }),
  ]);
  db = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
  await db.connect();
});

after(async () => {
  await db?.close();
  await Promise.all([service?.stop(), restartable?.stop(), httpsBase?.stop()]);
  await mongo?.stop();
});

let counter = 0;
const freshAddress = freshAddresses();

/** A browser on the main service with an address of its own (or the one given). */
function newBrowser(address = freshAddress(), target: RunningService = service): Browser {
  return new Browser(target.url, { headers: { 'x-forwarded-for': address } });
}

interface TestUser {
  id: string;
  email: string;
  password: string;
}

/** A user (lower-case email: the service stores emails lower-cased) with a password unless `password: null`. */
async function newUser(
  prefix: string,
  target: RunningService = service,
  password: string | null = `pass-${prefix}-${Math.random().toString(36).slice(2)}`,
): Promise<TestUser> {
  const email = `${prefix}-${++counter}@example.com`.toLowerCase();
  const id = await adminClient(target).createUser(email, 0);
  if (password !== null) {
    const set = await call(target.url, 'POST', `/api/admin/v1/users/${id}/password`, {
      token: TEST_ADMIN_TOKEN,
      body: { password },
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
  }
  return { id, email, password: password ?? '' };
}

/** Posts the sign-in form's fields (`email`, `password`, `next`) as a browser would, with its Origin. */
async function signIn(
  browser: Browser,
  email: string,
  password: string,
  next = '/account',
  options: { origin?: string | null } = {},
): Promise<Page> {
  return browser.postForm('/sign-in', { email, password, next }, options);
}

/** Runs `action`, returning its answer and how long it took. */
async function timed(action: () => Promise<Page>): Promise<{ page: Page; ms: number }> {
  const started = performance.now();
  const page = await action();
  return { page, ms: performance.now() - started };
}

/** `GET /account`: 200 "Signed in as <email>", or fails. */
async function assertSignedIn(browser: Browser, email: string): Promise<Page> {
  const page = await browser.get('/account');
  assertPage(page, 200);
  assert.ok(textContent(page.text).includes(`Signed in as ${email}`), textContent(page.text));
  return page;
}

/** `GET /account` sends the browser to sign in. */
async function assertSignedOut(browser: Browser): Promise<void> {
  assertSeeOther(await browser.get('/account'), '/sign-in?next=%2Faccount');
}

/** Documents in web_sessions (of the user whose id they mention, when given). */
async function sessionCount(userId?: string): Promise<number> {
  const documents = await db.db(DB).collection('web_sessions').find({}).toArray();
  return documents.filter((d) => userId === undefined || JSON.stringify(d).includes(userId)).length;
}

describe('the sign-in page', () => {
  it('is a form posting email, password and the hidden next to /sign-in, with labels and a Sign in button', async () => {
    const page = await newBrowser().get('/sign-in?next=%2Fprojects%3Fsort%3Dnew');
    assertPage(page, 200);
    const form = findForm(page.text, '/sign-in');
    assert.ok(form, page.text);
    assert.equal(form.method, 'post');
    assert.equal(form.attrs.action, '/sign-in');
    const byName = (name: string) => form.controls.find((c) => c.name === name);
    const email = byName('email');
    const password = byName('password');
    assert.ok(email && email.tag === 'input', 'an email input');
    assert.ok(password && password.tag === 'input', 'a password input');
    assert.equal(password.type, 'password', 'the password is not shown');
    const texts = labels(page.text);
    assert.ok(email.id, 'the email input has an id for its label');
    assert.ok(password.id, 'the password input has an id for its label');
    assert.equal(texts[email.id], 'Email');
    assert.equal(texts[password.id], 'Password');
    assert.equal(byName('next')?.type, 'hidden');
    assert.equal(hiddenFields(form.html).next, '/projects?sort=new');
    assert.ok(
      form.controls.some(
        (c) => (c.tag === 'button' && c.text === 'Sign in') || (c.type === 'submit' && c.value === 'Sign in'),
      ),
      'a "Sign in" button',
    );
  });

  it('HTML-escapes the next value it echoes', async () => {
    const next = "/x\"><script>alert(1)</script><b a='1'>&amp;";
    const page = await newBrowser().get(`/sign-in?next=${encodeURIComponent(next)}`);
    assertPage(page, 200);
    assert.ok(!page.text.includes('<script>alert(1)</script>'), 'the script tag reached the page');
    assert.ok(!page.text.includes("<b a='1'>"), 'a tag reached the page');
    assert.equal(hiddenFields(page.text).next, next, 'the hidden next holds the value itself');
    // A value that is not a local path may be replaced by the dashboard's /, but never reaches the page raw.
    const outside = '"><script>alert(2)</script>';
    const other = await newBrowser().get(`/sign-in?next=${encodeURIComponent(outside)}`);
    assertPage(other, 200);
    assert.ok(!other.text.includes('<script>alert(2)'), 'the script tag reached the page');
    assert.ok(['/', outside].includes(hiddenFields(other.text).next ?? ''), other.text);
  });

  it('sends a browser that already has a session on to next, or the dashboard', async () => {
    const user = await newUser('already');
    const browser = newBrowser();
    assertSeeOther(await signIn(browser, user.email, user.password), '/account');
    assertSeeOther(await browser.get('/sign-in?next=%2Fprojects%2F42'), '/projects/42');
    assertSeeOther(await browser.get('/sign-in'), '/');
    for (const evil of ['//evil.example', 'https://evil.example', '/\\evil.example'])
      assertSeeOther(await browser.get(`/sign-in?next=${encodeURIComponent(evil)}`), '/');
  });
});

describe('POST /sign-in', () => {
  it('signs in: 303 to next and an HttpOnly, SameSite=Lax, 14-day mf_session cookie without Secure on http', async () => {
    const user = await newUser('signin');
    const browser = newBrowser();
    const page = await browser.get('/sign-in?next=%2Faccount');
    const form = findForm(page.text, '/sign-in')!;
    const answer = await browser.postForm(form.action, {
      ...form.fields,
      email: user.email,
      password: user.password,
    });
    assertSeeOther(answer, '/account');
    const cookie = findSetCookie(answer, 'mf_session');
    assert.ok(cookie, `Set-Cookie: ${answer.setCookies.join(' | ')}`);
    assert.ok(cookie.value.length >= 32, `a short session token: ${cookie.value}`);
    assert.equal(cookie.attributes.path, '/');
    assert.equal(cookie.attributes['max-age'], SESSION_MAX_AGE);
    assert.equal(cookie.attributes.httponly, true);
    assert.equal(String(cookie.attributes.samesite).toLowerCase(), 'lax');
    assert.equal(cookie.attributes.secure, undefined, 'Secure on an http service');
    assert.equal(cookie.attributes.domain, undefined, 'no Domain: the host only');
    // The account page, with the two sign-out forms.
    const account = await assertSignedIn(browser, user.email);
    for (const [action, label] of [
      ['/sign-out', 'Sign out'],
      ['/sign-out-everywhere', 'Sign out everywhere'],
    ] as const) {
      const signOut = findForm(account.text, action);
      assert.ok(signOut, `a form to ${action}`);
      assert.equal(signOut.method, 'post');
      assert.ok(hiddenFields(signOut.html).csrf_token, `a csrf_token in the form to ${action}`);
      submitter(signOut, label);
    }
    // The email is matched whatever its letter case.
    assertSeeOther(await signIn(newBrowser(), user.email.toUpperCase(), user.password), '/account');
  });

  it('goes to a local next, and to the dashboard (/) for anything else (open redirects)', async () => {
    const user = await newUser('next');
    const cases: [string, string][] = [
      ['/projects?sort=new&page=2', '/projects?sort=new&page=2'],
      ['/account', '/account'],
      ['', '/'],
      ['//evil.example', '/'],
      ['//evil.example/account', '/'],
      ['https://evil.example', '/'],
      ['https://evil.example/account', '/'],
      ['/\\evil.example', '/'],
      ['\\\\evil.example', '/'],
      ['javascript:alert(1)', '/'],
      // Browsers drop tabs and line breaks from URLs: `/\t/evil.example` is `//evil.example` to them.
      ['/\t/evil.example', '/'],
      ['/\n/evil.example', '/'],
      ['/a\r\nset-cookie: x=y', '/'],
      ['evil.example', '/'],
    ];
    for (const [next, location] of cases) {
      const answer = await signIn(newBrowser(), user.email, user.password, next);
      assert.equal(answer.status, 303, `next=${next}: ${answer.status}`);
      assert.equal(answer.location, location, `next=${JSON.stringify(next)}`);
    }
  });

  it('answers 401 "Incorrect email or password" alike for a wrong password, an unknown email and a user without password', async () => {
    const user = await newUser('wrong');
    const passwordless = await newUser('nopass', service, null);
    const unknown = `nobody-${++counter}@example.com`;
    const wrongPassword = 'not-the-password-123';
    const attempts: [string, string][] = [
      [user.email, wrongPassword],
      [unknown, user.password],
      [passwordless.email, wrongPassword],
    ];
    const bodies: string[] = [];
    for (const [email, password] of attempts) {
      const browser = newBrowser();
      const answer = await signIn(browser, email, password);
      assertPage(answer, 401);
      assert.ok(answer.text.includes(INCORRECT), `${email}: ${answer.text}`);
      if (password) assert.ok(!answer.text.includes(password), 'the password was echoed');
      assertNoSessionCookie(answer);
      assert.equal(browser.cookie('mf_session'), undefined);
      await assertSignedOut(browser);
      bodies.push(textContent(answer.text).split(email).join('EMAIL'));
    }
    for (const body of bodies.slice(1)) assert.equal(body, bodies[0], 'the same page either way');
    // The user can still sign in.
    assertSeeOther(await signIn(newBrowser(), user.email, user.password), '/account');
  });

  it('costs an unknown email about what a wrong password costs (no telling which emails have accounts)', async () => {
    const user = await newUser('cost');
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const known: number[] = [];
    const unknown: number[] = [];
    // Interleaved, each from its own address; 4 failures on the account stay under its 5 free ones.
    for (let i = 0; i < 4; i++) {
      const wrong = await timed(() => signIn(newBrowser(), user.email, `wrong password ${i}`));
      assertPage(wrong.page, 401);
      known.push(wrong.ms);
      const nobody = await timed(() =>
        signIn(newBrowser(), `nobody-${++counter}@example.com`, user.password),
      );
      assertPage(nobody.page, 401);
      unknown.push(nobody.ms);
    }
    // Loose: a password hash check is tens of milliseconds; skipping it for unknown emails costs ~1 ms.
    assert.ok(
      median(unknown) >= 0.3 * median(known),
      `unknown emails ${unknown.map(Math.round).join(', ')} ms; wrong passwords ${known.map(Math.round).join(', ')} ms`,
    );
    assertSeeOther(await signIn(newBrowser(), user.email, user.password), '/account');
  });

  it('answers 400 HTML to a malformed form and sets no cookie', async () => {
    const user = await newUser('malformed');
    const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
    const cases: [string, { body: string | Buffer; contentType?: string }][] = [
      ['no password', { body: form({ email: user.email, next: '/account' }) }],
      ['no email', { body: form({ password: user.password, next: '/account' }) }],
      ['an empty body', { body: '' }],
      [
        'a body over 16 KiB',
        { body: form({ email: user.email, password: user.password, next: `/${'a'.repeat(17 * 1024)}` }) },
      ],
      [
        'JSON',
        {
          body: JSON.stringify({ email: user.email, password: user.password, next: '/account' }),
          contentType: 'application/json',
        },
      ],
      [
        'text/plain',
        { body: `email=${user.email}&password=${user.password}&next=/account`, contentType: 'text/plain' },
      ],
      // A Buffer body: fetch adds no content type of its own.
      [
        'no content type',
        { body: Buffer.from(form({ email: user.email, password: user.password, next: '/' })) },
      ],
    ];
    // Every case is tried; the mismatches are reported together.
    const problems: string[] = [];
    for (const [what, { body, contentType }] of cases) {
      const browser = newBrowser();
      const answer = await browser.request('POST', '/sign-in', {
        body,
        ...(contentType !== undefined
          ? { contentType }
          : Buffer.isBuffer(body)
            ? {}
            : { contentType: 'application/x-www-form-urlencoded' }),
      });
      try {
        assertPage(answer, 400);
        assertNoSessionCookie(answer);
        await assertSignedOut(browser);
      } catch (error) {
        const message = (error as Error).message.split('\n')[0];
        problems.push(`${what}: ${answer.status} ${answer.headers.get('content-type')} (${message})`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('answers 403 to a foreign Origin and signs nobody in; no Origin at all is a non-browser client', async () => {
    const user = await newUser('origin');
    const before = await sessionCount();
    const foreign = [
      FOREIGN_ORIGIN,
      'null',
      new URL(service.url).origin.replace(/:\d+$/, ':1'),
      'http://localhost',
    ];
    for (const origin of foreign) {
      const browser = newBrowser();
      const answer = await signIn(browser, user.email, user.password, '/account', { origin });
      assert.equal(answer.status, 403, `Origin ${origin}: ${answer.status}`);
      assertNoSessionCookie(answer);
      await assertSignedOut(browser);
    }
    assert.equal(await sessionCount(), before, 'a foreign-origin sign-in stored a session');
    // Refused attempts are no failures: six wrong ones from one address, then its next attempt is not
    // delayed (loose: six counted failures would make it wait 4 s).
    const address = freshAddress();
    for (let i = 0; i < 6; i++) {
      const refused = await signIn(newBrowser(address), user.email, `wrong ${i}`, '/account', {
        origin: FOREIGN_ORIGIN,
      });
      assert.equal(refused.status, 403);
    }
    const next = await timed(() => signIn(newBrowser(address), user.email, user.password));
    assertSeeOther(next.page, '/account');
    assert.ok(next.ms < 2000, `after refused attempts a sign-in took ${next.ms} ms`);
    // Its own origin, and no Origin header, sign in.
    assertSeeOther(await signIn(newBrowser(), user.email, user.password), '/account');
    const noOrigin = newBrowser();
    assertSeeOther(
      await signIn(noOrigin, user.email, user.password, '/account', { origin: null }),
      '/account',
    );
    await assertSignedIn(noOrigin, user.email);
  });

  it('answers 403 to a foreign page whatever the form encoding (text/plain, multipart/form-data)', async () => {
    const user = await newUser('enctype');
    const before = await sessionCount();
    // A foreign page's form may also be sent as text/plain or multipart/form-data (no preflight either way).
    const encodings = (fields: Record<string, string>): [string, string][] => [
      ['text/plain', new URLSearchParams(fields).toString()],
      [
        'multipart/form-data; boundary=x',
        Object.entries(fields)
          .map(([name, value]) => `--x\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)
          .join('') + '--x--\r\n',
      ],
    ];
    const problems: string[] = [];
    for (const [contentType, body] of encodings({
      email: user.email,
      password: user.password,
      next: '/account',
    })) {
      const browser = newBrowser();
      const answer = await browser.request('POST', '/sign-in', { body, contentType, origin: FOREIGN_ORIGIN });
      if (answer.status !== 403)
        problems.push(`POST /sign-in ${contentType}: ${answer.status} ${answer.text}`);
      await assertSignedOut(browser);
    }
    assert.equal(await sessionCount(), before, 'a foreign-origin sign-in stored a session');
    // Sign-out forms too: the session stays.
    const browser = newBrowser();
    assertSeeOther(await signIn(browser, user.email, user.password), '/account');
    const account = await assertSignedIn(browser, user.email);
    for (const path of ['/sign-out', '/sign-out-everywhere']) {
      const fields = findForm(account.text, path)!.fields as Record<string, string>;
      for (const [contentType, body] of encodings(fields)) {
        const answer = await browser.request('POST', path, { body, contentType, origin: FOREIGN_ORIGIN });
        if (answer.status !== 403)
          problems.push(`POST ${path} ${contentType}: ${answer.status} ${answer.text}`);
        await assertSignedIn(browser, user.email);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('sets a Secure cookie when PUBLIC_BASE_URL is https, whose origin is then the only own origin', async () => {
    const user = await newUser('secure', httpsBase);
    const browser = new Browser(httpsBase.url);
    const bound = await signIn(browser, user.email, user.password, '/account'); // Origin: http://127.0.0.1:<port>
    assert.equal(bound.status, 403, 'the bound http origin is not the public one');
    const answer = await signIn(browser, user.email, user.password, '/account', { origin: HTTPS_BASE });
    assertSeeOther(answer, '/account');
    const cookie = findSetCookie(answer, 'mf_session');
    assert.ok(cookie);
    assert.equal(cookie.attributes.secure, true, `Set-Cookie: ${answer.setCookies.join(' | ')}`);
    assert.equal(cookie.attributes.httponly, true);
    await assertSignedIn(browser, user.email);
  });
});

describe('sessions', () => {
  it('GET /account without a session, or with a made-up one, sends to /sign-in?next=%2Faccount', async () => {
    await assertSignedOut(newBrowser());
    const browser = newBrowser();
    browser.setCookie('mf_session', 'x'.repeat(43));
    await assertSignedOut(browser);
    // A real token with its last character changed: well-formed, but no session.
    const user = await newUser('madeup');
    const real = newBrowser();
    assertSeeOther(await signIn(real, user.email, user.password), '/account');
    const token = real.cookie('mf_session')!;
    const forged = newBrowser();
    forged.setCookie('mf_session', token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A'));
    await assertSignedOut(forged);
    await assertSignedIn(real, user.email);
  });

  it('HTML-escapes the email on the account page', async () => {
    const email = `o'q"<b>&x-${++counter}@example.com`;
    const id = await adminClient(service).createUser(email, 0);
    const password = 'an escaped passphrase 1';
    const set = await call(service.url, 'POST', `/api/admin/v1/users/${id}/password`, {
      token: TEST_ADMIN_TOKEN,
      body: { password },
    });
    assert.equal(set.status, 200);
    const browser = newBrowser();
    assertSeeOther(await signIn(browser, email, password), '/account');
    const page = await assertSignedIn(browser, email);
    assert.ok(!page.text.includes('<b>'), 'the email reached the page unescaped');
  });

  it('stores only a hash of the session token in web_sessions', async () => {
    const user = await newUser('hashed');
    const browser = newBrowser();
    const before = await sessionCount();
    assertSeeOther(await signIn(browser, user.email, user.password), '/account');
    const token = browser.cookie('mf_session')!;
    assert.ok(token);
    assert.equal(await sessionCount(), before + 1, 'one session document per sign-in');
    const documents = JSON.stringify(await db.db(DB).collection('web_sessions').find({}).toArray());
    assert.ok(documents.includes(user.id), 'the session names its user');
    assert.ok(!documents.includes(token), 'the session token is stored as it is');
    assert.ok(!documents.includes(decodeURIComponent(token)), 'the session token is stored as it is');
    // It lasts 14 days: the document holds a date about 14 days ahead (whatever its field's name).
    const mine = (await db.db(DB).collection('web_sessions').find({}).toArray()).filter((d) =>
      JSON.stringify(d).includes(user.id),
    );
    assert.equal(mine.length, 1);
    const inFourteenDays = Date.now() + 14 * 24 * 3600_000;
    const dates = Object.values(mine[0]!).filter((v): v is Date => v instanceof Date);
    assert.ok(
      dates.some((d) => Math.abs(d.getTime() - inFourteenDays) < 3600_000),
      `no expiry 14 days ahead among ${dates.map((d) => d.toISOString()).join(', ')}`,
    );
    await assertSignedIn(browser, user.email);
  });

  it('survives a restart of the service on the same database', async () => {
    const user = await newUser('restart', restartable);
    const first = new Browser(restartable.url);
    assertSeeOther(await signIn(first, user.email, user.password), '/account');
    await assertSignedIn(first, user.email);
    const token = first.cookie('mf_session')!;
    const { code } = await restartable.stop();
    assert.equal(code, 0, 'the service stops cleanly');
    restartable = await startService({ MONGO_URL: mongo.uri, MONGO_DB: RESTART_DB });
    const again = new Browser(restartable.url);
    again.setCookie('mf_session', token);
    await assertSignedIn(again, user.email);
  });
});

describe('sign-out', () => {
  it('needs the csrf_token (403, the session still works), then ends the session and clears the cookie', async () => {
    const user = await newUser('signout');
    const browser = newBrowser();
    assertSeeOther(await signIn(browser, user.email, user.password), '/account');
    const token = browser.cookie('mf_session')!;
    const sessions = await sessionCount(user.id);
    const account = await assertSignedIn(browser, user.email);
    const form = findForm(account.text, '/sign-out')!;
    const csrf = hiddenFields(form.html).csrf_token!;
    for (const fields of [
      {} as Record<string, string>,
      { csrf_token: '' },
      { csrf_token: `${csrf}x` },
      { csrf_token: 'A'.repeat(csrf.length) },
    ]) {
      const refused = await browser.postForm('/sign-out', fields);
      assert.equal(refused.status, 403, `${JSON.stringify(fields)}: ${refused.status}`);
      assertNoSessionCookie(refused);
      assert.equal(browser.cookie('mf_session'), token);
      await assertSignedIn(browser, user.email);
    }
    // The right token from a foreign page.
    const foreign = await browser.postForm('/sign-out', form.fields, { origin: FOREIGN_ORIGIN });
    assert.equal(foreign.status, 403);
    await assertSignedIn(browser, user.email);
    assert.equal(await sessionCount(user.id), sessions, 'a refused sign-out changed the sessions');

    const done = await browser.postForm(form.action, { ...form.fields, ...submitter(form, 'Sign out') });
    assertSeeOther(done, '/sign-in');
    const cleared = findSetCookie(done, 'mf_session');
    assert.ok(cleared, `Set-Cookie: ${done.setCookies.join(' | ')}`);
    assert.equal(cleared.value, '');
    assert.equal(cleared.attributes.path, '/');
    assert.equal(cleared.attributes['max-age'], '0');
    assert.equal(browser.cookie('mf_session'), undefined);
    // The old cookie no longer works anywhere.
    const replay = newBrowser();
    replay.setCookie('mf_session', token);
    await assertSignedOut(replay);
    const page = await replay.get('/sign-in');
    assertPage(page, 200);
    assert.ok(findForm(page.text, '/sign-in'), 'the sign-in form, not a redirect');
    assert.equal(await sessionCount(user.id), sessions - 1, 'the session document is deleted');
    // Signing out again, without a session: back to the sign-in page.
    assertSeeOther(await browser.postForm('/sign-out', { csrf_token: csrf }), '/sign-in');
    assertSeeOther(await replay.postForm('/sign-out', { csrf_token: csrf }), '/sign-in');
  });

  it("sign-out everywhere ends every session of the user and no one else's", async () => {
    const user = await newUser('everywhere');
    const other = await newUser('bystander');
    const [laptop, phone, bystander] = [newBrowser(), newBrowser(), newBrowser()];
    assertSeeOther(await signIn(laptop, user.email, user.password), '/account');
    assertSeeOther(await signIn(phone, user.email, user.password), '/account');
    assertSeeOther(await signIn(bystander, other.email, other.password), '/account');
    assert.notEqual(laptop.cookie('mf_session'), phone.cookie('mf_session'), 'one token per session');
    const account = await assertSignedIn(laptop, user.email);
    const form = findForm(account.text, '/sign-out-everywhere')!;
    // Without the csrf_token, or from a foreign page: nothing happens.
    assert.equal((await laptop.postForm('/sign-out-everywhere', {})).status, 403);
    assert.equal(
      (await laptop.postForm('/sign-out-everywhere', form.fields, { origin: FOREIGN_ORIGIN })).status,
      403,
    );
    await assertSignedIn(laptop, user.email);
    await assertSignedIn(phone, user.email);
    const laptopToken = laptop.cookie('mf_session')!;

    const done = await laptop.postForm(form.action, {
      ...form.fields,
      ...submitter(form, 'Sign out everywhere'),
    });
    assertSeeOther(done, '/sign-in');
    assert.equal(findSetCookie(done, 'mf_session')?.attributes['max-age'], '0');
    await assertSignedOut(laptop);
    await assertSignedOut(phone);
    const replay = newBrowser();
    replay.setCookie('mf_session', laptopToken);
    await assertSignedOut(replay);
    await assertSignedIn(bystander, other.email);
    assert.equal(await sessionCount(user.id), 0, "the user's session documents are deleted");
    // The user signs in again as usual.
    assertSeeOther(await signIn(phone, user.email, user.password), '/account');
    await assertSignedIn(phone, user.email);
  });
});

describe('growing delays', () => {
  it('lets an address fail 3 times at once, then waits 0.5 s, 1 s, 2 s; a success clears its failures', async () => {
    const user = await newUser('addr');
    const address = freshAddress();
    // Each attempt names another unknown account: only the address's failures add up.
    const fail = () =>
      timed(() => signIn(newBrowser(address), `ghost-${++counter}@example.com`, 'wrong password 123'));
    const free: number[] = [];
    for (let i = 0; i < 3; i++) {
      const { page, ms } = await fail();
      assertPage(page, 401);
      free.push(ms);
    }
    const fourth = await fail();
    assertPage(fourth.page, 401);
    assert.ok(fourth.ms >= 400, `the 4th attempt took ${fourth.ms} ms`);
    const fifth = await fail();
    assertPage(fifth.page, 401);
    assert.ok(fifth.ms >= 900, `the 5th attempt took ${fifth.ms} ms`);
    assert.ok(fifth.ms > fourth.ms, `the delay grows: ${fourth.ms} ms then ${fifth.ms} ms`);
    assert.ok(fourth.ms > Math.min(...free), `free attempts ${free.join(', ')} ms, the 4th ${fourth.ms} ms`);
    // The right password still signs in from this address, after the wait.
    const browser = newBrowser(address);
    const right = await timed(() => signIn(browser, user.email, user.password));
    assertSeeOther(right.page, '/account');
    assert.ok(right.ms >= 1900, `the 6th attempt took ${right.ms} ms`);
    await assertSignedIn(browser, user.email);
    // The success cleared the address's failures: no wait any more (loose: the wait would be 2 s or more).
    const after = await fail();
    assertPage(after.page, 401);
    assert.ok(after.ms < 1500, `after a success an attempt still took ${after.ms} ms`);
  });

  it('slows guesses at one account from many addresses, yet its owner still signs in', async () => {
    const user = await newUser('target');
    const guess = (email = user.email) =>
      timed(() => signIn(newBrowser(), email, `guess-${++counter}-wrong`));
    // The account is the email whatever its letter case.
    for (let i = 0; i < 5; i++)
      assertPage((await guess(i % 2 ? user.email.toUpperCase() : user.email)).page, 401);
    const sixth = await guess();
    assertPage(sixth.page, 401);
    assert.ok(sixth.ms >= 400, `the 6th failure on the account took ${sixth.ms} ms`);
    // An attack on the account keeps going while its owner signs in from home.
    const owner = newBrowser();
    const attack = Promise.all([guess(), sleep(50).then(() => guess())]);
    const own = await timed(() => signIn(owner, user.email, user.password));
    assertSeeOther(own.page, '/account');
    assert.ok(own.ms >= 400, `the owner's attempt during the attack took ${own.ms} ms`);
    await assertSignedIn(owner, user.email);
    for (const { page } of await attack) assertPage(page, 401);
    // The owner's success cleared the account's failures (at most the two guesses that ended after it are
    // left): the next guess waits no more (loose: without the clearing it would wait 2 s or more).
    const later = await guess();
    assertPage(later.page, 401);
    assert.ok(later.ms < 1500, `a guess after the owner's sign-in took ${later.ms} ms`);
  });

  it('without TRUST_PROXY counts failures per connection address, whatever X-Forwarded-For says', async () => {
    // `restartable` runs without TRUST_PROXY; its clients are all 127.0.0.1.
    const fail = () =>
      timed(() =>
        signIn(
          newBrowser(freshAddress(), restartable),
          `ghost-${++counter}@example.com`,
          'wrong password 789',
        ),
      );
    for (let i = 0; i < 3; i++) assertPage((await fail()).page, 401);
    const fourth = await fail();
    assertPage(fourth.page, 401);
    assert.ok(fourth.ms >= 400, `the 4th failure from 127.0.0.1 took ${fourth.ms} ms`);
    // A success clears the address for the tests after this one.
    const user = await newUser('untrusted', restartable);
    assertSeeOther(await signIn(new Browser(restartable.url), user.email, user.password), '/account');
  });

  it('answers 429 with Retry-After to a second attempt from an address whose first is waiting', async () => {
    const user = await newUser('parallel');
    const address = freshAddress();
    const fail = () => signIn(newBrowser(address), `ghost-${++counter}@example.com`, 'wrong password 456');
    for (let i = 0; i < 4; i++) assertPage(await fail(), 401);
    // The 5th waits about a second; meanwhile another attempt from the same address, even the right one.
    const waiting = timed(fail);
    await sleep(150); // the 5th attempt is in its delay by now (nothing outside shows it)
    const parallel = await signIn(newBrowser(address), user.email, user.password);
    assertPage(parallel, 429);
    const retryAfter = parallel.headers.get('retry-after');
    assert.match(retryAfter ?? '', /^\d+$/, `Retry-After: ${retryAfter}`);
    assertNoSessionCookie(parallel);
    const first = await waiting;
    assertPage(first.page, 401);
    assert.ok(first.ms >= 900, `the waiting attempt took ${first.ms} ms`);
    // Another address is not affected by this one's wait.
    const elsewhere = newBrowser();
    assertSeeOther(await signIn(elsewhere, user.email, user.password), '/account');
  });
});
