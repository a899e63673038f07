import { generateSecret } from '../api-key.ts';
import { newId, type Clock } from '../../platform/index.ts';
import type { Scope } from '../../../schemas/scopes.ts';
import type { OAuthClientRecord, OAuthStore } from '../ports/oauth-store.ts';
import {
  AUTHORIZATION_CODE_PREFIX,
  AUTHORIZATION_CODE_TTL_MS,
  grantedScopes,
  isValidCodeChallenge,
  requestedScopes,
} from './oauth-terms.ts';

const MAX_STATE = 1000;

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

/** The authorization endpoint's side: requests checked, then approved with a code or denied. */
export interface Authorizations {
  /** Checks an authorization request (PKCE S256 required, the one resource, a registered redirect URI). */
  checkAuthorization(params: URLSearchParams): Promise<AuthorizationCheck>;
  /** The redirect that hands the client a code for what the user approved (`ticked` scopes). */
  approve(userId: string, request: AuthorizationRequest, ticked: readonly string[]): Promise<string>;
  /** The redirect that tells the client the user said no. */
  deny(request: AuthorizationRequest): string;
}

/** Authorization requests and the codes they end in (single use, short-lived, stored as hashes). */
export function createAuthorizations(deps: {
  store: Pick<OAuthStore, 'getClient' | 'saveCode'>;
  clock: Clock;
  issuer: string;
  resource: string;
}): Authorizations {
  const { store, clock, issuer, resource } = deps;
  return {
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
  };
}

/** `uri` with the answer's parameters added to its query (undefined ones left out). */
function redirectWith(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) url.searchParams.set(name, value);
  return url.href;
}
