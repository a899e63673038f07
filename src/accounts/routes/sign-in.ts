import Type from 'typebox';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../../../schemas/password-rules.ts';
import { SESSION_TTL_MS, type SignedIn, type WebSessions } from '../web-sessions.ts';
import {
  defineRoute,
  type RequestContext,
  type RouteDefinition,
  FORM_MAX_BYTES,
  cookieOf,
  fromOwnOrigin,
  html,
  page,
  seeOther,
  type Html,
} from '../../platform/index.ts';

// Sign-in, the account page and sign-out (docs/accounts.md, Pages) as plain server-rendered pages. Forms
// carry the session's CSRF token and must come from our own origin; the session cookie is HttpOnly and
// SameSite=Lax.

export const SESSION_COOKIE = 'mf_session';
export const ACCOUNT_PATH = '/account';
export const SIGN_IN_PATH = '/sign-in';
/** Where a sign-in without `next` lands: the dashboard. */
export const DASHBOARD_PATH = '/';
/** The longest deliverable address (RFC 5321), as for users the admin API creates. */
export const EMAIL_MAX_LENGTH = 254;

/** What the account pages share with the consent page: the session behind a request, and the cookie. */
export interface BrowserSessions {
  sessions: WebSessions;
  /** `PUBLIC_BASE_URL`: its origin is the only one forms may come from; https adds `Secure` to the cookie. */
  baseUrl: string;
}

/** The signed-in user of the request's session cookie, or null. */
export const signedIn = (
  browser: BrowserSessions,
  ctx: Pick<RequestContext, 'headers'>,
): Promise<SignedIn | null> => browser.sessions.resolve(cookieOf(ctx, SESSION_COOKIE));

export const ownOrigin = (browser: BrowserSessions): string => new URL(browser.baseUrl).origin;

