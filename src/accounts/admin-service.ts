import { randomBytes } from 'node:crypto';
import {
  AppError,
  newId,
  isNonPublicHost,
  type Clock,
  type AuditQuery,
  type AuditSink,
} from '../platform/index.ts';
import { generateApiKey } from './api-key.ts';
import { normaliseScopes, type Scope } from '../../schemas/scopes.ts';
import type { ApiKeyRecord, ApiKeysRepository } from './ports/api-keys-repository.ts';
import type { CreditLedger, LedgerEntry, UserCredits } from '../../actors/index.ts';
import type { UserRecord, UsersRepository } from './ports/users-repository.ts';
import type { UserCredentialsRepository } from './ports/user-credentials.ts';
import type { Authenticator } from './authenticator.ts';
import { hashPassword } from './passwords.ts';

/** The user shape of every admin answer. */
const publicUser = (user: UserRecord) => ({ id: user.id, email: user.email, credits: user.credits });

/** The key shape of every admin answer (never the hash, never the secret). */
const publicKey = (key: ApiKeyRecord) => ({
  id: key.id,
  name: key.name,
  scopes: key.scopes,
  prefix: key.prefix,
  created_at: key.created_at.toISOString(),
  revoked_at: key.revoked_at ? key.revoked_at.toISOString() : null,
});

const publicEntry = (entry: LedgerEntry) => ({
  id: entry.id,
  delta: entry.delta,
  balance_after: entry.balance_after,
  reason: entry.reason,
  op_id: entry.op_id,
  ...(entry.job_id ? { job_id: entry.job_id } : {}),
  created_at: entry.created_at.toISOString(),
});

/** A key's webhook deliveries (port: the webhooks slice keeps them). */
export interface KeyDeliveries {
  /** Drops the key's deliveries still waiting for an attempt. */
  dropPending(keyId: string, at: Date): Promise<unknown>;
  /** The key's deliveries with their attempts as the delivery log shows them, newest first. */
  listForKey(keyId: string, limit: number): Promise<readonly object[]>;
}

