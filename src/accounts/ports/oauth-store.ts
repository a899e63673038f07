import type { Scope } from '../../../schemas/scopes.ts';

/** A client registered dynamically (RFC 7591); every client is public (PKCE, no secret). */
export interface OAuthClientRecord {
  id: string;
  name: string;
  redirect_uris: string[];
  created_at: Date;
}

/** What a user approved on the consent page, waiting to be exchanged once. `id` is the code's SHA-256. */
export interface AuthorizationCodeRecord {
  id: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  code_challenge: string;
  scopes: Scope[];
  resource: string;
  /** The grant the exchange creates, chosen now so that a replayed code can revoke it. */
  grant_id: string;
  expires_at: Date;
  spent_at: Date | null;
}

/** One approval and the family of tokens it issued; revoking it ends them all. */
export interface OAuthGrantRecord {
  id: string;
  user_id: string;
  client_id: string;
  scopes: Scope[];
  resource: string;
  created_at: Date;
  revoked_at: Date | null;
}

/**
 * An access or refresh token of a grant. `id` is the token's SHA-256. It carries what authenticating it needs
 * (one lookup per request); revoking the grant revokes its tokens too.
 */
export interface OAuthTokenRecord {
  id: string;
  kind: 'access' | 'refresh';
  grant_id: string;
  user_id: string;
  client_id: string;
  scopes: Scope[];
  resource: string;
  expires_at: Date;
  /** A refresh token is spent by its one rotation. */
  spent_at: Date | null;
  revoked_at: Date | null;
}

/** The authorization server's storage (port). Conditional updates are atomic: a code or token is spent once. */
export interface OAuthStore {
  createClient(client: OAuthClientRecord): Promise<void>;
  getClient(id: string): Promise<OAuthClientRecord | null>;

  saveCode(code: AuthorizationCodeRecord): Promise<void>;
  /** Spends a code: the record and whether this call spent it (false: it had been spent before), or null. */
  spendCode(id: string, at: Date): Promise<{ code: AuthorizationCodeRecord; first: boolean } | null>;

  createGrant(grant: OAuthGrantRecord): Promise<void>;
  getGrant(id: string): Promise<OAuthGrantRecord | null>;
  /** Revokes the grant and every token it issued. */
  revokeGrant(id: string, at: Date): Promise<void>;
  /** Revokes every grant of the user with their tokens, and drops the user's unspent codes. */
  revokeUserGrants(userId: string, at: Date): Promise<void>;

  saveTokens(tokens: OAuthTokenRecord[]): Promise<void>;
  getToken(id: string): Promise<OAuthTokenRecord | null>;
  /** Spends a refresh token: the record and whether this call spent it, or null when there is none. */
  spendRefreshToken(id: string, at: Date): Promise<{ token: OAuthTokenRecord; first: boolean } | null>;
  /** Revokes one token. */
  revokeToken(id: string, at: Date): Promise<void>;
}
