/** A user account as stored. */
export interface UserRecord {
  id: string;
  email: string;
  credits: number;
  created_at: Date;
}

/** Users storage (port). */
export interface UsersRepository {
  create(user: UserRecord): Promise<'created' | 'email_taken'>;
  get(id: string): Promise<UserRecord | null>;
  /** The user with this email (stored lower-cased), or null. */
  findByEmail(email: string): Promise<UserRecord | null>;
  /** A page ordered by creation; `after` is the last user of the previous page. */
  list(limit: number, after?: { created_at: Date; id: string }): Promise<UserRecord[]>;
}
