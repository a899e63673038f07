// OAuth 2.1 for the hosted MCP server (docs/mcp.md, Authorization) end to end, against the service as a process:
// the MCP SDK client's own OAuth support (discovery, dynamic registration, PKCE, the token exchange, refresh)
// drives a cookie-jar "browser" through sign-in and the consent page; then tools/call with the granted scopes,
// refresh, revocation, and one `it` per attack (PKCE, code reuse, redirect URIs, resource indicators, refresh
// token reuse, sign-out everywhere, expiry, CSRF, framing).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth, UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, adminClient, call, type RunningService } from '../helpers/service.ts';
import {
  Browser,
  findForm,
  submitter,
  textContent,
  type FormFields,
  type Page,
} from '../helpers/browser-form.ts';
import { sleep } from '../helpers/wait.ts';

const SCOPES = ['models:read', 'video:write', 'image:write', 'video-editor:read', 'video-editor:write'];
const PASSWORD = 'a long and secret passphrase 7';
/** Loopback redirect URIs of native clients: nothing listens there, the code is read from the Location. */
const CALLBACK = 'http://127.0.0.1:53682/callback';
const OTHER_CALLBACK = 'http://127.0.0.1:53683/callback';

type Site = Pick<RunningService, 'url' | 'adminToken'>;

interface User {
  id: string;
  email: string;
  browser: Browser;
}

interface TokenAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

interface Tokens {
  access_token: string;
  refresh_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
}

const sorted = (scope: unknown) => String(scope).split(' ').filter(Boolean).sort();

/** A user with a password and a browser of its own (not signed in yet). */
async function makeUser(site: Site, credits: number): Promise<User> {
  const email = `oauth-${randomBytes(6).toString('hex')}@example.com`;
  const admin = adminClient(site);
  const id = await admin.createUser(email, credits);
  const set = await admin.call('POST', `/users/${id}/password`, { password: PASSWORD });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  return { id, email, browser: new Browser(site.url) };
}

async function balance(site: Site, userId: string): Promise<number> {
  const answer = await adminClient(site).call<{ user: { credits: number } }>('GET', `/users/${userId}`);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.user.credits;
}

/** Signs the user's browser in through the sign-in form; answers the 303's Location. */
async function signIn(user: User, next = '/account'): Promise<string> {
  const page = await user.browser.get(`/sign-in?next=${encodeURIComponent(next)}`);
  assert.equal(page.status, 200, page.text);
  return submitSignIn(user, page);
}

async function submitSignIn(user: User, page: Page): Promise<string> {
  const form = findForm(page.text, '/sign-in');
  assert.ok(form, `a sign-in form: ${page.text}`);
  assert.equal(form.method, 'post');
  const done = await user.browser.postForm('/sign-in', {
    ...form.fields,
    email: user.email,
    password: PASSWORD,
  });
  assert.equal(done.status, 303, done.text);
  assert.ok(user.browser.cookie('mf_session'), 'the session cookie is set');
  assert.ok(done.location, 'a Location');
  return done.location;
}

/** A local URL as its path and its parameters in order of name (the order of a query carries no meaning). */
function sameRequest(pathAndQuery: string): [string, string[][]] {
  const url = new URL(pathAndQuery, 'http://x');
  return [url.pathname, [...url.searchParams].sort(([a], [b]) => a.localeCompare(b))];
}

/**
 * The consent page of an authorization URL (absolute or path+query), signing in on the way when the browser
 * has no session: authorize → 303 /sign-in?next=<authorize> → POST /sign-in → 303 back → the consent page.
 */
async function consentPage(user: User, authorizeUrl: string): Promise<Page> {
  const target = new URL(authorizeUrl, user.browser.baseUrl);
  const pathAndQuery = target.pathname + target.search;
  let page = await user.browser.get(target.href);
  if (page.status === 303) {
    const signInUrl = page.redirect!;
    assert.equal(signInUrl.pathname, '/sign-in', page.location ?? '');
    const next = signInUrl.searchParams.get('next') ?? '';
    assert.deepEqual(sameRequest(next), sameRequest(pathAndQuery), 'next is the authorize request');
    const signInPage = await user.browser.follow(page);
    assert.equal(signInPage.status, 200, signInPage.text);
    const back = await submitSignIn(user, signInPage);
    assert.equal(back, next, 'sign-in sends the browser back to the authorize request');
    page = await user.browser.get(back);
  }
  assert.equal(page.status, 200, `consent page: ${page.status} ${page.location} ${page.text}`);
  return page;
}

