import { hashSecret } from '../api-key.ts';
import type { KeyPrincipal, Clock } from '../../platform/index.ts';
import { ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX, isWellFormedOAuthSecret } from './oauth-terms.ts';
import { SCOPES } from '../../../schemas/scopes.ts';
import type { OAuthStore } from '../ports/oauth-store.ts';
import { registerClient } from './client-registration.ts';
import {
  createAuthorizations,
  type AuthorizationCheck,
  type AuthorizationRequest,
} from './authorization-codes.ts';
import { createAccessTokens } from './access-tokens.ts';
import { tokenGrants, type TokenResponse } from './token-grants.ts';

// MediaForge's own OAuth 2.1 authorization server for the MCP resource (docs/mcp.md): dynamic registration of
// public clients (RFC 7591), authorization code with PKCE S256 (the user signs in and consents), refresh
// tokens that rotate and, when one is replayed, revoke their whole family (OAuth 2.1 §4.3.1), revocation (RFC
// 7009). Codes and tokens are random 256-bit secrets stored as SHA-256 hashes, bound to the resource.

export interface OAuthServer {
  /** RFC 8414 metadata. */
  metadata(): Record<string, unknown>;
  /** RFC 7591 registration: the registered client's metadata (201). */
  register(body: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Checks an authorization request (PKCE S256 required, the one resource, a registered redirect URI). */
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

/**
 * The authorization server, assembled from its parts: client registration (client-registration.ts),
 * authorization requests and codes (authorization-codes.ts), the token endpoint (token-grants.ts) and the
 * resource's check of access tokens (access-tokens.ts); revocation is here.
 */
export function createOAuthServer(deps: {
  store: OAuthStore;
  clock: Clock;
  /** `PUBLIC_BASE_URL`: the issuer. */
  issuer: string;
  /** The one protected resource (`<base>/api/mcp`). */
  resource: string;
  accessTokenTtlMs: number;
}): OAuthServer {
  const { store, clock, issuer } = deps;
  const now = () => new Date(clock.now());
  const accessTokens = createAccessTokens(deps);
  async function revokeGrant(grantId: string, userId: string) {
    await store.revokeGrant(grantId, now());
    accessTokens.forgetUser(userId);
  }

  return {
    metadata: () => serverMetadata(issuer),
    register: (body) => registerClient(store, clock, body),
    ...createAuthorizations(deps),
    token: tokenGrants({ ...deps, revokeGrant }),

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
        accessTokens.forgetToken(token);
      }
    },

    authenticate: (accessToken) => accessTokens.authenticate(accessToken),

    async revokeUser(userId) {
      await store.revokeUserGrants(userId, now());
      accessTokens.forgetUser(userId);
    },
  };
}

/** RFC 8414 metadata of the server at `issuer`. */
function serverMetadata(issuer: string): Record<string, unknown> {
  return {
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
  };
}
