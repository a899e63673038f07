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
  /**
   * The op_id of the change this one gives back (a refund names its debit): applied only once that change is
   * in the ledger, so a refund can never hand out credits that were never taken.
   */
  reverses?: string;
}

export type CreditChangeResult =
  | { kind: 'applied'; entry: LedgerEntry; replayed: boolean }
  | { kind: 'insufficient'; credits_required: number; credits_remaining: number }
  | { kind: 'nothing_to_reverse'; credits_remaining: number }
  | { kind: 'no_user' };

/** The credit ledger (port): balance and entry change together, once per op_id. */
export interface CreditLedger {
  apply(change: CreditChange): Promise<CreditChangeResult>;
  entries(userId: string, limit: number): Promise<LedgerEntry[]>;
}
