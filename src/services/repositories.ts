import type { Scope } from '../domain/scopes.ts';

/** A user account as stored. */
export interface UserRecord {
  id: string;
  email: string;
  credits: number;
  created_at: Date;
}

/** An API key as stored: never the key itself, only its hash and display prefix. */
export interface ApiKeyRecord {
  id: string;
  user_id: string;
  name: string;
  scopes: Scope[];
  hash: string;
  prefix: string;
  created_at: Date;
  revoked_at: Date | null;
  webhook: { url: string; secret: string } | null;
}

/** One credit change, as the ledger keeps it. */
export interface LedgerEntry {
  id: string;
  user_id: string;
  op_id: string;
  seq: number;
  delta: number;
  balance_after: number;
  reason: string;
  job_id?: string;
  created_at: Date;
}

/** A credit change request: applied at most once per (user, op_id). */
export interface CreditChange {
  userId: string;
  opId: string;
  delta: number;
  reason: string;
  jobId?: string;
}

export type CreditChangeResult =
  | { kind: 'applied'; entry: LedgerEntry; replayed: boolean }
  | { kind: 'insufficient'; credits_required: number; credits_remaining: number }
  | { kind: 'no_user' };

/** Users storage (port). */
export interface UsersRepository {
  create(user: UserRecord): Promise<'created' | 'email_taken'>;
  get(id: string): Promise<UserRecord | null>;
  /** A page ordered by creation; `after` is the last user of the previous page. */
  list(limit: number, after?: { created_at: Date; id: string }): Promise<UserRecord[]>;
}

/** API keys storage (port). */
export interface ApiKeysRepository {
  create(key: ApiKeyRecord): Promise<void>;
  get(id: string): Promise<ApiKeyRecord | null>;
  findByHash(hash: string): Promise<ApiKeyRecord | null>;
  listForUser(userId: string): Promise<ApiKeyRecord[]>;
  revoke(id: string, at: Date): Promise<ApiKeyRecord | null>;
  setWebhook(id: string, webhook: { url: string; secret: string } | null): Promise<void>;
}

/** The credit ledger (port): balance and entry change together, once per op_id. */
export interface CreditLedger {
  apply(change: CreditChange): Promise<CreditChangeResult>;
  entries(userId: string, limit: number): Promise<LedgerEntry[]>;
}
