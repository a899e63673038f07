import { createHash } from 'node:crypto';
import { SCOPES, normaliseScopes, type Scope } from '../../../schemas/scopes.ts';

// The rules of MediaForge's OAuth 2.1 authorization server (docs/mcp.md), free of storage and HTTP.

/** Prefixes of the secrets the authorization server hands out (each followed by 43 base62 characters). */
export const ACCESS_TOKEN_PREFIX = 'mfat_';
export const REFRESH_TOKEN_PREFIX = 'mfrt_';
export const AUTHORIZATION_CODE_PREFIX = 'mfac_';

const TOKEN_PATTERN = /^mf(at|rt|ac)_[0-9A-Za-z]{43}$/;

/** True when the string has the shape of one of our OAuth secrets; anything else is refused without a lookup. */
export function isWellFormedOAuthSecret(candidate: string, prefix: string): boolean {
  return candidate.startsWith(prefix) && TOKEN_PATTERN.test(candidate);
}

/** RFC 7636 §4.1: 43–128 characters of the unreserved set. */
const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** A S256 challenge is the base64url SHA-256 of a verifier: 43 characters. */
const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export const isValidCodeChallenge = (challenge: string): boolean => CODE_CHALLENGE.test(challenge);

/** Whether `verifier` is the one the S256 `challenge` was made from (RFC 7636 §4.6). */
export function verifierMatches(verifier: string, challenge: string): boolean {
  if (!CODE_VERIFIER.test(verifier)) return false;
  return createHash('sha256').update(verifier).digest('base64url') === challenge;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
export const MAX_REDIRECT_URIS = 10;
export const MAX_REDIRECT_URI_LENGTH = 2000;

/**
 * Why a redirect URI cannot be registered, or undefined when it can: absolute, no fragment, https — or http on
 * a loopback host, where native clients (the Inspector, VS Code) listen (RFC 8252 §7.3).
 */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri.length > MAX_REDIRECT_URI_LENGTH) {
    return `redirect URIs must be at most ${MAX_REDIRECT_URI_LENGTH} characters`;
  }
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${uri} is not an absolute URL`;
  }
  if (url.hash || uri.includes('#')) return `${uri} must not have a fragment`;
  if (url.username || url.password) return `${uri} must not carry credentials`;
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  return `${uri} must be a https URL, or http on a loopback host (127.0.0.1, [::1], localhost)`;
}

/**
 * The scopes a `scope` parameter asks for (space-separated, RFC 6749 §3.3), known ones only: clients add
 * scopes of their own (`offline_access`), which grant nothing here. None asked for means all of them — the
 * user still picks on the consent page.
 */
export function requestedScopes(parameter: string | undefined): Scope[] {
  const known = new Set<string>(SCOPES);
  const asked = (parameter ?? '').split(' ').filter((scope): scope is Scope => known.has(scope));
  return asked.length > 0 ? normaliseScopes(asked) : [...SCOPES];
}

/** The scopes ticked on the consent page, as granted: known ones, plus `models:read`, in table order. */
export function grantedScopes(ticked: readonly string[]): Scope[] {
  const known = new Set<string>(SCOPES);
  return normaliseScopes(ticked.filter((scope): scope is Scope => known.has(scope)));
}

/** Lifetimes: codes are exchanged at once; refresh tokens keep a client signed in for a month of disuse. */
export const AUTHORIZATION_CODE_TTL_MS = 60_000;
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 3600_000;
