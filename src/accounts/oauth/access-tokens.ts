import { hashSecret } from '../api-key.ts';
import type { Clock, KeyPrincipal } from '../../platform/index.ts';
import type { OAuthStore } from '../ports/oauth-store.ts';
import { ACCESS_TOKEN_PREFIX, isWellFormedOAuthSecret } from './oauth-terms.ts';

/** How long this node trusts an access token it has checked (a revocation elsewhere shows within this). */
const CHECKED_TOKEN_TTL_MS = 2000;
const CHECKED_TOKENS_MAX = 10_000;

/** Access tokens as the resource checks them, each trusted briefly once checked. */
export interface AccessTokens {
  /** The principal of a valid access token for our resource, or null. */
  authenticate(accessToken: string): Promise<KeyPrincipal | null>;
  /** Stops trusting one token on this node (it was revoked here). */
  forgetToken(accessToken: string): void;
  /** Stops trusting the user's tokens on this node (revocations take effect here at once). */
  forgetUser(userId: string): void;
}

/** Checks access tokens against the store, remembering each answer for a moment. */
export function createAccessTokens(deps: {
  store: Pick<OAuthStore, 'getToken'>;
  clock: Clock;
  resource: string;
}): AccessTokens {
  const { store, clock, resource } = deps;
  const checked = new Map<string, { principal: KeyPrincipal; until: number }>();
  return {
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

    forgetToken(accessToken) {
      checked.delete(accessToken);
    },

    forgetUser(userId) {
      for (const [token, entry] of checked) if (entry.principal.userId === userId) checked.delete(token);
    },
  };
}
