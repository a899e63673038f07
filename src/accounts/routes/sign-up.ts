import { CreateUserBody, PasswordBody, UserParams } from '../../../schemas/admin.ts';
import { ErrorSchema } from '../../../schemas/common.ts';
import { createChecker } from '../../../schemas/validate.ts';
import {
  AppError,
  RollingWindowLimiter,
  FORM_MAX_BYTES,
  fromOwnOrigin,
  html,
  page,
  seeOther,
  defineRoute,
  reply,
  type RouteDefinition,
} from '../../platform/index.ts';
import type { AdminService } from '../admin-service.ts';
import type { SignInOutcome } from '../web-sessions.ts';
import {
  DASHBOARD_PATH,
  EMAIL_MAX_LENGTH,
  SIGN_IN_PATH,
  credentialsForm,
  forbiddenPage,
  ownOrigin,
  sessionCookie,
  type BrowserSessions,
} from './sign-in.ts';

// The second way in (docs/accounts.md): one-time sign-in links that operators hand out, and self-registration
// when `SIGNUP=open`. Both end like a sign-in: a session cookie and the dashboard.

const LINK_PATH = '/sign-in/link/:token';
const SIGN_UP_PATH = '/sign-up';

export interface SignUpRouteOptions extends BrowserSessions {
  admin: Pick<AdminService, 'createUser' | 'setPassword'>;
  signup: { open: boolean; credits: number };
  signupsPerMinute: number;
  now: () => number;
}

const expiredLinkPage = () =>
  page(
    400,
    'Sign-in link',
    html`<h1>This sign-in link cannot be used</h1>
      <p role="alert">This sign-in link has expired or was already used. Ask for a new one.</p>`,
  );

function signUpPage(status: number, message?: string, email = '', headers?: Record<string, string>) {
  return page(
    status,
    'Create an account',
    html`<h1>Create your MediaForge account</h1>
      ${credentialsForm({ action: SIGN_UP_PATH, submit: 'Create account', email, newPassword: true, message })}
      <p class="muted">Already have an account? <a href="${SIGN_IN_PATH}">Sign in</a>.</p>`,
    headers ? { headers } : {},
  );
}

const FORM = { maxBytes: FORM_MAX_BYTES };

const closedPage = () =>
  page(
    404,
    'Not found',
    html`<h1>Not found</h1>
      <p>Sign-up is closed here.</p>`,
  );

/** A new session's cookie, and on to the dashboard. */
const signedIn = (options: SignUpRouteOptions, outcome: Extract<SignInOutcome, { kind: 'signed_in' }>) =>
  seeOther(DASHBOARD_PATH, { 'set-cookie': sessionCookie(options, outcome.cookie) });

/** Sign-in links, then self-registration. */
export function signUpRoutes(options: SignUpRouteOptions): RouteDefinition[] {
  return [...signInLinkRoutes(options), ...selfSignUpRoutes(options)];
}