/** The fields a consent form submits with `scopes` ticked (undefined: as checked) and `decision`. */
function consentFields(page: Page, scopes: string[] | undefined, decision: 'Allow' | 'Deny'): FormFields {
  const form = findForm(page.text, '/oauth/authorize');
  assert.ok(form, `a consent form: ${page.text}`);
  assert.equal(form.method, 'post');
  const fields: FormFields = { ...form.fields };
  if (scopes !== undefined) fields.scope = scopes;
  return { ...fields, ...submitter(form, decision) };
}

/** Signs in if needed, answers the consent page, and returns the 302's Location (the client's redirect URI). */
async function consent(
  user: User,
  authorizeUrl: string,
  options: { scopes?: string[]; decision?: 'Allow' | 'Deny' } = {},
): Promise<URL> {
  const page = await consentPage(user, authorizeUrl);
  const answer = await user.browser.postForm(
    '/oauth/authorize',
    consentFields(page, options.scopes, options.decision ?? 'Allow'),
  );
  assert.equal(answer.status, 302, `consent POST: ${answer.status} ${answer.text}`);
  return answer.redirect!;
}

/** The MCP SDK's OAuthClientProvider, kept in memory; `browse` plays the user agent the SDK redirects. */
class TestOAuthProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens[] = [];
  verifier: string | undefined;
  states: string[] = [];
  /** Authorization URLs the SDK sent the user agent to, and where the user agent ended. */
  authorizations: URL[] = [];
  callbacks: URL[] = [];

  constructor(
    public browse: (authorizationUrl: URL) => Promise<URL | undefined>,
    readonly name = 'MediaForge e2e <client>',
  ) {}

  get redirectUrl(): string {
    return CALLBACK;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [CALLBACK],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state(): string {
    const state = randomBytes(12).toString('hex');
    this.states.push(state);
    return state;
  }
  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.client;
  }
  saveClientInformation(information: OAuthClientInformationMixed): void {
    this.client = information;
  }
  tokens(): OAuthTokens | undefined {
    return this.saved.at(-1);
  }
  saveTokens(tokens: OAuthTokens): void {
    this.saved.push(tokens);
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    assert.ok(this.verifier, 'a code verifier was saved');
    return this.verifier;
  }
  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    this.authorizations.push(authorizationUrl);
    const landed = await this.browse(authorizationUrl);
    if (landed) this.callbacks.push(landed);
  }
  /** The code of the last callback (its state checked against the request's). */
  code(): string {
    const callback = this.callbacks.at(-1);
    assert.ok(callback, 'the user agent reached the redirect URI');
    assert.equal(callback.origin + callback.pathname, CALLBACK);
    assert.equal(callback.searchParams.get('state'), this.states.at(-1), 'state comes back');
    const code = callback.searchParams.get('code');
    assert.ok(code, `a code: ${callback.href}`);
    return code;
  }
}

/**
 * Connects an SDK client the way an MCP host does: connect → 401 → discovery → registration → the user agent
 * (UnauthorizedError) → finishAuth(code) → connect again on a new transport.
 */
