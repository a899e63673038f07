import type { Static } from 'typebox';
import { AppError, newId, type Clock } from '../platform/index.ts';
import type { CreditLedger, LedgerEntry, UserCredits } from '../../actors/index.ts';
import type {
  CreditBalanceResponse,
  LedgerResponse,
  OkResponse,
  UserResponse,
  UsersPageResponse,
} from '../../schemas/admin.ts';
import type { UserRecord, UsersRepository } from './ports/users-repository.ts';
import type { UserCredentialsRepository } from './ports/user-credentials.ts';
import { hashPassword } from './passwords.ts';

/** The admin service's use cases about users: accounts, passwords and credits. */
export interface AdminUsers {
  /** Creates a user; an opening balance is a ledger grant like any other, so the ledger explains it. */
  createUser(input: { email: string; credits: number }): Promise<Static<typeof UserResponse>>;
  /** One user, or 404. */
  getUser(userId: string): Promise<Static<typeof UserResponse>>;
  /** One page of users in creation order; the cursor is opaque to callers. */
  listUsers(limit: number, cursor: string | undefined): Promise<Static<typeof UsersPageResponse>>;
  /** Sets a user's password (operators set it: docs/accounts.md); only its scrypt hash is stored. */
  setPassword(userId: string, password: string): Promise<Static<typeof OkResponse>>;
  /** Grants (or, negative, takes back) credits through the user's actor, at most once per `op_id`. */
  grantCredits(
    userId: string,
    input: { amount: number; reason: string; op_id?: string },
  ): Promise<Static<typeof CreditBalanceResponse>>;
  /** The user's ledger entries (at most `limit`). */
  ledger(userId: string, limit?: number): Promise<Static<typeof LedgerResponse>>;
}

/** What the users' part works with. */
export interface AdminUsersDeps {
  users: UsersRepository;
  /** Credit changes go to the user actor, which orders them per user on every node. */
  credits: Pick<UserCredits, 'grant'>;
  /** Ledger reads go straight to storage. */
  ledger: Pick<CreditLedger, 'entries'>;
  credentials: Pick<UserCredentialsRepository, 'setPasswordHash'>;
  clock: Clock;
}

/** The user shape of every admin answer. */
const publicUser = (user: UserRecord) => ({ id: user.id, email: user.email, credits: user.credits });

const publicEntry = (entry: LedgerEntry) => ({
  id: entry.id,
  delta: entry.delta,
  balance_after: entry.balance_after,
  reason: entry.reason,
  op_id: entry.op_id,
  ...(entry.job_id ? { job_id: entry.job_id } : {}),
  created_at: entry.created_at.toISOString(),
});

/** Users, their passwords and their credits (changes through the user's actor, reads from the ledger). */
export function createAdminUsers(deps: AdminUsersDeps): AdminUsers {
  const { users, credits, ledger, clock } = deps;

  async function requireUser(userId: string): Promise<UserRecord> {
    const user = await users.get(userId);
    if (!user) throw new AppError('not_found', 'User not found');
    return user;
  }

  async function changeCredits(userId: string, amount: number, reason: string, opId: string) {
    const result = await credits.grant(userId, { op_id: opId, amount, reason }); // 404 for an unknown user
    if (!result.ok) {
      throw new AppError('insufficient_credits', 'Insufficient credits', {
        credits_required: result.credits_required,
        credits_remaining: result.credits_remaining,
      });
    }
    return { user_id: userId, credits: result.credits_remaining };
  }

  return {
    async setPassword(userId, password) {
      await requireUser(userId);
      await deps.credentials.setPasswordHash(userId, await hashPassword(password), new Date(clock.now()));
      return { ok: true };
    },

    async createUser(input) {
      const user: UserRecord = {
        id: newId('usr'),
        email: input.email.toLowerCase(),
        credits: 0,
        created_at: new Date(clock.now()),
      };
      if ((await users.create(user)) === 'email_taken') {
        throw new AppError('conflict', 'A user with this email already exists');
      }
      if (input.credits > 0) await changeCredits(user.id, input.credits, 'initial_grant', 'initial_grant');
      return { user: publicUser({ ...user, credits: input.credits }) };
    },

    async getUser(userId) {
      return { user: publicUser(await requireUser(userId)) };
    },

    async listUsers(limit, cursor) {
      const after = cursor === undefined ? undefined : decodeCursor(cursor);
      const page = await users.list(limit + 1, after);
      const shown = page.slice(0, limit);
      const last = shown.at(-1);
      return {
        users: shown.map(publicUser),
        next_cursor: page.length > limit && last ? encodeCursor(last) : null,
      };
    },

    async grantCredits(userId, input) {
      if (input.amount === 0) throw new AppError('bad_request', 'amount must be a non-zero integer');
      return changeCredits(userId, input.amount, input.reason, input.op_id ?? newId('op', 20));
    },

    async ledger(userId, limit = 1000) {
      await requireUser(userId);
      return { entries: (await ledger.entries(userId, limit)).map(publicEntry) };
    },
  };
}

function encodeCursor(user: UserRecord): string {
  return Buffer.from(JSON.stringify([user.created_at.getTime(), user.id])).toString('base64url');
}

function decodeCursor(cursor: string): { created_at: Date; id: string } {
  try {
    const [ms, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof ms === 'number' && typeof id === 'string') return { created_at: new Date(ms), id };
  } catch {
    // fall through to the 400 below
  }
  throw new AppError('bad_request', 'cursor is invalid');
}