/** One-time sign-in links: an operator asks for one; the person opens it, then spends it. */
function signInLinkRoutes(options: SignUpRouteOptions): RouteDefinition[] {
  const { sessions } = options;
  const origin = ownOrigin(options);
  return [
    defineRoute({
      method: 'POST',
      path: '/api/admin/v1/users/:user_id/sign-in-links',
      params: UserParams,
      auth: { kind: 'admin' },
      tags: ['admin'],
      summary: 'A one-time sign-in link for the user (30 minutes)',
      responses: {
        201: { description: '{ url, expires_at }' },
        401: { description: 'Missing or wrong admin token', schema: ErrorSchema },
        404: { description: 'Unknown user', schema: ErrorSchema },
      },
      async handle(ctx) {
        const link = await sessions.createSignInLink(ctx.params.user_id);
        const url = `${options.baseUrl}${LINK_PATH.replace(':token', link.token)}`;
        return reply(201, { url, expires_at: link.expires_at }, { 'cache-control': 'no-store' });
      },
    }),
    defineRoute({
      method: 'GET',
      path: LINK_PATH,
      auth: { kind: 'none' },
      summary: "A sign-in link's page: looking at it spends nothing (mail scanners open links)",
      responses: { 200: { description: 'The page' }, 400: { description: 'Expired or used' } },
      async handle(ctx) {
        const { token } = ctx.params as { token: string };
        const user = await sessions.linkUser(token);
        if (!user) return expiredLinkPage();
        return page(
          200,
          'Sign in',
          html`<h1>Sign in to MediaForge</h1>
            <p>Sign in as <strong>${user.email}</strong>. This link works once.</p>
            <form method="post" action="${ctx.path}"><button type="submit">Sign in</button></form>`,
        );
      },
    }),
    defineRoute({
      method: 'POST',
      path: LINK_PATH,
      auth: { kind: 'none' },
      summary: 'Spends a sign-in link and opens its session',
      form: FORM,
      responses: {
        303: { description: 'Signed in: to the dashboard' },
        400: { description: 'Expired or used' },
      },
      async handle(ctx) {
        if (!fromOwnOrigin(ctx, origin)) return forbiddenPage();
        const outcome = await sessions.signInWithLink((ctx.params as { token: string }).token);
        if (outcome.kind !== 'signed_in') return expiredLinkPage();
        ctx.log.info({ user_id: outcome.session.user_id }, 'signed in with a link');
        return signedIn(options, outcome);
      },
    }),
  ];
}

/** Self-registration when `SIGNUP=open`: the page and its form, rate-limited per address. */
function selfSignUpRoutes(options: SignUpRouteOptions): RouteDefinition[] {
  const { sessions } = options;
  const origin = ownOrigin(options);
  const emailChecker = createChecker(CreateUserBody);
  const passwordChecker = createChecker(PasswordBody);
  const signups = new RollingWindowLimiter(options.signupsPerMinute, options.now);
  return [
    defineRoute({
      method: 'GET',
      path: SIGN_UP_PATH,
      auth: { kind: 'none' },
      summary: 'The sign-up page (SIGNUP=open)',
      responses: { 200: { description: 'The page' }, 404: { description: 'Sign-up is closed' } },
      handle: async () => (options.signup.open ? signUpPage(200) : closedPage()),
    }),
    defineRoute({
      method: 'POST',
      path: SIGN_UP_PATH,
      auth: { kind: 'none' },
      summary: 'Creates an account with SIGNUP_CREDITS credits and signs it in (SIGNUP=open)',
      form: FORM,
      responses: {
        303: { description: 'Signed up: to the dashboard' },
        400: { description: 'Invalid' },
        409: { description: 'Email taken' },
      },
      async handle(ctx) {
        if (!options.signup.open) return closedPage();
        if (!fromOwnOrigin(ctx, origin)) return forbiddenPage();
        const email = ctx.form?.get('email')?.trim() ?? '';
        const password = ctx.form?.get('password') ?? '';
        const shownEmail = email.slice(0, EMAIL_MAX_LENGTH);
        const checkedEmail = emailChecker.check({ email });
        if (!checkedEmail.ok) return signUpPage(400, checkedEmail.message, shownEmail);
        const checkedPassword = passwordChecker.check({ password });
        if (!checkedPassword.ok) return signUpPage(400, checkedPassword.message, shownEmail);
        const decision = signups.hit(ctx.ip);
        if (!decision.allowed) {
          return signUpPage(429, 'Too many sign-ups from your address; try again in a minute.', shownEmail, {
            'retry-after': String(decision.retryAfter),
          });
        }
        let userId: string;
        try {
          ({
            user: { id: userId },
          } = await options.admin.createUser({ email, credits: options.signup.credits }));
        } catch (error) {
          if (error instanceof AppError && error.code === 'conflict') {
            return signUpPage(409, 'An account with this email already exists.', shownEmail);
          }
          throw error;
        }
        await options.admin.setPassword(userId, password);
        ctx.log.info({ user_id: userId }, 'signed up');
        return signedIn(options, await sessions.openSession(userId));
      },
    }),
  ];
}