/** Operator use cases behind the admin API (docs/operator.md, Admin API). */
export function createAdminService(deps: {
  users: UsersRepository;
  keys: ApiKeysRepository;
  /** Credit changes go to the user actor, which orders them per user on every node. */
  credits: Pick<UserCredits, 'grant'>;
  /** Ledger reads go straight to storage. */
  ledger: Pick<CreditLedger, 'entries'>;
  credentials: Pick<UserCredentialsRepository, 'setPasswordHash'>;
  audit: AuditSink;
  auth: Pick<Authenticator, 'forget'>;
  /** Clearing a URL drops the key's pending deliveries; the deliveries route reads them. */
  deliveries: KeyDeliveries;
  clock: Clock;
  webhookAllowPrivate: boolean;
}) {
  const { users, keys, credits, ledger, clock } = deps;

  async function requireUser(userId: string): Promise<UserRecord> {
    const user = await users.get(userId);
    if (!user) throw new AppError('not_found', 'User not found');
    return user;
  }

  async function requireKey(keyId: string): Promise<ApiKeyRecord> {
    const key = await keys.get(keyId);
    if (!key) throw new AppError('not_found', 'API key not found');
    return key;
  }

  /** Sets a user's password (operators set it: docs/accounts.md); only its scrypt hash is stored. */
  async function setPassword(userId: string, password: string): Promise<{ ok: true }> {
    await requireUser(userId);
    await deps.credentials.setPasswordHash(userId, await hashPassword(password), new Date(clock.now()));
    return { ok: true };
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
    setPassword,
    /** Creates a user; an opening balance is a ledger grant like any other, so the ledger explains it. */
    async createUser(input: { email: string; credits: number }) {
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

    async getUser(userId: string) {
      return { user: publicUser(await requireUser(userId)) };
    },

    /** One page of users in creation order; the cursor is opaque to callers. */
    async listUsers(limit: number, cursor: string | undefined) {
      const after = cursor === undefined ? undefined : decodeCursor(cursor);
      const page = await users.list(limit + 1, after);
      const shown = page.slice(0, limit);
      const last = shown.at(-1);
      return {
        users: shown.map(publicUser),
        next_cursor: page.length > limit && last ? encodeCursor(last) : null,
      };
    },

    async grantCredits(userId: string, input: { amount: number; reason: string; op_id?: string }) {
      if (input.amount === 0) throw new AppError('bad_request', 'amount must be a non-zero integer');
      return changeCredits(userId, input.amount, input.reason, input.op_id ?? newId('op', 20));
    },

    async ledger(userId: string, limit = 1000) {
      await requireUser(userId);
      return { entries: (await ledger.entries(userId, limit)).map(publicEntry) };
    },

    async createKey(userId: string, input: { name: string; scopes: Scope[] }) {
      await requireUser(userId);
      const { apiKey, hash, prefix } = generateApiKey();
      const record: ApiKeyRecord = {
        id: newId('key'),
        user_id: userId,
        name: input.name,
        scopes: normaliseScopes(input.scopes),
        hash,
        prefix,
        created_at: new Date(clock.now()),
        revoked_at: null,
        webhook: null,
      };
      await keys.create(record);
      const { revoked_at: _revoked, ...shown } = publicKey(record);
      return { key: shown, api_key: apiKey };
    },

    async listKeys(userId: string) {
      await requireUser(userId);
      return { keys: (await keys.listForUser(userId)).map(publicKey) };
    },

    async revokeKey(keyId: string) {
      const key = await keys.revoke(keyId, new Date(clock.now()));
      if (!key) throw new AppError('not_found', 'API key not found');
      deps.auth.forget(keyId);
      return { id: key.id, revoked: true as const };
    },

    /** Sets the key's webhook URL; the signing secret is generated on first enablement and shown only then. */
    async setWebhook(keyId: string, input: string) {
      const key = await requireKey(keyId);
      const url = assertWebhookUrl(input, deps.webhookAllowPrivate);
      if (key.webhook) {
        await keys.setWebhook(keyId, { url, secret: key.webhook.secret });
        return { url };
      }
      const secret = `whsec_${randomBytes(32).toString('base64url')}`;
      await keys.setWebhook(keyId, { url, secret });
      return { url, secret };
    },

    async getWebhook(keyId: string) {
      const key = await requireKey(keyId);
      return { url: key.webhook?.url ?? null, enabled: key.webhook !== null };
    },

    /**
     * Clears URL and secret: the next PUT generates a new secret (docs/webhooks.md). Deliveries waiting for a
     * retry are dropped (an attempt already on its way still reads the URL first and finds none).
     */
    async clearWebhook(keyId: string) {
      await requireKey(keyId);
      await keys.setWebhook(keyId, null);
      await deps.deliveries.dropPending(keyId, new Date(clock.now()));
      return { cleared: true as const };
    },

    /** The key's deliveries with their attempts, newest first (each attempt is also in the audit log). */
    async listDeliveries(keyId: string, limit: number) {
      await requireKey(keyId);
      return { deliveries: await deps.deliveries.listForKey(keyId, limit) };
    },

    async readAudit(query: AuditQuery) {
      return { entries: await deps.audit.query(query) };
    },
  };
}

export type AdminService = ReturnType<typeof createAdminService>;

/**
 * A webhook URL: an absolute https URL (http only when private targets are allowed, i.e. in tests) whose host
 * is not a literal private or local address nor a special-use name (`localhost`, `*.local`, `*.internal`,
 * ...; docs/webhooks.md#the-url) unless private targets are allowed (other names that resolve there are
 * refused at delivery). Answers the URL as WHATWG parsing normalises it (`0x7f.0.0.1` → `127.0.0.1`,
 * `https:\\host\\` → `https://host/`): what is checked is exactly what is stored and called.
 */
export function assertWebhookUrl(raw: string, allowPrivate: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AppError('bad_request', 'url must be a https URL');
  }
  const schemeOk = url.protocol === 'https:' || (allowPrivate && url.protocol === 'http:');
  if (!schemeOk || !url.hostname || url.username || url.password) {
    throw new AppError('bad_request', 'url must be a https URL');
  }
  if (!allowPrivate && isNonPublicHost(url.hostname)) {
    throw new AppError('bad_request', 'url must not point to a private or local address');
  }
  return url.href;
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
