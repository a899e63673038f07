/** A signed-in browser (docs/accounts.md). The cookie's secret is never stored: `id` is its SHA-256. */
export interface WebSessionRecord {
  id: string;
  user_id: string;
  /** Sent back in every state-changing form of this session (and, later, the session API's header). */
  csrf_token: string;
  created_at: Date;
  expires_at: Date;
}

/**
 * A short-lived bearer token a session hands its page for `/api/v1` and the events socket (docs/accounts.md).
 * `id` is the token's SHA-256; it ends with its session.
 */
export interface SessionTokenRecord {
  id: string;
  session_id: string;
  user_id: string;
  expires_at: Date;
}

/** A one-time sign-in link an operator made (docs/accounts.md). `id` is the link token's SHA-256. */
export interface SignInLinkRecord {
  id: string;
  user_id: string;
  expires_at: Date;
  spent_at: Date | null;
}

/**
 * Browser sessions storage (port): in MongoDB, so sessions survive restarts and work on every node. Deleting
 * sessions deletes their tokens.
 */
export interface WebSessionsRepository {
  create(session: WebSessionRecord): Promise<void>;
  /** The session, or null when there is none with this hash (expired ones are the caller's to refuse). */
  get(id: string): Promise<WebSessionRecord | null>;
  delete(id: string): Promise<void>;
  /** Deletes every session of the user (sign-out everywhere). */
  deleteForUser(userId: string): Promise<void>;
  createToken(token: SessionTokenRecord): Promise<void>;
  getToken(id: string): Promise<SessionTokenRecord | null>;
  createSignInLink(link: SignInLinkRecord): Promise<void>;
  getSignInLink(id: string): Promise<SignInLinkRecord | null>;
  /** Spends a link once (atomically): true when this call spent it. */
  spendSignInLink(id: string, at: Date): Promise<boolean>;
}