async function connectWithOAuth(mcpUrl: URL, provider: TestOAuthProvider): Promise<Client> {
  const first = new Client({ name: 'mediaforge-oauth-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  await assert.rejects(first.connect(transport), UnauthorizedError);
  await transport.finishAuth(provider.code());
  const client = new Client({ name: 'mediaforge-oauth-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
  return client;
}

async function callTool(client: Client, name: string, args: Record<string, unknown> = {}) {
  return (await client.callTool({ name, arguments: args }, undefined, {
    timeout: 30_000,
  })) as CallToolResult & {
    structuredContent?: Record<string, unknown>;
  };
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(48).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** An /oauth/authorize path+query; `undefined` values are left out. */
function authorizePath(params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, value);
  return `/oauth/authorize?${query}`;
}

async function register(site: Site, body: Record<string, unknown>): Promise<TokenAnswer> {
  const answer = await call(site.url, 'POST', '/oauth/register', { body });
  return { status: answer.status, headers: answer.headers, body: answer.body };
}

const sharedClients = new Map<string, Promise<string>>();

/**
 * One raw client per service, for the tests that need no fresh one: registration is limited per client
 * address (20 a minute), and every request of this file comes from 127.0.0.1.
 */
function sharedClient(site: Site): Promise<string> {
  let client = sharedClients.get(site.url);
  if (!client) {
    client = registerClient(site, [CALLBACK, OTHER_CALLBACK]);
    sharedClients.set(site.url, client);
  }
  return client;
}

async function registerClient(site: Site, redirectUris = [CALLBACK]): Promise<string> {
  const answer = await register(site, { redirect_uris: redirectUris, client_name: 'raw e2e client' });
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  return String(answer.body.client_id);
}

/** POSTs a form to /oauth/token (or /oauth/revoke). */
async function postForm(site: Site, path: string, fields: Record<string, string>): Promise<TokenAnswer> {
  const response = await fetch(`${site.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(fields).toString(),
  });
  const text = await response.text();
  let body: Record<string, unknown>;
  try {
    body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    body = { text };
  }
  return { status: response.status, headers: response.headers, body };
}

const token = (site: Site, fields: Record<string, string>) => postForm(site, '/oauth/token', fields);

function assertOAuthError(answer: TokenAnswer, status: number, error: string, what: string): void {
  assert.equal(answer.status, status, `${what}: ${JSON.stringify(answer.body)}`);
  assert.equal(answer.body.error, error, `${what}: ${JSON.stringify(answer.body)}`);
}

/** A code for `user` from a raw client: register (unless given), PKCE, consent. */
async function rawCode(
  site: Site,
  user: User,
  options: { clientId?: string; redirectUri?: string; scopes?: string[] } = {},
) {
  const clientId = options.clientId ?? (await sharedClient(site));
  const redirectUri = options.redirectUri ?? CALLBACK;
  const { verifier, challenge } = pkce();
  const state = randomBytes(8).toString('hex');
  const landed = await consent(
    user,
    authorizePath({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
      scope: SCOPES.join(' '),
      resource: `${site.url}/api/mcp`,
    }),
    options.scopes ? { scopes: options.scopes } : {},
  );
  assert.equal(landed.origin + landed.pathname, redirectUri);
  assert.equal(landed.searchParams.get('state'), state);
  assert.equal(landed.searchParams.get('iss'), site.url);
  const code = landed.searchParams.get('code');
  assert.ok(code, landed.href);
  return { clientId, redirectUri, verifier, code };
}

/** The code exchange's fields. */
const exchangeFields = (site: Site, got: Awaited<ReturnType<typeof rawCode>>) => ({
  grant_type: 'authorization_code',
  code: got.code,
  redirect_uri: got.redirectUri,
  client_id: got.clientId,
  code_verifier: got.verifier,
  resource: `${site.url}/api/mcp`,
});

/** A whole grant from a raw client: tokens of the user. */
async function rawGrant(site: Site, user: User, options: { scopes?: string[] } = {}) {
  const got = await rawCode(site, user, options);
  const answer = await token(site, exchangeFields(site, got));
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.match(String(answer.headers.get('cache-control')), /no-store/);
  const tokens = answer.body as unknown as Tokens;
  assert.match(tokens.access_token, /^mfat_/);
  assert.match(tokens.refresh_token, /^mfrt_/);
  return { ...got, tokens };
}

const refresh = (site: Site, clientId: string, refreshToken: string) =>
  token(site, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });

/** An MCP `initialize` with a bearer token: 200 (session opened) or 401 with its WWW-Authenticate. */
async function mcpInitialize(
  site: Site,
  accessToken: string,
): Promise<{ status: number; challenge: string | null }> {
  const response = await fetch(`${site.url}/api/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${accessToken}`,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  await response.text();
  const session = response.headers.get('mcp-session-id');
  if (session)
    await fetch(`${site.url}/api/mcp`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${accessToken}`, 'mcp-session-id': session },
    }).then((r) => r.text());
  return { status: response.status, challenge: response.headers.get('www-authenticate') };
}

const challengeOf = (site: Site) =>
  `Bearer resource_metadata="${site.url}/.well-known/oauth-protected-resource/api/mcp"`;

async function assertMcpWorks(site: Site, accessToken: string, what: string): Promise<void> {
  const answer = await mcpInitialize(site, accessToken);
  assert.equal(answer.status, 200, `${what}: the token works at /api/mcp`);
}

async function assertMcpRefused(site: Site, accessToken: string, what: string): Promise<void> {
  const answer = await mcpInitialize(site, accessToken);
  assert.equal(answer.status, 401, `${what}: 401 at /api/mcp`);
  assert.equal(answer.challenge, challengeOf(site), `${what}: WWW-Authenticate`);
}

describe('OAuth 2.1 for /api/mcp', () => {
  let mongo: TestMongo;
  let service: RunningService;
  const mcpUrl = () => new URL(`${service.url}/api/mcp`);

  before(async () => {
    mongo = await startMongo();
    service = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: 'mcp_oauth_e2e',
      SANDBOX_VIDEO_MS: '300',
      SANDBOX_IMAGE_MS: '200',
      PROVIDER_POLL_INTERVAL_MS: '200',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  it('metadata: protected resource (RFC 9728) and authorization server (RFC 8414)', async () => {
    for (const path of [
      '/.well-known/oauth-protected-resource/api/mcp',
      '/.well-known/oauth-protected-resource',
    ]) {
      const answer = await call<Record<string, unknown>>(service.url, 'GET', path);
      assert.equal(answer.status, 200, path);
      assert.equal(answer.body.resource, `${service.url}/api/mcp`, path);
      assert.deepEqual(answer.body.authorization_servers, [service.url], path);
      assert.deepEqual([...(answer.body.scopes_supported as string[])].sort(), [...SCOPES].sort(), path);
      assert.deepEqual(answer.body.bearer_methods_supported, ['header'], path);
    }
    const as = await call<Record<string, unknown>>(
      service.url,
      'GET',
      '/.well-known/oauth-authorization-server',
    );
    assert.equal(as.status, 200);
    assert.equal(as.body.issuer, service.url);
    assert.equal(as.body.authorization_endpoint, `${service.url}/oauth/authorize`);
    assert.equal(as.body.token_endpoint, `${service.url}/oauth/token`);
    assert.equal(as.body.registration_endpoint, `${service.url}/oauth/register`);
    assert.equal(as.body.revocation_endpoint, `${service.url}/oauth/revoke`);
    assert.deepEqual(as.body.response_types_supported, ['code']);
    assert.deepEqual([...(as.body.grant_types_supported as string[])].sort(), [
      'authorization_code',
      'refresh_token',
    ]);
    assert.deepEqual(as.body.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(as.body.token_endpoint_auth_methods_supported, ['none']);
    assert.deepEqual([...(as.body.scopes_supported as string[])].sort(), [...SCOPES].sort());
  });

  it('the MCP SDK client: registration → authorize → sign-in → consent → token → tools/call → refresh → revoke', async () => {
    const user = await makeUser(service, 1000);
    const consentPages: Page[] = [];
    const provider = new TestOAuthProvider(async (authorizationUrl) => {
      // What the SDK asks for: PKCE S256, our loopback redirect URI, the resource of /api/mcp.
      assert.equal(authorizationUrl.origin + authorizationUrl.pathname, `${service.url}/oauth/authorize`);
      assert.equal(authorizationUrl.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(authorizationUrl.searchParams.get('redirect_uri'), CALLBACK);
      assert.equal(authorizationUrl.searchParams.get('resource'), `${service.url}/api/mcp`);
      const page = await consentPage(user, authorizationUrl.href);
      consentPages.push(page);
      const answer = await user.browser.postForm('/oauth/authorize', consentFields(page, SCOPES, 'Allow'));
      assert.equal(answer.status, 302, answer.text);
      return answer.redirect!;
    });
    const client = await connectWithOAuth(mcpUrl(), provider);
    try {
      // Registration (RFC 7591) as the SDK did it.
      assert.match(String(provider.client?.client_id), /\S{8,}/);
      assert.equal(provider.authorizations.length, 1, 'one trip through the user agent');
      const page = consentPages[0]!;
      assert.ok(textContent(page.text).includes('MediaForge e2e <client>'), 'the client name is shown');
      assert.doesNotMatch(page.text, /<client>/, 'HTML-escaped');
      const landed = provider.callbacks[0]!;
      assert.equal(landed.searchParams.get('iss'), service.url);
      const first = provider.tokens()!;
      assert.match(first.access_token, /^mfat_/);
      assert.match(String(first.refresh_token), /^mfrt_/);
      assert.equal(first.token_type.toLowerCase(), 'bearer');
      assert.deepEqual(sorted(first.scope), [...SCOPES].sort());

      // tools/call with the access token.
      const account = await callTool(client, 'get_account');
      assert.notEqual(account.isError, true, JSON.stringify(account.content));
      assert.equal(account.structuredContent?.user_id, user.id);
      assert.equal(account.structuredContent?.credits, 1000);
      const models = await callTool(client, 'list_models');
      assert.notEqual(models.isError, true, JSON.stringify(models.content));
      assert.equal(typeof models.structuredContent, 'object');
      const image = await callTool(client, 'media_forge_generate', {
        model: 'imgmodel-2',
        prompt: 'a lighthouse',
      });
      assert.notEqual(image.isError, true, JSON.stringify(image.content));
      assert.equal(image.structuredContent?.credits_consumed, 50);
      assert.equal(await balance(service, user.id), 950, 'image:write granted: the image is charged');

      // Refresh: the SDK's auth() with stored tokens holding a refresh token rotates them, no user agent.
      const result = await auth(provider, { serverUrl: mcpUrl() });
      assert.equal(result, 'AUTHORIZED');
      assert.equal(provider.authorizations.length, 1, 'refreshing needs no new authorization');
      const second = provider.tokens()!;
      assert.notEqual(second.access_token, first.access_token);
      assert.match(second.access_token, /^mfat_/);
      assert.match(String(second.refresh_token), /^mfrt_/);
      assert.notEqual(second.refresh_token, first.refresh_token, 'refresh tokens rotate');
      assert.deepEqual(sorted(second.scope), [...SCOPES].sort(), 'the refreshed grant keeps its scopes');
      const again = await callTool(client, 'get_account'); // the transport reads the new token
      assert.notEqual(again.isError, true, JSON.stringify(again.content));
      assert.equal(again.structuredContent?.credits, 950);
      await assertMcpWorks(service, second.access_token, 'the refreshed access token');

      // Revocation (RFC 7009): the refresh token revokes its family, the access token with it.
      const revoked = await postForm(service, '/oauth/revoke', {
        token: String(second.refresh_token),
        token_type_hint: 'refresh_token',
        client_id: String(provider.client?.client_id),
      });
      assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
      await assertMcpRefused(service, second.access_token, 'after revocation');
      assertOAuthError(
        await refresh(service, String(provider.client?.client_id), String(second.refresh_token)),
        400,
        'invalid_grant',
        'the revoked refresh token',
      );
      // Revoking again, or an unknown token, still answers 200.
      const unknown = await postForm(service, '/oauth/revoke', {
        token: 'mfrt_unknown',
        client_id: String(provider.client?.client_id),
      });
      assert.equal(unknown.status, 200);
      // The SDK client is refused too (no new consent is given).
      provider.browse = async () => undefined;
      await assert.rejects(callTool(client, 'get_account'));
    } finally {
      await client.close().catch(() => undefined);
    }
  });

  it('scopes chosen on the consent page bind: without image:write, imgmodel-2 is a tool error and nothing is charged', async () => {
    const user = await makeUser(service, 500);
    const chosen = SCOPES.filter((scope) => scope !== 'image:write');
    const provider = new TestOAuthProvider(async (authorizationUrl) => {
      const page = await consentPage(user, authorizationUrl.href);
      // Every scope is offered as a checkbox, checked as requested (the SDK requests all five).
      const form = findForm(page.text, '/oauth/authorize')!;
      const boxes = form.controls.filter((c) => c.type === 'checkbox' && c.name === 'scope');
      assert.deepEqual(boxes.map((c) => c.value).sort(), [...SCOPES].sort());
      assert.ok(
        boxes.every((c) => c.checked),
        'requested scopes are checked',
      );
      for (const scope of SCOPES) assert.ok(page.text.includes(scope), `the label ${scope}`);
      const answer = await user.browser.postForm('/oauth/authorize', consentFields(page, chosen, 'Allow'));
      assert.equal(answer.status, 302, answer.text);
      return answer.redirect!;
    });
    const client = await connectWithOAuth(mcpUrl(), provider);
    try {
      assert.deepEqual(sorted(provider.tokens()!.scope), [...chosen].sort());
      const generate = await callTool(client, 'media_forge_generate', {
        model: 'imgmodel-2',
        prompt: 'a cat',
      });
      assert.equal(generate.isError, true, JSON.stringify(generate));
      assert.match(JSON.stringify(generate.content), /image:write/);
      assert.equal(await balance(service, user.id), 500, 'nothing charged');
      const account = await callTool(client, 'get_account');
      assert.notEqual(account.isError, true, JSON.stringify(account.content));
      assert.equal(account.structuredContent?.credits, 500);
    } finally {
      await client.close().catch(() => undefined);
    }

    // Nothing ticked: models:read is always granted, and only it.
    const bare = await rawGrant(service, user, { scopes: [] });
    assert.deepEqual(sorted(bare.tokens.scope), ['models:read']);
  });

  it('a wrong code_verifier: 400 invalid_grant', async () => {
    const user = await makeUser(service, 0);
    const got = await rawCode(service, user);
    const wrong = await token(service, { ...exchangeFields(service, got), code_verifier: pkce().verifier });
    assertOAuthError(wrong, 400, 'invalid_grant', 'wrong verifier');
    assert.equal(typeof wrong.body.error_description, 'string');
    const missing = await rawCode(service, user);
    const { code_verifier: _dropped, ...withoutVerifier } = exchangeFields(service, missing);
    const none = await token(service, withoutVerifier);
    assert.equal(none.status, 400, JSON.stringify(none.body));
    assert.ok(
      ['invalid_grant', 'invalid_request'].includes(String(none.body.error)),
      JSON.stringify(none.body),
    );
  });

  it('a code used twice: 400 invalid_grant, and the tokens of its first use stop working', async () => {
    const user = await makeUser(service, 0);
    const got = await rawCode(service, user);
    const first = await token(service, exchangeFields(service, got));
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const tokens = first.body as unknown as Tokens;
    await assertMcpWorks(service, tokens.access_token, 'the first exchange');
    assertOAuthError(
      await token(service, exchangeFields(service, got)),
      400,
      'invalid_grant',
      'the second use',
    );
    await assertMcpRefused(service, tokens.access_token, 'the access token of a replayed code');
    assertOAuthError(
      await refresh(service, got.clientId, tokens.refresh_token),
      400,
      'invalid_grant',
      'the refresh token of a replayed code',
    );
  });

  it('redirect_uri mismatch: /oauth/authorize answers a 400 page (no redirect), /oauth/token invalid_grant', async () => {
    const user = await makeUser(service, 0);
    await signIn(user);
    const clientId = await sharedClient(service);
    const { challenge } = pkce();
    const request = (params: Record<string, string | undefined>) =>
      authorizePath({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: CALLBACK,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 'xyz',
        ...params,
      });
    for (const [what, params] of [
      ['an unregistered redirect_uri', { redirect_uri: 'http://127.0.0.1:53682/elsewhere' }],
      ['a foreign redirect_uri', { redirect_uri: 'https://evil.example/cb' }],
      ['a prefix of a registered one', { redirect_uri: 'http://127.0.0.1:53682/callback/more' }],
      ['an unknown client_id', { client_id: 'no-such-client' }],
    ] as const) {
      const page = await user.browser.get(request(params));
      assert.equal(page.status, 400, `${what}: ${page.status} ${page.location}`);
      assert.equal(page.location, null, `${what}: never a redirect`);
      assert.match(String(page.headers.get('content-type')), /text\/html/, what);
    }

    // At the token endpoint: the code was issued for CALLBACK; OTHER_CALLBACK is registered but not the one.
    const got = await rawCode(service, user, { clientId });
    assertOAuthError(
      await token(service, { ...exchangeFields(service, got), redirect_uri: OTHER_CALLBACK }),
      400,
      'invalid_grant',
      'another registered redirect_uri',
    );
    // A code issued to another client, and an unknown client.
    const other = await rawCode(service, user);
    const otherClient = await registerClient(service);
    assertOAuthError(
      await token(service, { ...exchangeFields(service, other), client_id: otherClient }),
      400,
      'invalid_grant',
      'a code of another client',
    );
    const stranger = await rawCode(service, user);
    assertOAuthError(
      await token(service, { ...exchangeFields(service, stranger), client_id: 'no-such-client' }),
      401,
      'invalid_client',
      'an unknown client_id',
    );
  });

  it('registration: http off loopback, a custom scheme, a fragment, a relative URI are invalid_redirect_uri', async () => {
    for (const uri of [
      'http://example.com/cb',
      'com.example.app:/oauth/cb',
      'myapp://callback',
      'https://app.example.com/cb#fragment',
      'http://127.0.0.1:53682/cb#',
      '/relative/cb',
    ]) {
      const answer = await register(service, { redirect_uris: [uri], client_name: 'bad' });
      assertOAuthError(answer, 400, 'invalid_redirect_uri', uri);
      assert.equal(typeof answer.body.error_description, 'string', uri);
    }
    // One bad URI among good ones spoils the registration.
    assertOAuthError(
      await register(service, { redirect_uris: [CALLBACK, 'http://example.com/cb'] }),
      400,
      'invalid_redirect_uri',
      'a bad one among good ones',
    );
    assertOAuthError(
      await register(service, { client_name: 'none' }),
      400,
      'invalid_client_metadata',
      'none',
    );
    assertOAuthError(
      await register(service, { redirect_uris: Array.from({ length: 11 }, (_, i) => `${CALLBACK}${i}`) }),
      400,
      'invalid_client_metadata',
      'eleven redirect URIs',
    );
    // What is allowed: https anywhere, http on the three loopback hosts.
    const good = ['https://app.example.com/cb', 'http://localhost:8123/cb', 'http://[::1]:8123/cb', CALLBACK];
    const answer = await register(service, { redirect_uris: good, client_name: 'good' });
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    assert.deepEqual(answer.body.redirect_uris, good);
    assert.equal(answer.body.token_endpoint_auth_method, 'none');
    assert.equal(answer.body.client_name, 'good');
    assert.equal(typeof answer.body.client_id, 'string');
    assert.equal(typeof answer.body.client_id_issued_at, 'number');
    assert.equal(answer.body.client_secret, undefined, 'public clients get no secret');
  });

  it('another resource: authorize redirects invalid_target, token answers invalid_target, /api/v1 refuses the token', async () => {
    const user = await makeUser(service, 0);
    await signIn(user);
    const clientId = await sharedClient(service);
    const { challenge } = pkce();
    const page = await user.browser.get(
      authorizePath({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: CALLBACK,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 'res-1',
        resource: `${service.url}/api/v1`,
      }),
    );
    assert.equal(page.status, 302, `${page.status} ${page.text}`);
    assert.equal(page.redirect!.origin + page.redirect!.pathname, CALLBACK);
    assert.equal(page.redirect!.searchParams.get('error'), 'invalid_target');
    assert.equal(page.redirect!.searchParams.get('state'), 'res-1');
    assert.equal(page.redirect!.searchParams.get('code'), null);

    const got = await rawCode(service, user, { clientId });
    assertOAuthError(
      await token(service, { ...exchangeFields(service, got), resource: `${service.url}/api/v1` }),
      400,
      'invalid_target',
      'a token for /api/v1',
    );

    const { tokens, clientId: grantClient } = await rawGrant(service, user);
    await assertMcpWorks(service, tokens.access_token, 'the MCP token at /api/mcp');
    for (const path of ['/api/v1/models', '/api/v1/account']) {
      const answer = await call(service.url, 'GET', path, { token: tokens.access_token });
      assert.equal(answer.status, 401, `${path}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.error, 'Invalid or revoked API key', path);
    }
    assertOAuthError(
      await token(service, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: grantClient,
        resource: `${service.url}/api/v1`,
      }),
      400,
      'invalid_target',
      'a refresh for /api/v1',
    );
  });

  it('a refresh token used twice: 400 invalid_grant, and the whole family is revoked', async () => {
    const user = await makeUser(service, 0);
    const { clientId, tokens: first } = await rawGrant(service, user);
    const rotated = await refresh(service, clientId, first.refresh_token);
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    assert.match(String(rotated.headers.get('cache-control')), /no-store/);
    const second = rotated.body as unknown as Tokens;
    assert.notEqual(second.refresh_token, first.refresh_token);
    assert.match(second.access_token, /^mfat_/);
    await assertMcpWorks(service, second.access_token, 'the rotated access token');

    assertOAuthError(
      await refresh(service, clientId, first.refresh_token),
      400,
      'invalid_grant',
      'the spent one',
    );
    await assertMcpRefused(service, second.access_token, 'the newest access token of the family');
    assertOAuthError(
      await refresh(service, clientId, second.refresh_token),
      400,
      'invalid_grant',
      'the newest refresh token of the family',
    );
    // Another grant of the same user is untouched.
    const { tokens: other } = await rawGrant(service, user);
    await assertMcpWorks(service, other.access_token, 'another grant');
  });

  it('sign-out everywhere: the grants of the user stop working (401 at /api/mcp), and every session ends', async () => {
    const user = await makeUser(service, 0);
    const { clientId, tokens } = await rawGrant(service, user);
    const elsewhere: User = { ...user, browser: new Browser(service.url) };
    await signIn(elsewhere);
    await assertMcpWorks(service, tokens.access_token, 'before sign-out');

    const account = await user.browser.get('/account');
    assert.equal(account.status, 200, account.text);
    assert.match(account.text, new RegExp(user.email.replace(/[.]/g, '\\.')));
    const form = findForm(account.text, '/sign-out-everywhere');
    assert.ok(form, account.text);
    assert.ok(form.fields.csrf_token, 'a csrf_token');

    const forged = await user.browser.postForm('/sign-out-everywhere', {
      ...form.fields,
      csrf_token: 'forged',
    });
    assert.equal(forged.status, 403, 'a wrong csrf_token');
    const foreign = await user.browser.postForm('/sign-out-everywhere', form.fields, {
      origin: 'http://evil.example',
    });
    assert.equal(foreign.status, 403, 'a foreign Origin');
    await assertMcpWorks(service, tokens.access_token, 'after refused sign-outs');

    const done = await user.browser.postForm('/sign-out-everywhere', {
      ...form.fields,
      ...submitter(form, 'Sign out everywhere'),
    });
    assert.equal(done.status, 303, done.text);
    assert.equal(done.redirect!.pathname, '/sign-in');
    await assertMcpRefused(service, tokens.access_token, 'after sign-out everywhere');
    assertOAuthError(await refresh(service, clientId, tokens.refresh_token), 400, 'invalid_grant', 'refresh');
    const other = await elsewhere.browser.get('/account');
    assert.equal(other.status, 303, 'the other session ended too');
    assert.equal(other.redirect!.pathname, '/sign-in');
  });

  it('the consent POST: a missing or wrong csrf_token and a foreign Origin are 403; the page cannot be framed', async () => {
    const user = await makeUser(service, 0);
    const clientId = await sharedClient(service);
    const { challenge } = pkce();
    const path = authorizePath({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'csrf-1',
      scope: SCOPES.join(' '),
    });
    const page = await consentPage(user, path);
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    assert.match(String(page.headers.get('content-security-policy')), /frame-ancestors 'none'/);
    assert.match(String(page.headers.get('cache-control')), /no-store/);
    assert.match(String(page.headers.get('content-type')), /^text\/html/);
    const signInPage = await new Browser(service.url).get('/sign-in');
    assert.equal(signInPage.headers.get('x-frame-options'), 'DENY');
    assert.match(String(signInPage.headers.get('content-security-policy')), /frame-ancestors 'none'/);

    const fields = consentFields(page, SCOPES, 'Allow');
    assert.ok(fields.csrf_token, 'the consent form has a csrf_token');
    const { csrf_token: _csrf, ...withoutCsrf } = fields;
    for (const [what, body, origin] of [
      ['no csrf_token', withoutCsrf, undefined],
      ['a wrong csrf_token', { ...fields, csrf_token: 'forged-token' }, undefined],
      ['a foreign Origin', fields, 'http://evil.example'],
    ] as const) {
      const answer = await user.browser.postForm('/oauth/authorize', body, origin ? { origin } : {});
      assert.equal(answer.status, 403, `${what}: ${answer.status} ${answer.location}`);
      assert.equal(answer.location, null, `${what}: no redirect`);
    }
    // The browser's own POST goes through afterwards; Deny answers access_denied.
    const denied = await user.browser.postForm('/oauth/authorize', consentFields(page, SCOPES, 'Deny'));
    assert.equal(denied.status, 302, denied.text);
    assert.equal(denied.redirect!.searchParams.get('error'), 'access_denied');
    assert.equal(denied.redirect!.searchParams.get('state'), 'csrf-1');
    assert.equal(denied.redirect!.searchParams.get('code'), null);
    const again = await consentPage(user, path);
    const allowed = await user.browser.postForm('/oauth/authorize', consentFields(again, SCOPES, 'Allow'));
    assert.equal(allowed.status, 302, allowed.text);
    assert.ok(allowed.redirect!.searchParams.get('code'), allowed.location ?? '');
  });

  it('code_challenge_method=plain, no code_challenge, response_type=token: redirected errors', async () => {
    const user = await makeUser(service, 0);
    await signIn(user);
    const clientId = await sharedClient(service);
    const { verifier, challenge } = pkce();
    const base = {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'pkce-1',
    };
    for (const [what, params, error] of [
      ['plain', { code_challenge: verifier, code_challenge_method: 'plain' }, 'invalid_request'],
      ['no code_challenge', { code_challenge: undefined }, 'invalid_request'],
      ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
    ] as const) {
      const page = await user.browser.get(authorizePath({ ...base, ...params }));
      assert.equal(page.status, 302, `${what}: ${page.status} ${page.text}`);
      assert.equal(page.redirect!.origin + page.redirect!.pathname, CALLBACK, what);
      assert.equal(page.redirect!.searchParams.get('error'), error, what);
      assert.equal(page.redirect!.searchParams.get('state'), 'pkce-1', what);
      assert.equal(page.redirect!.searchParams.get('code'), null, what);
    }
  });

  it('an expired access token: 401 with WWW-Authenticate resource_metadata (OAUTH_ACCESS_TOKEN_TTL_SECONDS=2)', async () => {
    const short = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: 'mcp_oauth_e2e_ttl',
      OAUTH_ACCESS_TOKEN_TTL_SECONDS: '2',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
    try {
      const user = await makeUser(short, 0);
      const got = await rawCode(short, user);
      const exchangedAt = Date.now();
      const answer = await token(short, exchangeFields(short, got));
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const tokens = answer.body as unknown as Tokens;
      assert.equal(tokens.expires_in, 2);
      // Checked only when the answer came well inside the lifetime (a slow machine skips it, never flakes).
      const fresh = await mcpInitialize(short, tokens.access_token);
      if (Date.now() - exchangedAt < 1800) assert.equal(fresh.status, 200, 'the fresh token works');
      await sleep(2500); // past the 2 s lifetime: expiry is a matter of time
      await assertMcpRefused(short, tokens.access_token, 'the expired token');
      // The refresh token outlives it.
      const renewed = await refresh(short, got.clientId, tokens.refresh_token);
      assert.equal(renewed.status, 200, JSON.stringify(renewed.body));
      assert.notEqual((renewed.body as unknown as Tokens).access_token, tokens.access_token);
    } finally {
      await short.stop();
    }
  });
});
