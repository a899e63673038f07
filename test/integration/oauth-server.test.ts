// The OAuth 2.1 authorization server (docs/mcp.md, Authorization) on its MongoDB store, against a real MongoDB-wire
// server: registration rules, the authorization request's checks, code exchange with PKCE, rotation with
// reuse detection, revocation, access tokens bound to the resource and to their lifetime; only hashes stored.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { createMongoOAuthStore } from '../../src/accounts/mongo/oauth-store.ts';
import { OAuthError } from '../../src/accounts/oauth/oauth-error.ts';
import type { AuthorizationRequest } from '../../src/accounts/oauth/authorization-codes.ts';
import { createOAuthServer, type OAuthServer } from '../../src/accounts/oauth/oauth-server.ts';

const ISSUER = 'https://media.example.com';
const RESOURCE = `${ISSUER}/api/mcp`;
const REDIRECT = 'http://127.0.0.1:33418/callback';
const VERIFIER = 'a-verifier-of-enough-length-0123456789-abcdefghijkl';
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');
const TTL_MS = 60_000;

describe('OAuth authorization server on MongoDB', () => {
  let mongo: TestMongo;
  let client: MongoClient;
  let oauth: OAuthServer;
  let now = Date.parse('2026-11-24T12:00:00Z');

  before(async () => {
    mongo = await startMongo();
    client = await MongoClient.connect(mongo.uri);
    const store = await createMongoOAuthStore(client.db('oauth'));
    oauth = createOAuthServer({
      store,
      clock: { now: () => now },
      issuer: ISSUER,
      resource: RESOURCE,
      accessTokenTtlMs: TTL_MS,
    });
  });
  after(async () => {
    await client?.close();
    await mongo?.stop();
  });

  const form = (fields: Record<string, string>) => new URLSearchParams(fields);

  async function rejects(work: Promise<unknown>, code: string, status = 400): Promise<OAuthError> {
    const error = await work.then(
      () => assert.fail(`expected ${code}`),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof OAuthError, String(error));
    assert.equal(error.code, code);
    assert.equal(error.status, status);
    return error;
  }

  async function registered(redirects = [REDIRECT]): Promise<string> {
    const answer = await oauth.register({ redirect_uris: redirects, client_name: 'Inspector' });
    return answer.client_id as string;
  }

  function authorizeParams(clientId: string, extra: Record<string, string> = {}) {
    return form({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
      state: 'st-1',
      resource: RESOURCE,
      ...extra,
    });
  }

  async function approvedCode(clientId: string, ticked = ['video-editor:read']): Promise<string> {
    const check = await oauth.checkAuthorization(authorizeParams(clientId));
    assert.equal(check.kind, 'ok');
    const location = new URL(
      await oauth.approve('usr_1', (check as { request: AuthorizationRequest }).request, ticked),
    );
    assert.equal(location.searchParams.get('state'), 'st-1');
    assert.equal(location.searchParams.get('iss'), ISSUER);
    return location.searchParams.get('code')!;
  }

  const exchange = (clientId: string, code: string, extra: Record<string, string> = {}) =>
    oauth.token(
      form({
        grant_type: 'authorization_code',
        code,
        client_id: clientId,
        redirect_uri: REDIRECT,
        code_verifier: VERIFIER,
        ...extra,
      }),
    );
  const refresh = (clientId: string, token: string) =>
    oauth.token(form({ grant_type: 'refresh_token', refresh_token: token, client_id: clientId }));

  it('registers public clients with https or loopback redirect URIs only', async () => {
    const answer = await oauth.register({
      redirect_uris: ['https://claude.ai/api/mcp/auth_callback', 'http://[::1]:8080/cb', REDIRECT],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    assert.match(answer.client_id as string, /^mfc_/);
    assert.equal(answer.token_endpoint_auth_method, 'none');
    assert.equal(answer.client_name, 'Unnamed client');
    for (const uri of [
      'http://example.com/cb',
      'cursor://callback',
      'https://app.example/cb#frag',
      'not a url',
    ]) {
      await rejects(oauth.register({ redirect_uris: [uri] }), 'invalid_redirect_uri');
    }
    await rejects(oauth.register({}), 'invalid_client_metadata');
    await rejects(oauth.register({ redirect_uris: [] }), 'invalid_client_metadata');
    await rejects(oauth.register({ redirect_uris: [1] }), 'invalid_redirect_uri');
    const eleven = Array.from({ length: 11 }, (_, i) => `https://app.example/cb${i}`);
    await rejects(oauth.register({ redirect_uris: eleven }), 'invalid_client_metadata');
  });

  it('never redirects to an unregistered URI; tells a registered one what is wrong', async () => {
    const clientId = await registered();
    assert.equal((await oauth.checkAuthorization(authorizeParams('mfc_unknown'))).kind, 'invalid');
    const elsewhere = await oauth.checkAuthorization(
      authorizeParams(clientId, { redirect_uri: `${REDIRECT}/x` }),
    );
    assert.equal(elsewhere.kind, 'invalid');
    const cases: Array<[Record<string, string>, string]> = [
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge: 'short' }, 'invalid_request'],
      [{ resource: `${ISSUER}/api/v1` }, 'invalid_target'],
    ];
    for (const [change, error] of cases) {
      const check = await oauth.checkAuthorization(authorizeParams(clientId, change));
      assert.equal(check.kind, 'redirect', JSON.stringify(change));
      const url = new URL((check as { url: string }).url);
      assert.equal(url.origin + url.pathname, REDIRECT);
      assert.equal(url.searchParams.get('error'), error);
      assert.equal(url.searchParams.get('state'), 'st-1');
    }
    const ok = await oauth.checkAuthorization(
      authorizeParams(clientId, { scope: 'image:write offline_access' }),
    );
    assert.deepEqual((ok as { request: AuthorizationRequest }).request.scopes, [
      'models:read',
      'image:write',
    ]);
  });

  it('exchanges a code once, with the right verifier, redirect URI and client', async () => {
    const clientId = await registered();
    const other = await registered();
    await rejects(
      exchange(clientId, await approvedCode(clientId), { code_verifier: `${VERIFIER}x` }),
      'invalid_grant',
    );
    await rejects(
      exchange(clientId, await approvedCode(clientId), { redirect_uri: `${REDIRECT}/x` }),
      'invalid_grant',
    );
    await rejects(exchange(other, await approvedCode(clientId)), 'invalid_grant');
    await rejects(
      exchange(clientId, await approvedCode(clientId), { resource: `${ISSUER}/api/v1` }),
      'invalid_target',
    );
    await rejects(exchange('mfc_nobody', await approvedCode(clientId)), 'invalid_client', 401);
    await rejects(exchange(clientId, 'mfac_not-a-code'), 'invalid_grant');

    const tokens = await exchange(clientId, await approvedCode(clientId, ['video-editor:read', 'bogus']));
    assert.equal(tokens.token_type, 'Bearer');
    assert.equal(tokens.expires_in, 60);
    assert.equal(tokens.scope, 'models:read video-editor:read');
    const principal = await oauth.authenticate(tokens.access_token);
    assert.deepEqual(principal?.scopes, ['models:read', 'video-editor:read']);
    assert.equal(principal?.userId, 'usr_1');
  });

  it('revokes what a replayed code obtained', async () => {
    const clientId = await registered();
    const code = await approvedCode(clientId);
    const tokens = await exchange(clientId, code);
    assert.ok(await oauth.authenticate(tokens.access_token));
    await rejects(exchange(clientId, code), 'invalid_grant');
    assert.equal(await oauth.authenticate(tokens.access_token), null);
    await rejects(refresh(clientId, tokens.refresh_token), 'invalid_grant');
  });

  it('rotates refresh tokens; a replayed one revokes the whole family', async () => {
    const clientId = await registered();
    const first = await exchange(clientId, await approvedCode(clientId));
    const second = await refresh(clientId, first.refresh_token);
    assert.notEqual(second.refresh_token, first.refresh_token);
    assert.ok(await oauth.authenticate(second.access_token));
    const third = await refresh(clientId, second.refresh_token);
    await rejects(refresh(clientId, first.refresh_token), 'invalid_grant');
    assert.equal(await oauth.authenticate(third.access_token), null);
    await rejects(refresh(clientId, third.refresh_token), 'invalid_grant');
  });

  it('narrows scopes on refresh, never widens them', async () => {
    const clientId = await registered();
    const tokens = await exchange(
      clientId,
      await approvedCode(clientId, ['video-editor:read', 'video:write']),
    );
    await rejects(
      oauth.token(
        form({
          grant_type: 'refresh_token',
          refresh_token: tokens.refresh_token,
          client_id: clientId,
          scope: 'image:write',
        }),
      ),
      'invalid_scope',
    );
  });

  it('access tokens expire, work only for the resource, and are stored hashed', async () => {
    const clientId = await registered();
    const tokens = await exchange(clientId, await approvedCode(clientId));
    assert.ok(await oauth.authenticate(tokens.access_token));
    assert.equal(await oauth.authenticate(tokens.refresh_token), null, 'a refresh token is no access token');
    now += TTL_MS + 1;
    assert.equal(await oauth.authenticate(tokens.access_token), null);
    const stored = JSON.stringify(await client.db('oauth').collection('oauth_tokens').find().toArray());
    assert.ok(!stored.includes(tokens.access_token) && !stored.includes(tokens.refresh_token));
    assert.ok(stored.includes(createHash('sha256').update(tokens.access_token).digest('hex')));
  });

  it('revocation: a refresh token ends its family, an access token itself; unknown tokens are no error', async () => {
    const clientId = await registered();
    const family = await exchange(clientId, await approvedCode(clientId));
    const other = await exchange(clientId, await approvedCode(clientId));
    await oauth.revoke(form({ token: other.access_token, client_id: clientId }));
    assert.equal(await oauth.authenticate(other.access_token), null);
    assert.ok(
      await refresh(clientId, other.refresh_token),
      'the refresh token of a revoked access token still works',
    );
    await oauth.revoke(form({ token: family.refresh_token, client_id: 'mfc_someone_else' }));
    assert.ok(
      await oauth.authenticate(family.access_token),
      'only the client it was issued to may revoke it',
    );
    await oauth.revoke(form({ token: family.refresh_token, client_id: clientId }));
    assert.equal(await oauth.authenticate(family.access_token), null);
    await oauth.revoke(form({ token: 'whatever', client_id: clientId }));
  });

  it("revoking a user's grants ends their tokens and unspent codes", async () => {
    const clientId = await registered();
    const tokens = await exchange(clientId, await approvedCode(clientId));
    const pending = await approvedCode(clientId);
    await oauth.revokeUser('usr_1');
    assert.equal(await oauth.authenticate(tokens.access_token), null);
    await rejects(refresh(clientId, tokens.refresh_token), 'invalid_grant');
    await rejects(exchange(clientId, pending), 'invalid_grant');
  });

  it('refuses other grant types', async () => {
    await rejects(oauth.token(form({ grant_type: 'client_credentials' })), 'unsupported_grant_type');
  });
});
