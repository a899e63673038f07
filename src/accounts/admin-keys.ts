import { randomBytes } from 'node:crypto';
import type { Static } from 'typebox';
import { AppError, newId, isNonPublicHost, type Clock } from '../platform/index.ts';
import { generateApiKey } from './api-key.ts';
import { normaliseScopes, type Scope } from '../../schemas/scopes.ts';
import type {
  CreatedKeyResponse,
  KeysResponse,
  RevokedKeyResponse,
  WebhookResponse,
  WebhookSetResponse,
} from '../../schemas/admin.ts';
import type { ApiKeyRecord, ApiKeysRepository } from './ports/api-keys-repository.ts';
import type { UsersRepository } from './ports/users-repository.ts';
import type { Authenticator } from './authenticator.ts';

/** The admin service's use cases about API keys and their webhooks. */
export interface AdminKeys {
  /** Creates an API key for an existing user; its secret is in this answer only. */
  createKey(
    userId: string,
    input: { name: string; scopes: Scope[] },
  ): Promise<Static<typeof CreatedKeyResponse>>;
  /** The user's keys, revoked ones included. */
  listKeys(userId: string): Promise<Static<typeof KeysResponse>>;
  /** Revokes a key and forgets its cached authentication at once. */
  revokeKey(keyId: string): Promise<Static<typeof RevokedKeyResponse>>;
  /** Sets the key's webhook URL; the signing secret is generated on first enablement and shown only then. */
  setWebhook(keyId: string, url: string): Promise<Static<typeof WebhookSetResponse>>;
  /** The key's webhook URL, and whether it is enabled. */
  getWebhook(keyId: string): Promise<Static<typeof WebhookResponse>>;
  /**
   * Clears URL and secret: the next PUT generates a new secret (docs/webhooks.md, rotating the secret). Deliveries waiting
   * for a retry are dropped (an attempt already on its way still reads the URL first and finds none).
   */
  clearWebhook(keyId: string): Promise<{ cleared: true }>;
  /** The key's deliveries with their attempts, newest first (each attempt is also in the audit log). */
  listDeliveries(keyId: string, limit: number): Promise<{ deliveries: readonly object[] }>;
}

/** A key's webhook deliveries (port: the webhooks slice keeps them). */
export interface KeyDeliveries {
  /** Drops the key's deliveries still waiting for an attempt. */
  dropPending(keyId: string, at: Date): Promise<unknown>;
  /** The key's deliveries with their attempts as the delivery log shows them, newest first. */
  listForKey(keyId: string, limit: number): Promise<readonly object[]>;
}

/** What the keys' part works with. */
export interface AdminKeysDeps {
  users: UsersRepository;
  keys: ApiKeysRepository;
  auth: Pick<Authenticator, 'forget'>;
  /** Clearing a URL drops the key's pending deliveries; the deliveries route reads them. */
  deliveries: KeyDeliveries;
  clock: Clock;
  webhookAllowPrivate: boolean;
}

/** The key shape of every admin answer (never the hash, never the secret). */
const publicKey = (key: ApiKeyRecord) => ({
  id: key.id,
  name: key.name,
  scopes: key.scopes,
  prefix: key.prefix,
  created_at: key.created_at.toISOString(),
  revoked_at: key.revoked_at ? key.revoked_at.toISOString() : null,
});

/** API keys (created for an existing user, revoked at once) and each key's webhook URL and deliveries. */
export function createAdminKeys(deps: AdminKeysDeps): AdminKeys {
  const { users, keys, clock } = deps;

  async function requireUser(userId: string): Promise<void> {
    if (!(await users.get(userId))) throw new AppError('not_found', 'User not found');
  }

  async function requireKey(keyId: string): Promise<ApiKeyRecord> {
    const key = await keys.get(keyId);
    if (!key) throw new AppError('not_found', 'API key not found');
    return key;
  }

  return {
    async createKey(userId, input) {
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

    async listKeys(userId) {
      await requireUser(userId);
      return { keys: (await keys.listForUser(userId)).map(publicKey) };
    },

    async revokeKey(keyId) {
      const key = await keys.revoke(keyId, new Date(clock.now()));
      if (!key) throw new AppError('not_found', 'API key not found');
      deps.auth.forget(keyId);
      return { id: key.id, revoked: true as const };
    },

    async setWebhook(keyId, input) {
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

    async getWebhook(keyId) {
      const key = await requireKey(keyId);
      return { url: key.webhook?.url ?? null, enabled: key.webhook !== null };
    },

    async clearWebhook(keyId) {
      await requireKey(keyId);
      await keys.setWebhook(keyId, null);
      await deps.deliveries.dropPending(keyId, new Date(clock.now()));
      return { cleared: true as const };
    },

    async listDeliveries(keyId, limit) {
      await requireKey(keyId);
      return { deliveries: await deps.deliveries.listForKey(keyId, limit) };
    },
  };
}

/**
 * A webhook URL must be an absolute https URL (http only when private targets are allowed, i.e. in tests) whose host
 * is not a literal private or local address nor a special-use name (`localhost`, `*.local`, `*.internal`, ...;
 * docs/webhooks.md#the-url) unless private targets are allowed (other names that resolve there are refused at
 * delivery). Answers the URL as WHATWG parsing normalises it (`0x7f.0.0.1` →
 * `127.0.0.1`, `https:\\host\\` → `https://host/`): what is checked is exactly what is stored and called.
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
