import { generateSecret, hashSecret } from '../api-key.ts';
import { newId, type KeyPrincipal, type Clock } from '../../platform/index.ts';
import {
  ACCESS_TOKEN_PREFIX,
  AUTHORIZATION_CODE_PREFIX,
  AUTHORIZATION_CODE_TTL_MS,
  MAX_REDIRECT_URIS,
  REFRESH_TOKEN_PREFIX,
  REFRESH_TOKEN_TTL_MS,
  grantedScopes,
  isValidCodeChallenge,
  isWellFormedOAuthSecret,
  redirectUriProblem,
  requestedScopes,
  verifierMatches,
} from './oauth-terms.ts';
import { SCOPES, type Scope } from '../../../schemas/scopes.ts';
import type { OAuthClientRecord, OAuthStore, OAuthTokenRecord } from '../ports/oauth-store.ts';

// MediaForge's own OAuth 2.1 authorization server for the MCP resource (docs/mcp.md): dynamic registration of
// public clients (RFC 7591), authorization code with PKCE S256 (the user signs in and consents), refresh
// tokens that rotate and, when one is replayed, revoke their whole family (OAuth 2.1 §4.3.1), revocation (RFC
// 7009). Codes and tokens are random 256-bit secrets stored as SHA-256 hashes, bound to the resource.

