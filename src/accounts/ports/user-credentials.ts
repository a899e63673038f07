/**
 * Users' sign-in credentials (port; docs/accounts.md), kept apart from the user document, which the user
 * actor owns (its commits rewrite it): a password change never races a credit change.
 */
export interface UserCredentialsRepository {
  /** Stores the user's password hash (a `scrypt$…` string), replacing any earlier one. */
  setPasswordHash(userId: string, hash: string, at: Date): Promise<void>;
  /** The stored hash, or null when the user has no password. */
  passwordHash(userId: string): Promise<string | null>;
}
