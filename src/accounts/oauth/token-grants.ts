import { generateSecret, hashSecret } from '../api-key.ts';
import type { Clock } from '../../platform/index.ts';
import type { Scope } from '../../../schemas/scopes.ts';
import type { OAuthStore, OAuthTokenRecord } from '../ports/oauth-store.ts';
import { OAuthError } from './oauth-error.ts';
import { clientOf } from './client-registration.ts';
import {
  ACCESS_TOKEN_PREFIX,
  AUTHORIZATION_CODE_PREFIX,
  REFRESH_TOKEN_PREFIX,
  REFRESH_TOKEN_TTL_MS,
  grantedScopes,
  isWellFormedOAuthSecret,
  verifierMatches,
} from './oauth-terms.ts';

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** What the token endpoint works with. */
export interface TokenGrantsDeps {
  store: OAuthStore;
  clock: Clock;
  /** The one protected resource (`<base>/api/mcp`). */
  resource: string;
  accessTokenTtlMs: number;
  /** Revokes a whole grant (its tokens everywhere), and what this node trusted of the user. */
  revokeGrant(grantId: string, userId: string): Promise<void>;
}

/**
 * The token endpoint: an authorization code (with its PKCE verifier) for a new grant's first tokens, or a
 * refresh token for the next pair. Both are single use: a replay revokes the grant it belongs to.
 */
export function tokenGrants(deps: TokenGrantsDeps): (form: URLSearchParams) => Promise<TokenResponse> {
  return async (form) => {
    const grantType = form.get('grant_type');
    if (grantType === 'authorization_code') return exchangeCode(deps, form);
    if (grantType === 'refresh_token') return rotateRefreshToken(deps, form);
    throw new OAuthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
  };
}

function checkResource(resource: string, form: URLSearchParams) {
  const asked = form.get('resource');
  if (asked !== null && asked !== resource) {
    throw new OAuthError('invalid_target', `Tokens are issued for ${resource} only`);
  }
}

async function exchangeCode(deps: TokenGrantsDeps, form: URLSearchParams): Promise<TokenResponse> {
  const { store, clock } = deps;
  const client = await clientOf(store, form);
  const code = form.get('code') ?? '';
  if (!isWellFormedOAuthSecret(code, AUTHORIZATION_CODE_PREFIX)) {
    throw new OAuthError('invalid_grant', 'Unknown authorization code');
  }
  const spent = await store.spendCode(hashSecret(code), new Date(clock.now()));
  if (!spent) throw new OAuthError('invalid_grant', 'Unknown authorization code');
  const { code: record, first } = spent;
  if (!first) {
    // A replayed code may have been stolen: what its first use obtained is revoked (RFC 6749 §4.1.2).
    await deps.revokeGrant(record.grant_id, record.user_id);
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
  checkResource(deps.resource, form);
  const grant = {
    id: record.grant_id,
    user_id: record.user_id,
    client_id: client.id,
    scopes: record.scopes,
    resource: record.resource,
    created_at: new Date(clock.now()),
    revoked_at: null,
  };
  await store.createGrant(grant);
  return issue(deps, grant, record.scopes);
}

async function rotateRefreshToken(deps: TokenGrantsDeps, form: URLSearchParams): Promise<TokenResponse> {
  const { store, clock } = deps;
  const client = await clientOf(store, form);
  const token = form.get('refresh_token') ?? '';
  if (!isWellFormedOAuthSecret(token, REFRESH_TOKEN_PREFIX)) {
    throw new OAuthError('invalid_grant', 'Unknown refresh token');
  }
  const spent = await store.spendRefreshToken(hashSecret(token), new Date(clock.now()));
  if (!spent || spent.token.kind !== 'refresh')
    throw new OAuthError('invalid_grant', 'Unknown refresh token');
  const { token: record, first } = spent;
  if (!first) {
    // Rotation hands each refresh token out once; a second use means two parties hold it.
    await deps.revokeGrant(record.grant_id, record.user_id);
    throw new OAuthError('invalid_grant', 'The refresh token has already been used; its grant is revoked');
  }
  if (record.revoked_at) throw new OAuthError('invalid_grant', 'The refresh token has been revoked');
  if (record.expires_at.getTime() <= clock.now()) {
    throw new OAuthError('invalid_grant', 'The refresh token has expired');
  }
  if (record.client_id !== client.id) {
    throw new OAuthError('invalid_grant', 'The refresh token was issued to another client');
  }
  checkResource(deps.resource, form);
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
  return issue(deps, grant, scopes);
}

/** A new access + refresh token pair of the grant; refused when the grant was revoked meanwhile. */
async function issue(
  deps: TokenGrantsDeps,
  grant: { id: string; user_id: string; client_id: string; resource: string },
  scopes: Scope[],
): Promise<TokenResponse> {
  const { store, accessTokenTtlMs } = deps;
  const access = generateSecret(ACCESS_TOKEN_PREFIX);
  const refresh = generateSecret(REFRESH_TOKEN_PREFIX);
  const at = deps.clock.now();
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
    { id: access.hash, kind: 'access', expires_at: new Date(at + accessTokenTtlMs), ...base },
    { id: refresh.hash, kind: 'refresh', expires_at: new Date(at + REFRESH_TOKEN_TTL_MS), ...base },
  ];
  await store.saveTokens(records);
  // A revocation that ran while these were written did not see them: look again, and revoke them too.
  if ((await store.getGrant(grant.id))?.revoked_at) {
    await deps.revokeGrant(grant.id, grant.user_id);
    throw new OAuthError('invalid_grant', 'The grant has been revoked');
  }
  return {
    access_token: access.secret,
    token_type: 'Bearer',
    expires_in: Math.round(accessTokenTtlMs / 1000),
    refresh_token: refresh.secret,
    scope: scopes.join(' '),
  };
}
