import { AppError, type Clock, type KeyPrincipal, type RequestAuthenticator } from '../platform/index.ts';
import { hashApiKey, isWellFormedApiKey, secretsEqual } from './api-key.ts';
import { ACCESS_TOKEN_PREFIX } from './oauth/oauth-terms.ts';
import { SESSION_TOKEN_PREFIX } from './session-tokens.ts';
import type { ApiKeysRepository } from './ports/api-keys-repository.ts';

export const MISSING_AUTHORIZATION = 'Missing Authorization header';
export const INVALID_KEY = 'Invalid or revoked API key';
export const INVALID_ACCESS_TOKEN = 'Invalid, expired or revoked access token';

const REFRESH_AFTER_MS = 2000;
const EXPIRE_AFTER_MS = 10_000;
const CACHE_MAX_ENTRIES = 10_000;

/** Resolves `Authorization` headers to principals (API keys) or checks the admin token. */
export interface Authenticator extends RequestAuthenticator {
  /** Drops a key from the cache at once (revocation on this node). */
  forget(keyId: string): void;
}

interface CachedKey {
  principal: KeyPrincipal;
  /** After this, the next request triggers one background re-read (revocations elsewhere show up). */
  refreshAt: number;
  /** After this, the entry is not trusted at all (e.g. the database has been unreachable meanwhile). */
  expiresAt: number;
  refreshing: boolean;
}

/**
 * Keys are looked up by hash and cached by the presented token, so the hot path costs neither a database
 * round trip nor a hash (the cache lives in this process's memory, where the token already is while the
 * request is handled). Entries are refreshed ahead, once, in the background: a busy key never makes every
 * in-flight request wait for the database at the same moment. A revocation on this node takes effect
 * immediately; on other nodes after at most 2 s plus one lookup.
 */
export function createAuthenticator(deps: {
  keys: ApiKeysRepository;
  adminToken: string;
  clock: Clock;
  /** OAuth access tokens (`mfat_`), for routes that take them (`/api/mcp` only: docs/mcp.md). */
  accessTokens?: { authenticate(token: string): Promise<KeyPrincipal | null> };
  /** Dashboard session tokens (`mfdt_`), taken by every key route but the OAuth ones (docs/accounts.md). */
  sessionTokens?: { authenticateToken(token: string): Promise<KeyPrincipal | null> };
}): Authenticator {
  const cache = new Map<string, CachedKey>();
  const lookups = new Map<string, Promise<KeyPrincipal | null>>();

  /** One database lookup per token at a time; concurrent callers share it. */
  function lookup(token: string): Promise<KeyPrincipal | null> {
    let pending = lookups.get(token);
    if (!pending) {
      pending = deps.keys
        .findByHash(hashApiKey(token))
        .then((record) => {
          if (!record || record.revoked_at) {
            cache.delete(token);
            return null;
          }
          const principal: KeyPrincipal = { keyId: record.id, userId: record.user_id, scopes: record.scopes };
          const now = deps.clock.now();
          if (cache.size >= CACHE_MAX_ENTRIES) cache.clear();
          cache.set(token, {
            principal,
            refreshAt: now + REFRESH_AFTER_MS,
            expiresAt: now + EXPIRE_AFTER_MS,
            refreshing: false,
          });
          return principal;
        })
        .finally(() => lookups.delete(token));
      lookups.set(token, pending);
    }
    return pending;
  }

  return {
    authenticateKey(authorization, acceptsOAuth = false) {
      const token = bearerToken(authorization);
      if (acceptsOAuth && deps.accessTokens && token.startsWith(ACCESS_TOKEN_PREFIX)) {
        return deps.accessTokens.authenticate(token).then((principal) => {
          if (!principal) throw new AppError('unauthorized', INVALID_ACCESS_TOKEN);
          return principal;
        });
      }
      // The dashboard's tokens are for `/api/v1` and the events socket, not for the OAuth resource (`/api/mcp`).
      if (!acceptsOAuth && deps.sessionTokens && token.startsWith(SESSION_TOKEN_PREFIX)) {
        return deps.sessionTokens.authenticateToken(token).then((principal) => {
          if (!principal) throw new AppError('unauthorized', INVALID_ACCESS_TOKEN);
          return principal;
        });
      }
      const now = deps.clock.now();
      const cached = cache.get(token);
      if (cached && cached.expiresAt > now) {
        if (cached.refreshAt <= now && !cached.refreshing) {
          cached.refreshing = true;
          lookup(token).catch(() => (cached.refreshing = false)); // a failed refresh is retried by the next request
        }
        return cached.principal;
      }
      if (!isWellFormedApiKey(token)) throw new AppError('unauthorized', INVALID_KEY);
      return lookup(token).then((principal) => {
        if (!principal) throw new AppError('unauthorized', INVALID_KEY);
        return principal;
      });
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
