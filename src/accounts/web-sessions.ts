import { AppError, randomBase62, type KeyPrincipal, type Clock } from '../platform/index.ts';
import { generateSecret, hashSecret, secretsEqual } from './api-key.ts';
import type { UsersRepository, UserRecord } from './ports/users-repository.ts';
import type { UserCredentialsRepository } from './ports/user-credentials.ts';
import type { WebSessionRecord, WebSessionsRepository } from './ports/web-sessions.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import type { SignInThrottle } from './sign-in-throttle.ts';
import { createSessionTokens } from './session-tokens.ts';

// Browser sessions (docs/accounts.md): email + password → a session kept in MongoDB, named by a random cookie
// whose hash is the session's id. Signing out everywhere ends every session of the user and, through
// `onSignOutEverywhere`, every OAuth grant.

export const SESSION_PREFIX = 'mfs_';
export const SESSION_TTL_MS = 14 * 24 * 3600_000;
const SESSION_COOKIE = /^mfs_[0-9A-Za-z]{43}$/;
/** One-time sign-in links (docs/accounts.md): an operator hands one over; it opens one session within 30 minutes. */
export const SIGN_IN_LINK_PREFIX = 'mfsl_';
export const SIGN_IN_LINK_TTL_MS = 30 * 60_000;
const SIGN_IN_LINK = /^mfsl_[0-9A-Za-z]{43}$/;

/** A session as the pages see it. */
export interface SignedIn {
  session: WebSessionRecord;
  user: UserRecord;
}

export type SignInOutcome =
  | { kind: 'signed_in'; cookie: string; session: WebSessionRecord }
  | { kind: 'invalid' }
  /** The address already has an attempt under way. */
  | { kind: 'busy' };

export interface WebSessions {
  signIn(email: string, password: string, address: string): Promise<SignInOutcome>;
  /** The signed-in user behind a cookie value, or null (unknown, expired, malformed, user gone). */
  resolve(cookie: string | undefined): Promise<SignedIn | null>;
  /** Whether the token is this session's CSRF token (constant time). */
  csrfMatches(session: WebSessionRecord, token: string | undefined): boolean;
  signOut(session: WebSessionRecord): Promise<void>;
  signOutEverywhere(userId: string): Promise<void>;
  /** A new bearer token of the session, for `/api/v1` and the events socket. */
  issueToken(session: WebSessionRecord): Promise<{ token: string; expires_at: string }>;
  /** The principal of a valid session token, or null (unknown, expired, its session ended). */
  authenticateToken(token: string): Promise<KeyPrincipal | null>;
  /** Opens a session for a user who proved who they are another way (a sign-in link, signing up). */
  openSession(userId: string): Promise<Extract<SignInOutcome, { kind: 'signed_in' }>>;
  /** A new one-time sign-in link's token for the user (404 for an unknown user). */
  createSignInLink(userId: string): Promise<{ token: string; expires_at: string }>;
  /** The user a link would sign in, or null when it is unknown, spent or expired (nothing is spent). */
  linkUser(token: string): Promise<UserRecord | null>;
  /** Spends a link and opens its session; `invalid` when it is unknown, spent or expired. */
  signInWithLink(token: string): Promise<SignInOutcome>;
}

export function createWebSessions(deps: {
  users: UsersRepository;
  credentials: UserCredentialsRepository;
  sessions: WebSessionsRepository;
  throttle: SignInThrottle;
  clock: Clock;
  /** Also ends what the sessions authorised (OAuth grants). */
  onSignOutEverywhere: (userId: string) => Promise<void>;
  /** Waits before a throttled attempt is checked (a test seam; setTimeout by default). */
  sleep?: (ms: number) => Promise<void>;
}): WebSessions {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const tokens = createSessionTokens(deps);
  // Checked when an email has no password, so an unknown email costs what a wrong password costs.
  let decoy: Promise<string> | undefined;

  async function passwordMatches(email: string, password: string): Promise<UserRecord | null> {
    const user = await deps.users.findByEmail(email);
    const stored = user ? await deps.credentials.passwordHash(user.id) : null;
    const matches = await verifyPassword(
      password,
      stored ?? (await (decoy ??= hashPassword(randomBase62(20)))),
    );
    return user && stored && matches ? user : null;
  }

  async function openSession(userId: string): Promise<Extract<SignInOutcome, { kind: 'signed_in' }>> {
    const { secret, hash } = generateSecret(SESSION_PREFIX);
    const now = deps.clock.now();
    const session: WebSessionRecord = {
      id: hash,
      user_id: userId,
      csrf_token: randomBase62(32),
      created_at: new Date(now),
      expires_at: new Date(now + SESSION_TTL_MS),
    };
    await deps.sessions.create(session);
    return { kind: 'signed_in', cookie: secret, session };
  }

  /** The link's record when it can still be used. */
  async function usableLink(token: string) {
    if (!SIGN_IN_LINK.test(token)) return null;
    const link = await deps.sessions.getSignInLink(hashSecret(token));
    return link && !link.spent_at && link.expires_at.getTime() > deps.clock.now() ? link : null;
  }

  return {
    openSession,

    async createSignInLink(userId) {
      if (!(await deps.users.get(userId))) throw new AppError('not_found', 'User not found');
      const { secret, hash } = generateSecret(SIGN_IN_LINK_PREFIX);
      const expiresAt = new Date(deps.clock.now() + SIGN_IN_LINK_TTL_MS);
      await deps.sessions.createSignInLink({
        id: hash,
        user_id: userId,
        expires_at: expiresAt,
        spent_at: null,
      });
      return { token: secret, expires_at: expiresAt.toISOString() };
    },

    async linkUser(token) {
      const link = await usableLink(token);
      return link ? deps.users.get(link.user_id) : null;
    },

    async signInWithLink(token) {
      const link = await usableLink(token);
      if (!link || !(await deps.sessions.spendSignInLink(link.id, new Date(deps.clock.now())))) {
        return { kind: 'invalid' };
      }
      return openSession(link.user_id);
    },

    async signIn(email, password, address) {
      const account = email.trim().toLowerCase();
      const attempt = deps.throttle.begin(address, account);
      if (attempt === 'busy') return { kind: 'busy' };
      let user: UserRecord | null = null;
      try {
        if (attempt.delayMs > 0) await sleep(attempt.delayMs);
        user = await passwordMatches(account, password);
      } finally {
        deps.throttle.end(address, account, user !== null);
      }
      if (!user) return { kind: 'invalid' };
      return openSession(user.id);
    },

    async resolve(cookie) {
      if (!cookie || !SESSION_COOKIE.test(cookie)) return null;
      const session = await deps.sessions.get(hashSecret(cookie));
      if (!session || session.expires_at.getTime() <= deps.clock.now()) return null;
      const user = await deps.users.get(session.user_id);
      return user ? { session, user } : null;
    },

    csrfMatches: (session, token) => token !== undefined && secretsEqual(session.csrf_token, token),

    async signOut(session) {
      await deps.sessions.delete(session.id);
      tokens.forgetSession(session.id);
    },

    async signOutEverywhere(userId) {
      await deps.sessions.deleteForUser(userId);
      tokens.forgetUser(userId);
      await deps.onSignOutEverywhere(userId);
    },

    issueToken: (session) => tokens.issueToken(session),
    authenticateToken: (token) => tokens.authenticateToken(token),
  };
}
