import { generateApiKey } from '../../src/accounts/api-key.ts';
import { newId } from '../../src/platform/core/ids.ts';
import type { Scope } from '../../schemas/scopes.ts';
import type { ApiKeyRecord } from '../../src/accounts/ports/api-keys-repository.ts';

/** A fresh API key and the record a repository would store for it (fixtures for tests below the HTTP API). */
export function keyFixture(
  scopes: Scope[],
  overrides: Partial<ApiKeyRecord> = {},
): { apiKey: string; record: ApiKeyRecord } {
  const { apiKey, hash, prefix } = generateApiKey();
  return {
    apiKey,
    record: {
      id: newId('key'),
      user_id: newId('usr'),
      name: 'test key',
      scopes,
      hash,
      prefix,
      created_at: new Date(),
      revoked_at: null,
      webhook: null,
      ...overrides,
    },
  };
}
