import { SESSION_PRINCIPAL_PREFIX, type KeyPrincipal, type Clock } from '../platform/index.ts';
import { generateSecret, hashSecret } from './api-key.ts';
import { SCOPES } from '../../schemas/scopes.ts';
import type { WebSessionRecord, WebSessionsRepository } from './ports/web-sessions.ts';

/** The page's bearer tokens for `/api/v1` and the events socket (docs/dashboard.md): 15 minutes, renewed by the page. */
export const SESSION_TOKEN_PREFIX = 'mfdt_';
export const SESSION_TOKEN_TTL_MS = 15 * 60_000;
const SESSION_TOKEN = /^mfdt_[0-9A-Za-z]{43}$/;
/** How long this node trusts a token it has checked (a sign-out on another node shows within this). */
const CHECKED_TOKEN_TTL_MS = 2000;
const CHECKED_TOKENS_MAX = 10_000;

/**
 * The caller a session (or its bearer token) stands for: the user with every scope, under a public name of
 * the session (`ses_…`, never the cookie or its hash) for rate limits and the audit log.
 */
export function sessionPrincipal(session: Pick<WebSessionRecord, 'id' | 'user_id'>): KeyPrincipal {
  return {
    keyId: `${SESSION_PRINCIPAL_PREFIX}${session.id.slice(0, 20)}`,
    userId: session.user_id,
    scopes: SCOPES,
  };
}

/** A session's bearer tokens: issued to the page, checked by the pipeline, each trusted briefly once checked. */
export interface SessionTokens {
  /** A new bearer token of the session, for `/api/v1` and the events socket. */
  issueToken(session: WebSessionRecord): Promise<{ token: string; expires_at: string }>;
  /** The principal of a valid session token, or null (unknown, expired, its session ended). */
  authenticateToken(token: string): Promise<KeyPrincipal | null>;
  /** Stops trusting the session's tokens on this node (it ended). */
  forgetSession(sessionId: string): void;
  /** Stops trusting the user's tokens on this node (signed out everywhere). */
  forgetUser(userId: string): void;
}

/** Session tokens kept in storage as hashes; a token never outlives its session. */
export function createSessionTokens(deps: { sessions: WebSessionsRepository; clock: Clock }): SessionTokens {
  const checked = new Map<string, { principal: KeyPrincipal; sessionId: string; until: number }>();
  const forget = (match: (entry: { principal: KeyPrincipal; sessionId: string }) => boolean) => {
    for (const [token, entry] of checked) if (match(entry)) checked.delete(token);
  };
  return {
    async issueToken(session) {
      const { secret, hash } = generateSecret(SESSION_TOKEN_PREFIX);
      const expiresAt = new Date(
        Math.min(deps.clock.now() + SESSION_TOKEN_TTL_MS, session.expires_at.getTime()),
      );
      await deps.sessions.createToken({
        id: hash,
        session_id: session.id,
        user_id: session.user_id,
        expires_at: expiresAt,
      });
      return { token: secret, expires_at: expiresAt.toISOString() };
    },

    async authenticateToken(token) {
      const now = deps.clock.now();
      const known = checked.get(token);
      if (known && known.until > now) return known.principal;
      checked.delete(token);
      if (!SESSION_TOKEN.test(token)) return null;
      const record = await deps.sessions.getToken(hashSecret(token));
      if (!record || record.expires_at.getTime() <= now) return null;
      // The token ends with its session (a deleted session deletes its tokens; this covers the moment between).
      const session = await deps.sessions.get(record.session_id);
      if (!session || session.expires_at.getTime() <= now) return null;
      const principal = sessionPrincipal(session);
      if (checked.size >= CHECKED_TOKENS_MAX) checked.clear();
      checked.set(token, {
        principal,
        sessionId: session.id,
        until: Math.min(record.expires_at.getTime(), now + CHECKED_TOKEN_TTL_MS),
      });
      return principal;
    },

    forgetSession: (sessionId) => forget((entry) => entry.sessionId === sessionId),
    forgetUser: (userId) => forget((entry) => entry.principal.userId === userId),
  };
}
