import Type from 'typebox';
import {
  AppError,
  RollingWindowLimiter,
  FORM_TYPE,
  JsonText,
  defineRoute,
  reply,
  type Reply,
  type RouteDefinition,
  FORM_MAX_BYTES,
  fromOwnOrigin,
  html,
  page,
  seeOther,
} from '../../platform/index.ts';
import { DEFAULT_SCOPE, SCOPES } from '../../../schemas/scopes.ts';
import { OAuthError } from '../oauth/oauth-error.ts';
import type { AuthorizationRequest } from '../oauth/authorization-codes.ts';
import type { OAuthServer } from '../oauth/oauth-server.ts';
import type { SignedIn } from '../web-sessions.ts';
import { SIGN_IN_PATH, forbiddenPage, ownOrigin, signedIn, type BrowserSessions } from './sign-in.ts';

// The OAuth 2.1 authorization server's HTTP face (docs/mcp.md): RFC 8414 metadata, RFC 7591 registration,
// the authorization endpoint with its consent page, the token and revocation endpoints. Errors of the token,
// registration and revocation endpoints use OAuth's `{ error, error_description }` bodies.

export const AUTHORIZE_PATH = '/oauth/authorize';

const AUTHORIZE_PARAMETERS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'code_challenge',
  'code_challenge_method',
  'state',
  'scope',
  'resource',
] as const;

const AuthorizeQuery = Type.Object(
  Object.fromEntries(AUTHORIZE_PARAMETERS.map((name) => [name, Type.Optional(Type.String())])),
);

export interface OAuthRouteOptions extends BrowserSessions {
  oauth: OAuthServer;
  /** Client registrations per client address per minute (registration is open to anyone). */
  registrationsPerMinute: number;
  now: () => number;
}

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

function oauthError(error: unknown): Reply {
  if (!(error instanceof OAuthError)) throw error;
  return reply(error.status, { error: error.code, error_description: error.description }, NO_STORE);
}

/** OAuth's redirects back to the client are 302s (RFC 6749 §4.1.2 examples; any browser follows them). */
const found = (location: string): Reply => seeOther(location, NO_STORE, 302);

/** The authorization request's own parameters (and only those), from a query or the consent form. */
function authorizeParameters(source: URLSearchParams | Record<string, string | undefined>): URLSearchParams {
  const get = (name: string) => (source instanceof URLSearchParams ? source.get(name) : source[name]);
  const params = new URLSearchParams();
  for (const name of AUTHORIZE_PARAMETERS) {
    const value = get(name);
    if (typeof value === 'string') params.set(name, value);
  }
  return params;
}

function invalidRequestPage(description: string) {
  return page(
    400,
    'Authorization failed',
    html`<h1>This authorization request cannot be served</h1>
      <p role="alert">${description}</p>
      <p>Go back to the application and connect again.</p>`,
  );
}

