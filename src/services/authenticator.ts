import { AppError } from '../domain/errors.ts';
import { hashApiKey, isWellFormedApiKey, secretsEqual } from '../domain/api-key.ts';
import type { Clock } from '../domain/clock.ts';
import type { KeyPrincipal } from '../http/route.ts';
import type { ApiKeysRepository } from './repositories.ts';

export const MISSING_AUTHORIZATION = 'Missing Authorization header';
export const INVALID_KEY = 'Invalid or revoked API key';

const CACHE_TTL_MS = 2000;
const CACHE_MAX_ENTRIES = 10_000;

/** Resolves `Authorization` headers to principals (API keys) or checks the admin token. */
export interface Authenticator {
  /** The key's principal; throws 401 with the spec's exact messages. */
  authenticateKey(authorization: string | undefined): Promise<KeyPrincipal>;
  /** Throws 401 unless the header carries the admin token. */
  authenticateAdmin(authorization: string | undefined): void;
  /** Drops a key from the cache at once (revocation on this node). */
  forget(keyId: string): void;
}

/**
 * Keys are looked up by hash; valid keys are cached for two seconds by the presented token, so the hot path
 * costs neither a database round trip nor a hash (the cache lives in this process's memory, where the token
 * already is while the request is handled). A revocation on this node takes effect immediately; on other
 * nodes within the TTL.
 */
export function createAuthenticator(deps: {
  keys: ApiKeysRepository;
  adminToken: string;
  clock: Clock;
}): Authenticator {
  const cache = new Map<string, { principal: KeyPrincipal; expiresAt: number }>();

  return {
    async authenticateKey(authorization) {
      const token = bearerToken(authorization);
      const now = deps.clock.now();
      const cached = cache.get(token);
      if (cached && cached.expiresAt > now) return cached.principal;
      if (!isWellFormedApiKey(token)) throw new AppError('unauthorized', INVALID_KEY);
      const record = await deps.keys.findByHash(hashApiKey(token));
      if (!record || record.revoked_at) {
        cache.delete(token);
        throw new AppError('unauthorized', INVALID_KEY);
      }
      const principal: KeyPrincipal = { keyId: record.id, userId: record.user_id, scopes: record.scopes };
      if (cache.size >= CACHE_MAX_ENTRIES) cache.clear();
      cache.set(token, { principal, expiresAt: now + CACHE_TTL_MS });
      return principal;
    },
    authenticateAdmin(authorization) {
      const token = bearerToken(authorization);
      if (!secretsEqual(token, deps.adminToken)) throw new AppError('unauthorized', 'Invalid admin token');
    },
    forget(keyId) {
      for (const [token, entry] of cache) if (entry.principal.keyId === keyId) cache.delete(token);
    },
  };
}

/** The token of a `Bearer` header; 401 `Missing Authorization header` when there is none. */
function bearerToken(authorization: string | undefined): string {
  if (!authorization || authorization.trim() === '')
    throw new AppError('unauthorized', MISSING_AUTHORIZATION);
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return match ? match[1]! : '';
}