/** An error answered as RFC 6749 §5.2 / RFC 7591 §3.2.2 `{ error, error_description }`. */
export class OAuthError extends Error {
  constructor(
    readonly code: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}

/** An authorization request that passed every check: what the consent page shows and then approves. */
export interface AuthorizationRequest {
  client: OAuthClientRecord;
  redirectUri: string;
  state: string | undefined;
  codeChallenge: string;
  scopes: Scope[];
  resource: string;
}

/**
 * Checking an authorization request: `invalid` when the client or its redirect URI cannot be trusted (shown
 * on a page, never redirected: RFC 6749 §4.1.2.1), `redirect` for an error the client is told about, `ok`.
 */
export type AuthorizationCheck =
  | { kind: 'invalid'; description: string }
  | { kind: 'redirect'; url: string }
  | { kind: 'ok'; request: AuthorizationRequest };

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

export interface OAuthServer {
  /** RFC 8414 metadata. */
  metadata(): Record<string, unknown>;
  /** RFC 7591 registration: the registered client's metadata (201). */
  register(body: Record<string, unknown>): Promise<Record<string, unknown>>;
  checkAuthorization(params: URLSearchParams): Promise<AuthorizationCheck>;
  /** The redirect that hands the client a code for what the user approved (`ticked` scopes). */
  approve(userId: string, request: AuthorizationRequest, ticked: readonly string[]): Promise<string>;
  /** The redirect that tells the client the user said no. */
  deny(request: AuthorizationRequest): string;
  /** The token endpoint (authorization_code and refresh_token grants). */
  token(form: URLSearchParams): Promise<TokenResponse>;
  /** RFC 7009: revokes what it can; unknown tokens are not an error. */
  revoke(form: URLSearchParams): Promise<void>;
  /** The principal of a valid access token for our resource, or null. */
  authenticate(accessToken: string): Promise<KeyPrincipal | null>;
  /** Revokes every grant of the user (sign-out everywhere). */
  revokeUser(userId: string): Promise<void>;
}

/** How long this node trusts an access token it has checked (a revocation elsewhere shows within this). */
const CHECKED_TOKEN_TTL_MS = 2000;
const CHECKED_TOKENS_MAX = 10_000;
const MAX_CLIENT_NAME = 200;
const MAX_STATE = 1000;

export function createOAuthServer(deps: {
  store: OAuthStore;
  clock: Clock;
  /** `PUBLIC_BASE_URL`: the issuer. */
  issuer: string;
  /** The one protected resource (`<base>/api/mcp`). */
  resource: string;
  accessTokenTtlMs: number;
}): OAuthServer {
  const { store, clock, issuer, resource } = deps;
  const checked = new Map<string, { principal: KeyPrincipal; until: number }>();
  const now = () => new Date(clock.now());

  /** Forgets what this node trusted for the user (revocations take effect here at once). */
  function forgetUser(userId: string) {
    for (const [token, entry] of checked) if (entry.principal.userId === userId) checked.delete(token);
  }
  async function revokeGrant(grantId: string, userId: string) {
    await store.revokeGrant(grantId, now());
    forgetUser(userId);
  }

  async function clientOf(form: URLSearchParams): Promise<OAuthClientRecord> {
    const clientId = form.get('client_id');
    const client = clientId ? await store.getClient(clientId) : null;
    if (!client) throw new OAuthError('invalid_client', 'Unknown client_id', 401);
    return client;
  }

  function checkResource(form: URLSearchParams) {
    const asked = form.get('resource');
    if (asked !== null && asked !== resource) {
      throw new OAuthError('invalid_target', `Tokens are issued for ${resource} only`);
    }
  }

  /** A new access + refresh token pair of the grant; refused when the grant was revoked meanwhile. */
  async function issue(
    grant: { id: string; user_id: string; client_id: string; resource: string },
    scopes: Scope[],
  ): Promise<TokenResponse> {
    const access = generateSecret(ACCESS_TOKEN_PREFIX);
    const refresh = generateSecret(REFRESH_TOKEN_PREFIX);
    const at = clock.now();
    const base = {
      grant_id: grant.id,
      user_id: grant.user_id,
      client_id: grant.client_id,
      scopes,
      resource: grant.resource,
      spent_at: null,
      revoked_at: null,
    };
    const records: OAuthTokenRecord[] = [
      { id: access.hash, kind: 'access', expires_at: new Date(at + deps.accessTokenTtlMs), ...base },
      { id: refresh.hash, kind: 'refresh', expires_at: new Date(at + REFRESH_TOKEN_TTL_MS), ...base },
    ];
    await store.saveTokens(records);
    // A revocation that ran while these were written did not see them: look again, and revoke them too.
    if ((await store.getGrant(grant.id))?.revoked_at) {
      await revokeGrant(grant.id, grant.user_id);
      throw new OAuthError('invalid_grant', 'The grant has been revoked');
    }
    return {
      access_token: access.secret,
      token_type: 'Bearer',
      expires_in: Math.round(deps.accessTokenTtlMs / 1000),
      refresh_token: refresh.secret,
      scope: scopes.join(' '),
    };
  }

  async function exchangeCode(form: URLSearchParams): Promise<TokenResponse> {
    const client = await clientOf(form);
    const code = form.get('code') ?? '';
    if (!isWellFormedOAuthSecret(code, AUTHORIZATION_CODE_PREFIX)) {
      throw new OAuthError('invalid_grant', 'Unknown authorization code');
    }
    const spent = await store.spendCode(hashSecret(code), now());
    if (!spent) throw new OAuthError('invalid_grant', 'Unknown authorization code');
    const { code: record, first } = spent;
    if (!first) {
      // A replayed code may have been stolen: what its first use obtained is revoked (RFC 6749 §4.1.2).
      await revokeGrant(record.grant_id, record.user_id);
      throw new OAuthError('invalid_grant', 'The authorization code has already been used');
    }
    if (record.expires_at.getTime() <= clock.now()) {
      throw new OAuthError('invalid_grant', 'The authorization code has expired');
    }
    if (record.client_id !== client.id) {
      throw new OAuthError('invalid_grant', 'The authorization code was issued to another client');
    }
    if (form.get('redirect_uri') !== record.redirect_uri) {
      throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
    }
    if (!verifierMatches(form.get('code_verifier') ?? '', record.code_challenge)) {
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
    }
    checkResource(form);
    const grant = {
      id: record.grant_id,
      user_id: record.user_id,
      client_id: client.id,
      scopes: record.scopes,
      resource: record.resource,
      created_at: now(),
      revoked_at: null,
    };
    await store.createGrant(grant);
    return issue(grant, record.scopes);
  }

  async function rotateRefreshToken(form: URLSearchParams): Promise<TokenResponse> {
    const client = await clientOf(form);
    const token = form.get('refresh_token') ?? '';
    if (!isWellFormedOAuthSecret(token, REFRESH_TOKEN_PREFIX)) {
      throw new OAuthError('invalid_grant', 'Unknown refresh token');
    }
    const spent = await store.spendRefreshToken(hashSecret(token), now());
    if (!spent || spent.token.kind !== 'refresh')
      throw new OAuthError('invalid_grant', 'Unknown refresh token');
    const { token: record, first } = spent;
    if (!first) {
      // Rotation hands each refresh token out once; a second use means two parties hold it.
      await revokeGrant(record.grant_id, record.user_id);
      throw new OAuthError('invalid_grant', 'The refresh token has already been used; its grant is revoked');
    }
    if (record.revoked_at) throw new OAuthError('invalid_grant', 'The refresh token has been revoked');
    if (record.expires_at.getTime() <= clock.now()) {
      throw new OAuthError('invalid_grant', 'The refresh token has expired');
    }
    if (record.client_id !== client.id) {
      throw new OAuthError('invalid_grant', 'The refresh token was issued to another client');
    }
    checkResource(form);
    let scopes = record.scopes;
    const asked = form.get('scope');
    if (asked !== null) {
      const wanted = asked.split(' ').filter(Boolean);
      if (wanted.some((scope) => !record.scopes.includes(scope as Scope))) {
        throw new OAuthError('invalid_scope', 'A refresh can only narrow the granted scopes');
      }
      scopes = grantedScopes(wanted);
    }
    const grant = await store.getGrant(record.grant_id);
    if (!grant || grant.revoked_at) throw new OAuthError('invalid_grant', 'The grant has been revoked');
    return issue(grant, scopes);
  }

  return {
    metadata: () => ({
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      registration_endpoint: `${issuer}/oauth/register`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      scopes_supported: [...SCOPES],
      authorization_response_iss_parameter_supported: true,
      service_documentation: `${issuer}/api/v1/openapi.json`,
    }),

    async register(body) {
      const uris = body.redirect_uris;
      if (!Array.isArray(uris) || uris.length === 0) {
        throw new OAuthError('invalid_client_metadata', 'redirect_uris must be a non-empty array of URLs');
      }
      if (!uris.every((uri) => typeof uri === 'string')) {
        throw new OAuthError('invalid_redirect_uri', 'Every redirect URI must be a string');
      }
      if (uris.length > MAX_REDIRECT_URIS) {
        throw new OAuthError('invalid_client_metadata', `At most ${MAX_REDIRECT_URIS} redirect_uris`);
      }
      for (const uri of uris as string[]) {
        const problem = redirectUriProblem(uri);
        if (problem) throw new OAuthError('invalid_redirect_uri', problem);
      }
      const name = typeof body.client_name === 'string' ? body.client_name.trim() : '';
      if (name.length > MAX_CLIENT_NAME) {
        throw new OAuthError(
          'invalid_client_metadata',
          `client_name must be at most ${MAX_CLIENT_NAME} characters`,
        );
      }
      const client: OAuthClientRecord = {
        id: newId('mfc', 24),
        name: name || 'Unnamed client',
        redirect_uris: uris as string[],
        created_at: now(),
      };
      await store.createClient(client);
      // Every client is public: whatever method was asked for, the answer says `none` (RFC 7591 §3.2.1 lets
      // the server replace requested values) and PKCE stands in for a secret.
      return {
        client_id: client.id,
        client_id_issued_at: Math.floor(client.created_at.getTime() / 1000),
        client_name: client.name,
        redirect_uris: client.redirect_uris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      };
    },

    async checkAuthorization(params) {
      const clientId = params.get('client_id');
      const client = clientId ? await store.getClient(clientId) : null;
      if (!client)
        return { kind: 'invalid', description: 'This application is not registered (unknown client_id).' };
      const given = params.get('redirect_uri');
      const redirectUri = given ?? (client.redirect_uris.length === 1 ? client.redirect_uris[0]! : null);
      if (redirectUri === null || !client.redirect_uris.includes(redirectUri)) {
        return {
          kind: 'invalid',
          description: 'The redirect_uri is not one this application registered, so it is not followed.',
        };
      }
      const state = params.get('state') ?? undefined;
      const fail = (error: string, description: string): AuthorizationCheck => ({
        kind: 'redirect',
        url: redirectWith(redirectUri, { error, error_description: description, state, iss: issuer }),
      });
      if (params.get('response_type') !== 'code') {
        return fail('unsupported_response_type', 'Only response_type=code is supported');
      }
      const challenge = params.get('code_challenge') ?? '';
      if (params.get('code_challenge_method') !== 'S256' || !isValidCodeChallenge(challenge)) {
        return fail('invalid_request', 'PKCE is required: a code_challenge with code_challenge_method=S256');
      }
      if (state !== undefined && state.length > MAX_STATE) {
        return fail('invalid_request', `state must be at most ${MAX_STATE} characters`);
      }
      const asked = params.get('resource');
      if (asked !== null && asked !== resource) {
        return fail('invalid_target', `Tokens are issued for ${resource} only`);
      }
      return {
        kind: 'ok',
        request: {
          client,
          redirectUri,
          state,
          codeChallenge: challenge,
          scopes: requestedScopes(params.get('scope') ?? undefined),
          resource,
        },
      };
    },

    async approve(userId, request, ticked) {
      const code = generateSecret(AUTHORIZATION_CODE_PREFIX);
      await store.saveCode({
        id: code.hash,
        client_id: request.client.id,
        user_id: userId,
        redirect_uri: request.redirectUri,
        code_challenge: request.codeChallenge,
        scopes: grantedScopes(ticked),
        resource: request.resource,
        grant_id: newId('oag', 20),
        expires_at: new Date(clock.now() + AUTHORIZATION_CODE_TTL_MS),
        spent_at: null,
      });
      return redirectWith(request.redirectUri, { code: code.secret, state: request.state, iss: issuer });
    },

    deny: (request) =>
      redirectWith(request.redirectUri, {
        error: 'access_denied',
        error_description: 'The user did not allow access',
        state: request.state,
        iss: issuer,
      }),

    async token(form) {
      const grantType = form.get('grant_type');
      if (grantType === 'authorization_code') return exchangeCode(form);
      if (grantType === 'refresh_token') return rotateRefreshToken(form);
      throw new OAuthError(
        'unsupported_grant_type',
        'grant_type must be authorization_code or refresh_token',
      );
    },

    async revoke(form) {
      const token = form.get('token') ?? '';
      const isAccess = isWellFormedOAuthSecret(token, ACCESS_TOKEN_PREFIX);
      if (!isAccess && !isWellFormedOAuthSecret(token, REFRESH_TOKEN_PREFIX)) return;
      const record = await store.getToken(hashSecret(token));
      // Only the client the token was issued to may revoke it (RFC 7009 §2.1).
      if (!record || record.client_id !== form.get('client_id')) return;
      if (record.kind === 'refresh') await revokeGrant(record.grant_id, record.user_id);
      else {
        await store.revokeToken(record.id, now());
        checked.delete(token);
      }
    },

    async authenticate(accessToken) {
      const at = clock.now();
      const known = checked.get(accessToken);
      if (known && known.until > at) return known.principal;
      checked.delete(accessToken);
      if (!isWellFormedOAuthSecret(accessToken, ACCESS_TOKEN_PREFIX)) return null;
      const record = await store.getToken(hashSecret(accessToken));
      if (!record || record.kind !== 'access' || record.revoked_at || record.resource !== resource)
        return null;
      const expiresAt = record.expires_at.getTime();
      if (expiresAt <= at) return null;
      const principal: KeyPrincipal = {
        keyId: record.grant_id,
        userId: record.user_id,
        scopes: record.scopes,
      };
      if (checked.size >= CHECKED_TOKENS_MAX) checked.clear();
      checked.set(accessToken, { principal, until: Math.min(expiresAt, at + CHECKED_TOKEN_TTL_MS) });
      return principal;
    },

    async revokeUser(userId) {
      await store.revokeUserGrants(userId, now());
      forgetUser(userId);
    },
  };
}

/** `uri` with the answer's parameters added to its query (undefined ones left out). */
function redirectWith(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) url.searchParams.set(name, value);
  return url.href;
}
