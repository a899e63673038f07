import type { Scope } from '../../../schemas/scopes.ts';

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

/** API keys storage (port). */
export interface ApiKeysRepository {
  create(key: ApiKeyRecord): Promise<void>;
  get(id: string): Promise<ApiKeyRecord | null>;
  findByHash(hash: string): Promise<ApiKeyRecord | null>;
  listForUser(userId: string): Promise<ApiKeyRecord[]>;
  revoke(id: string, at: Date): Promise<ApiKeyRecord | null>;
  setWebhook(id: string, webhook: { url: string; secret: string } | null): Promise<void>;
}