/** The consent page: who asks, where it will be sent back, and a checkbox per scope (the user picks). */
function consentPage(request: AuthorizationRequest, params: URLSearchParams, current: SignedIn) {
  const target = new URL(request.redirectUri);
  // The request travels on in hidden fields, except `scope`: the ticked boxes are the scopes asked for now.
  const hidden = [...params]
    .filter(([name]) => name !== 'scope')
    .map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`);
  const boxes = SCOPES.map((scope) => {
    const always = scope === DEFAULT_SCOPE;
    const checked = always || request.scopes.includes(scope);
    const id = `scope-${scope.replace(/[^a-z]/g, '-')}`;
    return html`<div class="check">
      <input
        type="checkbox"
        id="${id}"
        name="scope"
        value="${scope}"
        ${checked ? html` checked` : ''}${always ? html` disabled` : ''}
      /><label for="${id}">${scope}</label>
    </div>`;
  });
  return page(
    200,
    'Allow access',
    html`<h1>Allow ${request.client.name} to use MediaForge?</h1>
      <p>
        Signed in as <strong>${current.user.email}</strong>. <strong>${request.client.name}</strong> will act
        as you on the MCP server (${request.resource}) with the permissions you tick; you will be sent back to
        <strong>${target.host}</strong>.
      </p>
      <form method="post" action="${AUTHORIZE_PATH}">
        <input type="hidden" name="csrf_token" value="${current.session.csrf_token}" />
        ${hidden}
        <fieldset>
          <legend>Permissions</legend>
          ${boxes}
        </fieldset>
        <button type="submit" name="decision" value="allow">Allow</button>
        <button type="submit" name="decision" value="deny">Deny</button>
      </form>
      <p class="muted">
        Generating media spends your credits. You can revoke this access by signing out everywhere.
      </p>`,
    { formTargets: [target.origin] },
  );
}

const TAGS = ['oauth'];
const FORM = { maxBytes: FORM_MAX_BYTES };

/** The OAuth endpoints: discovery and registration, then authorization, then tokens. */
export function oauthRoutes(options: OAuthRouteOptions): RouteDefinition[] {
  return [...clientRoutes(options), ...authorizeRoutes(options), ...tokenRoutes(options.oauth)];
}

/** The server's metadata, and dynamic registration (rate-limited per client address: it is open to anyone). */
function clientRoutes(options: OAuthRouteOptions): RouteDefinition[] {
  const { oauth } = options;
  const metadata = new JsonText(JSON.stringify(oauth.metadata()));
  const registrations = new RollingWindowLimiter(options.registrationsPerMinute, options.now);
  return [
    defineRoute({
      method: 'GET',
      path: '/.well-known/oauth-authorization-server',
      auth: { kind: 'none' },
      summary: 'OAuth authorization server metadata (RFC 8414)',
      tags: TAGS,
      responses: { 200: { description: 'The metadata' } },
      handle: async () => reply(200, metadata, { 'cache-control': 'public, max-age=3600' }),
    }),
    defineRoute({
      method: 'POST',
      path: '/oauth/register',
      auth: { kind: 'none' },
      summary: 'Dynamic client registration (RFC 7591); every client is public and uses PKCE',
      tags: TAGS,
      body: Type.Object({}, { additionalProperties: true }),
      responses: { 201: { description: 'The registered client' }, 400: { description: 'Refused metadata' } },
      async handle(ctx) {
        const decision = registrations.hit(ctx.ip);
        if (!decision.allowed) {
          throw new AppError(
            'rate_limited',
            'Too many client registrations',
            {},
            {
              'retry-after': String(decision.retryAfter),
            },
          );
        }
        try {
          return reply(201, await oauth.register(ctx.body as Record<string, unknown>), NO_STORE);
        } catch (error) {
          return oauthError(error);
        }
      },
    }),
  ];
}

/** The authorization endpoint: the signed-in user's consent page, and its answer. */
function authorizeRoutes(options: OAuthRouteOptions): RouteDefinition[] {
  const { oauth } = options;
  const origin = ownOrigin(options);
  const toSignIn = (params: URLSearchParams) =>
    seeOther(`${SIGN_IN_PATH}?next=${encodeURIComponent(`${AUTHORIZE_PATH}?${params}`)}`);
  return [
    defineRoute({
      method: 'GET',
      path: AUTHORIZE_PATH,
      auth: { kind: 'none' },
      summary: 'Authorization endpoint: sign-in, then the consent page',
      tags: TAGS,
      query: AuthorizeQuery,
      responses: {
        200: { description: 'The consent page' },
        302: { description: 'Back to the client with an error' },
        303: { description: 'To the sign-in page' },
        400: { description: 'An unknown client or redirect URI' },
      },
      async handle(ctx) {
        const params = authorizeParameters(ctx.query as Record<string, string | undefined>);
        const check = await oauth.checkAuthorization(params);
        if (check.kind === 'invalid') return invalidRequestPage(check.description);
        if (check.kind === 'redirect') return found(check.url);
        const current = await signedIn(options, ctx);
        if (!current) return toSignIn(params);
        return consentPage(check.request, params, current);
      },
    }),
    defineRoute({
      method: 'POST',
      path: AUTHORIZE_PATH,
      auth: { kind: 'none' },
      summary:
        "The consent page's answer: a code (allow) or access_denied, sent to the client's redirect URI",
      tags: TAGS,
      form: FORM,
      responses: { 302: { description: 'Back to the client' }, 403: { description: 'Refused' } },
      async handle(ctx) {
        if (!fromOwnOrigin(ctx, origin)) return forbiddenPage();
        const fields = ctx.form;
        if (!fields) return invalidRequestPage('The consent form was not sent as a form.');
        const params = authorizeParameters(fields);
        const current = await signedIn(options, ctx);
        if (!current) return toSignIn(params);
        if (!options.sessions.csrfMatches(current.session, fields.get('csrf_token') ?? undefined)) {
          return forbiddenPage();
        }
        const check = await oauth.checkAuthorization(params);
        if (check.kind === 'invalid') return invalidRequestPage(check.description);
        if (check.kind === 'redirect') return found(check.url);
        if (fields.get('decision') !== 'allow') return found(oauth.deny(check.request));
        const location = await oauth.approve(current.user.id, check.request, fields.getAll('scope'));
        ctx.log.info(
          { user_id: current.user.id, client_id: check.request.client.id },
          'oauth access allowed',
        );
        return found(location);
      },
    }),
  ];
}

/** The token and revocation endpoints of OAuth clients (form posts, OAuth's error bodies). */
function tokenRoutes(oauth: OAuthServer): RouteDefinition[] {
  /** A form-posting endpoint of OAuth clients: its JSON answer, or OAuth's error body. */
  const formEndpoint = (
    path: string,
    summary: string,
    responses: RouteDefinition['responses'],
    answer: (fields: URLSearchParams) => Promise<unknown>,
  ) =>
    defineRoute({
      method: 'POST',
      path,
      auth: { kind: 'none' },
      summary,
      tags: TAGS,
      form: FORM,
      responses,
      async handle(ctx) {
        try {
          const fields = ctx.form;
          if (!fields) throw new OAuthError('invalid_request', `Send the request as ${FORM_TYPE}`);
          return reply(200, await answer(fields), NO_STORE);
        } catch (error) {
          return oauthError(error);
        }
      },
    });

  return [
    formEndpoint(
      '/oauth/token',
      'Token endpoint: authorization_code (with PKCE) and refresh_token grants',
      { 200: { description: 'Tokens' }, 400: { description: 'An OAuth error' } },
      (fields) => oauth.token(fields),
    ),
    formEndpoint(
      '/oauth/revoke',
      'Token revocation (RFC 7009): a refresh token revokes its whole grant',
      { 200: { description: 'Revoked, or nothing to revoke' } },
      async (fields) => {
        await oauth.revoke(fields);
        return {};
      },
    ),
  ];
}