/** The session cookie (docs/accounts.md): HttpOnly, SameSite=Lax, Secure on https; max age 0 clears it. */
export function sessionCookie(
  browser: BrowserSessions,
  value: string,
  maxAgeSeconds = SESSION_TTL_MS / 1000,
): string {
  const secure = browser.baseUrl.startsWith('https:') ? '; Secure' : '';
  return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure}`;
}

/** The sign-in page's link back to `next` (a local path; anything else could send the user elsewhere). */
export function localPath(next: string | null | undefined): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\'))
    return DASHBOARD_PATH;
  const control = [...next].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f);
  return control ? DASHBOARD_PATH : next;
}

/** The page for a request that breaks the rules of forms (another origin, a missing CSRF token). */
export const forbiddenPage = () =>
  page(
    403,
    'Not allowed',
    html`<h1>Not allowed</h1>
      <p>
        This form was not sent from a MediaForge page, or it has expired. Go back, reload the page and try
        again.
      </p>`,
  );

/** The email-and-password form of the sign-in and sign-up pages, with the message of a refused attempt. */
export function credentialsForm(form: {
  action: string;
  submit: string;
  email: string;
  /** A password being chosen (sign-up): the browser offers to generate one; its minimum length is shown. */
  newPassword: boolean;
  message?: string | undefined;
  hidden?: Html;
}): Html {
  const autocomplete = form.newPassword ? 'new-password' : 'current-password';
  return html`${form.message ? html`<p class="error" role="alert">${form.message}</p>` : ''}
    <form method="post" action="${form.action}">
      ${form.hidden ?? ''}
      <label for="email">Email</label>
      <input
        id="email"
        name="email"
        type="email"
        autocomplete="username"
        required
        maxlength="${EMAIL_MAX_LENGTH}"
        value="${form.email}"
      />
      <label for="password">Password</label>
      <input
        id="password"
        name="password"
        type="password"
        autocomplete="${autocomplete}"
        required
        ${form.newPassword ? html`minlength="${PASSWORD_MIN_LENGTH}"` : ''}
        maxlength="${PASSWORD_MAX_LENGTH}"
      />
      <button type="submit">${form.submit}</button>
    </form>`;
}

function signInPage(
  status: number,
  next: string,
  message?: string,
  email = '',
  headers?: Record<string, string>,
) {
  return page(
    status,
    'Sign in',
    html`<h1>Sign in to MediaForge</h1>
      ${credentialsForm({
        action: SIGN_IN_PATH,
        submit: 'Sign in',
        email,
        newPassword: false,
        message,
        hidden: html`<input type="hidden" name="next" value="${next}" />`,
      })}
      <p class="muted">
        No password yet? Ask your operator for a sign-in link, or for a password (<code
          >POST /api/admin/v1/users/&lt;id&gt;/password</code
        >).
      </p>`,
    headers ? { headers } : {},
  );
}

function accountPage(current: SignedIn): ReturnType<typeof page> {
  const csrf = current.session.csrf_token;
  const form = (action: string, label: string): Html =>
    html`<form method="post" action="${action}">
      <input type="hidden" name="csrf_token" value="${csrf}" /><button type="submit">${label}</button>
    </form>`;
  return page(
    200,
    'Account',
    html`<h1>Your account</h1>
      <p>Signed in as <strong>${current.user.email}</strong>.</p>
      ${form('/sign-out', 'Sign out')} ${form('/sign-out-everywhere', 'Sign out everywhere')}
      <p class="muted">
        Signing out everywhere ends every session of this account and revokes the access of every application
        you connected with OAuth.
      </p>`,
  );
}

export function signInRoutes(browser: BrowserSessions): RouteDefinition[] {
  const { sessions } = browser;
  const origin = ownOrigin(browser);
  const signedOut = () => seeOther(SIGN_IN_PATH, { 'set-cookie': sessionCookie(browser, '', 0) });
  const form = { maxBytes: FORM_MAX_BYTES };
  const htmlResponses = { 200: { description: 'An HTML page' }, 303: { description: 'A redirect' } };

  /** Sign-out and sign-out everywhere: same checks, different reach. */
  const signOutRoute = (path: string, summary: string, end: (current: SignedIn) => Promise<void>) =>
    defineRoute({
      method: 'POST',
      path,
      auth: { kind: 'none' },
      summary,
      tags: ['accounts'],
      form,
      responses: { 303: { description: 'Signed out: to the sign-in page' }, 403: { description: 'Refused' } },
      async handle(ctx) {
        if (!fromOwnOrigin(ctx, origin)) return forbiddenPage();
        const fields = ctx.form;
        const current = await signedIn(browser, ctx);
        if (!current) return signedOut();
        if (!sessions.csrfMatches(current.session, fields?.get('csrf_token') ?? undefined))
          return forbiddenPage();
        await end(current);
        ctx.log.info(
          { user_id: current.user.id },
          path === '/sign-out' ? 'signed out' : 'signed out everywhere',
        );
        return signedOut();
      },
    });

  return [
    defineRoute({
      method: 'GET',
      path: SIGN_IN_PATH,
      auth: { kind: 'none' },
      summary: 'The sign-in page',
      tags: ['accounts'],
      query: Type.Object({ next: Type.Optional(Type.String()) }),
      responses: htmlResponses,
      async handle(ctx) {
        const next = localPath(ctx.query.next);
        if (await signedIn(browser, ctx)) return seeOther(next);
        return signInPage(200, next);
      },
    }),
    defineRoute({
      method: 'POST',
      path: SIGN_IN_PATH,
      auth: { kind: 'none' },
      summary: 'Signs in with email and password (a form); sets the session cookie',
      tags: ['accounts'],
      form,
      responses: {
        ...htmlResponses,
        401: { description: 'Wrong credentials' },
        429: { description: 'Busy' },
      },
      async handle(ctx) {
        if (!fromOwnOrigin(ctx, origin)) return forbiddenPage();
        const fields = ctx.form;
        const next = localPath(fields?.get('next'));
        const email = fields?.get('email')?.trim() ?? '';
        const password = fields?.get('password') ?? '';
        if (!email || !password || email.length > EMAIL_MAX_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
          return signInPage(400, next, 'Enter your email and password.', email.slice(0, EMAIL_MAX_LENGTH));
        }
        const outcome = await sessions.signIn(email, password, ctx.ip);
        if (outcome.kind === 'busy') {
          return signInPage(
            429,
            next,
            'Another sign-in from your address is under way; try again in a moment.',
            email,
            {
              'retry-after': '1',
            },
          );
        }
        if (outcome.kind === 'invalid') {
          ctx.log.info({ ip: ctx.ip }, 'sign-in failed');
          return signInPage(401, next, 'Incorrect email or password.', email);
        }
        ctx.log.info({ user_id: outcome.session.user_id }, 'signed in');
        return seeOther(next, { 'set-cookie': sessionCookie(browser, outcome.cookie) });
      },
    }),
    defineRoute({
      method: 'GET',
      path: ACCOUNT_PATH,
      auth: { kind: 'none' },
      summary: 'The signed-in account, with sign-out',
      tags: ['accounts'],
      responses: htmlResponses,
      async handle(ctx) {
        const current = await signedIn(browser, ctx);
        if (!current) return seeOther(`${SIGN_IN_PATH}?next=${encodeURIComponent(ACCOUNT_PATH)}`);
        return accountPage(current);
      },
    }),
    signOutRoute('/sign-out', 'Ends this browser session', (current) => sessions.signOut(current.session)),
    signOutRoute(
      '/sign-out-everywhere',
      "Ends every session of the user and revokes the user's OAuth grants",
      (current) => sessions.signOutEverywhere(current.user.id),
    ),
  ];
}
