import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  createAuthenticator,
  INVALID_KEY,
  MISSING_AUTHORIZATION,
  type Authenticator,
} from '../../src/accounts/authenticator.ts';
import { createManualClock } from '../../src/platform/core/clock.ts';
import { keyFixture } from '../helpers/keys.ts';
import { generateApiKey } from '../../src/accounts/api-key.ts';
import { AppError } from '../../src/platform/core/errors.ts';
import type { ApiKeyRecord, ApiKeysRepository } from '../../src/accounts/ports/api-keys-repository.ts';

function fakeKeys() {
  const records = new Map<string, ApiKeyRecord>();
  let lookups = 0;
  let release: (() => void) | undefined;
  let gate: Promise<void> | undefined;
  const repo: Pick<ApiKeysRepository, 'findByHash'> = {
    async findByHash(hash) {
      lookups++;
      if (gate) await gate;
      return [...records.values()].find((r) => r.hash === hash) ?? null;
    },
  };
  return {
    repo: repo as ApiKeysRepository,
    add(scopes: ApiKeyRecord['scopes'] = ['models:read']) {
      const { apiKey, record } = keyFixture(scopes, { id: `key_${records.size}`, user_id: 'usr_1' });
      records.set(record.id, record);
      return { apiKey, record };
    },
    get lookups() {
      return lookups;
    },
    hold() {
      gate = new Promise((resolve) => (release = resolve));
    },
    release() {
      gate = undefined;
      release?.();
    },
  };
}

/** The principal as a promise, whether the authenticator answered from memory, after a lookup, or threw. */
const keyOf = (auth: Authenticator, header: string | undefined) =>
  Promise.resolve().then(() => auth.authenticateKey(header));

const rejectsWith = (promise: Promise<unknown>, message: string) =>
  assert.rejects(
    promise,
    (error: unknown) =>
      error instanceof AppError && error.code === 'unauthorized' && error.message === message,
  );

describe('authenticator', () => {
  it('answers the documented messages for a missing header and for malformed, unknown and revoked keys', async () => {
    const keys = fakeKeys();
    const auth = createAuthenticator({
      keys: keys.repo,
      adminToken: 'a'.repeat(20),
      clock: createManualClock(),
    });
    await rejectsWith(keyOf(auth, undefined), MISSING_AUTHORIZATION);
    await rejectsWith(keyOf(auth, '  '), MISSING_AUTHORIZATION);
    await rejectsWith(keyOf(auth, 'Bearer mf_short'), INVALID_KEY);
    await rejectsWith(keyOf(auth, `Basic ${generateApiKey().apiKey}`), INVALID_KEY);
    await rejectsWith(keyOf(auth, `Bearer ${generateApiKey().apiKey}`), INVALID_KEY);
    const { apiKey, record } = keys.add();
    record.revoked_at = new Date();
    await rejectsWith(keyOf(auth, `Bearer ${apiKey}`), INVALID_KEY);
    assert.equal(keys.lookups, 2, 'malformed keys are refused without a lookup');
  });

  it('serves a key from memory, and shares one lookup among concurrent first requests', async () => {
    const keys = fakeKeys();
    const auth = createAuthenticator({
      keys: keys.repo,
      adminToken: 'a'.repeat(20),
      clock: createManualClock(),
    });
    const { apiKey } = keys.add();
    keys.hold();
    const first = Array.from({ length: 20 }, () => keyOf(auth, `Bearer ${apiKey}`));
    keys.release();
    const principals = await Promise.all(first);
    assert.ok(principals.every((p) => p.keyId === 'key_0'));
    await keyOf(auth, `bearer ${apiKey}`);
    assert.equal(keys.lookups, 1);
    assert.equal(
      auth.authenticateKey(`Bearer ${apiKey}`) instanceof Promise,
      false,
      'a cached key answers synchronously',
    );
  });

  it('refreshes a busy key in the background without making requests wait, and sees a revocation', async () => {
    const keys = fakeKeys();
    const clock = createManualClock();
    const auth = createAuthenticator({ keys: keys.repo, adminToken: 'a'.repeat(20), clock });
    const { apiKey, record } = keys.add();
    await keyOf(auth, `Bearer ${apiKey}`);
    clock.advance(2500);
    keys.hold(); // the refresh is slow: requests are still answered from memory meanwhile
    const during = await Promise.all(Array.from({ length: 5 }, () => keyOf(auth, `Bearer ${apiKey}`)));
    assert.equal(during.length, 5);
    assert.equal(keys.lookups, 2, 'one background refresh, not one per request');
    record.revoked_at = new Date();
    keys.release();
    await new Promise((resolve) => setImmediate(resolve));
    await rejectsWith(keyOf(auth, `Bearer ${apiKey}`), INVALID_KEY);
  });

  it('forgets a revoked key at once on this node', async () => {
    const keys = fakeKeys();
    const auth = createAuthenticator({
      keys: keys.repo,
      adminToken: 'a'.repeat(20),
      clock: createManualClock(),
    });
    const { apiKey, record } = keys.add();
    await keyOf(auth, `Bearer ${apiKey}`);
    record.revoked_at = new Date();
    auth.forget(record.id);
    await rejectsWith(keyOf(auth, `Bearer ${apiKey}`), INVALID_KEY);
  });

  it('checks the admin token', () => {
    const auth = createAuthenticator({
      keys: fakeKeys().repo,
      adminToken: 'admin-token-123456',
      clock: createManualClock(),
    });
    auth.authenticateAdmin('Bearer admin-token-123456');
    assert.throws(() => auth.authenticateAdmin('Bearer admin-token-12345'), AppError);
    assert.throws(
      () => auth.authenticateAdmin(undefined),
      (e: unknown) => e instanceof AppError && e.message === MISSING_AUTHORIZATION,
    );
  });
});
