import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, type RunningService, type ApiAnswer } from '../helpers/service.ts';

interface PublicUser {
  id: string;
  email: string;
  credits: number;
}

interface LedgerEntry {
  id: string;
  delta: number;
  balance_after: number;
  reason: string;
  job_id?: string;
  created_at: string;
}

interface PublicKey {
  id: string;
  name: string;
  scopes: string[];
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const API_KEY = /^mf_[0-9A-Za-z]{32,}$/;
const UNKNOWN_USER = 'usr_doesnotexist000';
const UNKNOWN_KEY = 'key_doesnotexist000';

let emailCounter = 0;
/** A fresh address per call, so tests never collide on the unique email index. */
const freshEmail = (tag: string) => `${tag}-${Date.now()}-${++emailCounter}@example.com`;

describe('admin API', () => {
  let mongo: TestMongo;
  let service: RunningService;
  let privateService: RunningService;
  let admin: ReturnType<typeof adminClient>;

  before(async () => {
    mongo = await startMongo();
    [service, privateService] = await Promise.all([
      startService({ MONGO_URL: mongo.uri, MONGO_DB: 'admin_api' }),
      startService({ MONGO_URL: mongo.uri, MONGO_DB: 'admin_api_private', WEBHOOK_ALLOW_PRIVATE: 'true' }),
    ]);
    admin = adminClient(service);
  });
  after(async () => {
    await Promise.all([service?.stop(), privateService?.stop()]);
    await mongo?.stop();
  });

  /** Sends a raw (non-JSON-encoded) body with the admin token. */
  const rawAdmin = (method: string, path: string, rawBody: string) =>
    call<{ error: string }>(service.url, method, `/api/admin/v1${path}`, {
      token: service.adminToken,
      rawBody,
      headers: { 'content-type': 'application/json' },
    });

  const createUser = async (tag: string, credits?: number): Promise<PublicUser> => {
    const answer = await admin.call<{ user: PublicUser }>('POST', '/users', {
      email: freshEmail(tag),
      ...(credits === undefined ? {} : { credits }),
    });
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    return answer.body.user;
  };

  const ledgerOf = async (userId: string): Promise<LedgerEntry[]> => {
    const answer = await admin.call<{ entries: LedgerEntry[] }>('GET', `/users/${userId}/ledger`);
    assert.equal(answer.status, 200);
    return answer.body.entries;
  };

  const assertError = (answer: ApiAnswer<{ error: string }>, status: number, message?: string) => {
    assert.equal(answer.status, status, JSON.stringify(answer.body));
    assert.equal(typeof answer.body.error, 'string');
    if (message !== undefined) assert.equal(answer.body.error, message);
  };

  describe('users', () => {
    it('creates a user with a lower-cased email and 0 credits by default', async () => {
      const email = `MiXeD.${freshEmail('Case')}`.replace('example.com', 'Example.COM');
      const answer = await admin.call<{ user: PublicUser }>('POST', '/users', { email });
      assert.equal(answer.status, 201);
      assert.deepEqual(Object.keys(answer.body), ['user']);
      assert.deepEqual(Object.keys(answer.body.user).sort(), ['credits', 'email', 'id']);
      assert.equal(answer.body.user.email, email.toLowerCase());
      assert.equal(answer.body.user.credits, 0);
      assert.equal(typeof answer.body.user.id, 'string');
      assert.ok(answer.body.user.id.length > 0);
    });

    it('creates a user with an opening balance', async () => {
      const user = await createUser('opening', 250);
      assert.equal(user.credits, 250);
    });

    it('reads a user back by id', async () => {
      const created = await createUser('read', 42);
      const answer = await admin.call<{ user: PublicUser }>('GET', `/users/${created.id}`);
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body, { user: created });
    });

    it('pages through users with limit and next_cursor, each seen once, in creation order', async () => {
      const created: PublicUser[] = [];
      for (let i = 0; i < 5; i++) created.push(await createUser(`page${i}`, i));
      const createdIds = created.map((u) => u.id);

      const seen: PublicUser[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = cursor === null ? '?limit=2' : `?limit=2&cursor=${encodeURIComponent(cursor)}`;
        const answer = await admin.call<{ users: PublicUser[]; next_cursor: string | null }>(
          'GET',
          `/users${query}`,
        );
        assert.equal(answer.status, 200);
        assert.deepEqual(Object.keys(answer.body).sort(), ['next_cursor', 'users']);
        assert.ok(answer.body.users.length <= 2);
        if (answer.body.next_cursor !== null) {
          assert.equal(typeof answer.body.next_cursor, 'string');
          assert.equal(answer.body.users.length, 2, 'a page with a next_cursor is full');
        }
        seen.push(...answer.body.users);
        cursor = answer.body.next_cursor;
        pages++;
        assert.ok(pages < 100, 'paging terminates');
      } while (cursor !== null);

      const seenIds = seen.map((u) => u.id);
      assert.equal(new Set(seenIds).size, seenIds.length, 'no user is listed twice');
      // Other tests create users in the same database; ours must appear once each, in creation order.
      assert.deepEqual(
        seenIds.filter((id) => createdIds.includes(id)),
        createdIds,
      );
      for (const user of created)
        assert.deepEqual(
          seen.find((u) => u.id === user.id),
          user,
        );
    });

    it('answers next_cursor null on the last page', async () => {
      const all = await admin.call<{ users: PublicUser[]; next_cursor: string | null }>(
        'GET',
        '/users?limit=1000',
      );
      assert.equal(all.status, 200);
      assert.equal(all.body.next_cursor, null);
      const total = all.body.users.length;
      assert.ok(total >= 1);
      const exact = await admin.call<{ users: PublicUser[]; next_cursor: string | null }>(
        'GET',
        `/users?limit=${total}`,
      );
      assert.equal(exact.body.users.length, total);
      assert.equal(
        exact.body.next_cursor,
        null,
        'a page that happens to hold the last user has no next page',
      );
    });

    it('answers 400 for a bad limit or cursor', async () => {
      for (const limit of ['0', '1001', 'x', '1.5']) {
        const answer = await admin.call<{ error: string }>('GET', `/users?limit=${limit}`);
        assertError(answer, 400, 'limit must be an integer from 1 to 1000');
      }
      assertError(
        await admin.call<{ error: string }>('GET', '/users?cursor=garbage'),
        400,
        'cursor is invalid',
      );
    });

    it('answers 409 for an existing email, also when it differs only by case', async () => {
      const email = freshEmail('dup');
      assert.equal((await admin.call('POST', '/users', { email })).status, 201);
      const again = await admin.call<{ error: string }>('POST', '/users', { email });
      assertError(again, 409);
      const upper = await admin.call<{ error: string }>('POST', '/users', { email: email.toUpperCase() });
      assertError(upper, 409);
    });

    it('answers 404 for an unknown user', async () => {
      assertError(await admin.call<{ error: string }>('GET', `/users/${UNKNOWN_USER}`), 404);
    });

    it('answers 400 for an invalid JSON body', async () => {
      assertError(await rawAdmin('POST', '/users', '{"email": '), 400, 'Invalid JSON body');
    });

    it('answers 400 for a body nested deeper than 64 levels, after Invalid JSON body, creating nothing', async () => {
      const email = freshEmail('deep');
      const arrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
      const objects = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
      for (const depth of [65, 2000, 10_000]) {
        for (const nested of [arrays(depth), objects(depth)]) {
          assertError(await rawAdmin('POST', '/users', nested), 400, 'Request body is nested too deeply');
          assertError(
            await rawAdmin('POST', '/users', `{"email":"${email}","credits":${nested}}`),
            400,
            'Request body is nested too deeply',
          );
        }
      }
      assertError(await rawAdmin('POST', '/users', '['.repeat(3000)), 400, 'Invalid JSON body');
      // 64 levels (the body object and 63 arrays) is within the limit: the body is judged as usual.
      assertError(
        await rawAdmin('POST', '/users', `{"email":"${email}","credits":${arrays(63)}}`),
        400,
        'credits must be an integer from 0 to 1000000000',
      );
      const listed = await admin.call<{ users: PublicUser[] }>('GET', '/users?limit=1000');
      assert.ok(!listed.body.users.some((user) => user.email === email), 'nothing was created');
    });

    it('answers 400 for a JSON body that is not an object', async () => {
      assertError(
        await rawAdmin('POST', '/users', '["a@example.com"]'),
        400,
        'Request body must be a JSON object',
      );
      assertError(
        await rawAdmin('POST', '/users', '"a@example.com"'),
        400,
        'Request body must be a JSON object',
      );
    });

    it('answers 400 for a bad email', async () => {
      for (const email of ['not-an-email', '', 'a b@example.com', 42]) {
        const answer = await admin.call<{ error: string }>('POST', '/users', { email });
        assertError(answer, 400, 'email must be a valid email address');
      }
      assertError(
        await admin.call<{ error: string }>('POST', '/users', {}),
        400,
        'email must be a valid email address',
      );
    });

    it('answers 400 for bad credits', async () => {
      for (const credits of [-1, 1.5, '10', 1_000_000_001]) {
        const answer = await admin.call<{ error: string }>('POST', '/users', {
          email: freshEmail('badcredits'),
          credits,
        });
        assertError(answer, 400, 'credits must be an integer from 0 to 1000000000');
      }
    });
  });

  describe('credits and ledger', () => {
    it('adds and takes back credits, answering the new balance', async () => {
      const user = await createUser('grant');
      const up = await admin.call('POST', `/users/${user.id}/credits`, { amount: 500 });
      assert.equal(up.status, 200);
      assert.deepEqual(up.body, { user_id: user.id, credits: 500 });
      const down = await admin.call('POST', `/users/${user.id}/credits`, {
        amount: -120,
        reason: 'correction',
      });
      assert.equal(down.status, 200);
      assert.deepEqual(down.body, { user_id: user.id, credits: 380 });
      const read = await admin.call<{ user: PublicUser }>('GET', `/users/${user.id}`);
      assert.equal(read.body.user.credits, 380);
    });

    it('applies a repeated op_id once and answers the first result', async () => {
      const user = await createUser('opid', 10);
      const first = await admin.call('POST', `/users/${user.id}/credits`, { amount: 100, op_id: 'topup-1' });
      assert.equal(first.status, 200);
      assert.deepEqual(first.body, { user_id: user.id, credits: 110 });
      const again = await admin.call('POST', `/users/${user.id}/credits`, { amount: 100, op_id: 'topup-1' });
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, first.body);
      // Even with a different amount, the op_id answers what it did the first time.
      const different = await admin.call('POST', `/users/${user.id}/credits`, {
        amount: 7,
        op_id: 'topup-1',
      });
      assert.deepEqual(different.body, first.body);

      const read = await admin.call<{ user: PublicUser }>('GET', `/users/${user.id}`);
      assert.equal(read.body.user.credits, 110);
      const entries = await ledgerOf(user.id);
      assert.equal(entries.filter((e) => e.delta === 100).length, 1, 'one ledger entry for the op_id');
      assert.equal(entries.length, 2, 'the initial grant and the one top-up');
    });

    it('answers 402 when the balance would go below 0 and changes nothing', async () => {
      const user = await createUser('insufficient', 30);
      const before = await ledgerOf(user.id);
      const answer = await admin.call<{ error: string; credits_required: number; credits_remaining: number }>(
        'POST',
        `/users/${user.id}/credits`,
        { amount: -31 },
      );
      assertError(answer, 402);
      assert.deepEqual(Object.keys(answer.body).sort(), ['credits_remaining', 'credits_required', 'error']);
      assert.equal(answer.body.credits_required, 31);
      assert.equal(answer.body.credits_remaining, 30);
      const read = await admin.call<{ user: PublicUser }>('GET', `/users/${user.id}`);
      assert.equal(read.body.user.credits, 30);
      assert.deepEqual(await ledgerOf(user.id), before);
      // Taking exactly the balance is allowed and leaves 0.
      const all = await admin.call('POST', `/users/${user.id}/credits`, { amount: -30 });
      assert.deepEqual(all.body, { user_id: user.id, credits: 0 });
    });

    it('lists the ledger newest first with a consistent balance_after chain, starting with the initial grant', async () => {
      const user = await createUser('ledger', 1000);
      for (const amount of [250, -400, 75]) {
        const answer = await admin.call('POST', `/users/${user.id}/credits`, {
          amount,
          reason: `change ${amount}`,
        });
        assert.equal(answer.status, 200);
      }
      const answer = await admin.call<{ entries: LedgerEntry[] }>('GET', `/users/${user.id}/ledger`);
      assert.equal(answer.status, 200);
      assert.deepEqual(Object.keys(answer.body), ['entries']);
      const entries = answer.body.entries;
      assert.deepEqual(
        entries.map((e) => e.delta),
        [75, -400, 250, 1000],
      );
      assert.deepEqual(
        entries.map((e) => e.reason),
        ['change 75', 'change -400', 'change 250', 'initial_grant'],
      );
      const oldestFirst = [...entries].reverse();
      let balance = 0;
      for (const entry of oldestFirst) {
        balance += entry.delta;
        assert.equal(entry.balance_after, balance, 'each balance_after = previous + delta');
        assert.equal(typeof entry.id, 'string');
        assert.match(entry.created_at, ISO);
        assert.equal(entry.job_id, undefined);
      }
      assert.equal(balance, 925);
      for (let i = 1; i < entries.length; i++) {
        assert.ok(entries[i - 1]!.created_at >= entries[i]!.created_at, 'newest first');
      }
      const read = await admin.call<{ user: PublicUser }>('GET', `/users/${user.id}`);
      assert.equal(read.body.user.credits, entries[0]!.balance_after);
    });

    it('keeps an empty ledger for a user created without credits', async () => {
      const user = await createUser('noledger');
      assert.deepEqual(await ledgerOf(user.id), []);
    });

    it('answers 400 for an amount of 0 or a non-integer amount', async () => {
      const user = await createUser('badamount', 10);
      for (const amount of [0, 1.5, '10', null]) {
        const answer = await admin.call<{ error: string }>('POST', `/users/${user.id}/credits`, { amount });
        assertError(answer, 400, 'amount must be a non-zero integer');
      }
      const missing = await admin.call<{ error: string }>('POST', `/users/${user.id}/credits`, {});
      assertError(missing, 400, 'amount must be a non-zero integer');
      assert.equal((await ledgerOf(user.id)).length, 1);
    });

    it('answers 400 for an invalid JSON or non-object credits body', async () => {
      const user = await createUser('badcreditsbody');
      assertError(
        await rawAdmin('POST', `/users/${user.id}/credits`, '{amount:1}'),
        400,
        'Invalid JSON body',
      );
      assertError(
        await rawAdmin('POST', `/users/${user.id}/credits`, '[1]'),
        400,
        'Request body must be a JSON object',
      );
    });

    it('answers 404 for credits and ledger of an unknown user', async () => {
      assertError(
        await admin.call<{ error: string }>('POST', `/users/${UNKNOWN_USER}/credits`, { amount: 5 }),
        404,
      );
      assertError(await admin.call<{ error: string }>('GET', `/users/${UNKNOWN_USER}/ledger`), 404);
    });
  });

  describe('credit ledger under concurrent requests', () => {
    // A service of its own: a stuck request here must not disturb the other tests' service.
    let raceService: RunningService;
    let raceAdmin: ReturnType<typeof adminClient>;
    before(async () => {
      raceService = await startService({ MONGO_URL: mongo.uri, MONGO_DB: 'admin_api_race' });
      raceAdmin = adminClient(raceService);
    });
    after(async () => {
      await raceService?.stop();
    });

    /** A credit grant that gives up after a few seconds (status 0), so a hung request fails the test quickly. */
    const grantWithin = async (userId: string, body: Record<string, unknown>): Promise<ApiAnswer> => {
      try {
        const response = await fetch(`${raceService.url}/api/admin/v1/users/${userId}/credits`, {
          method: 'POST',
          headers: { authorization: `Bearer ${raceService.adminToken}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(8_000),
        });
        return {
          status: response.status,
          headers: response.headers,
          body: (await response.json()) as Record<string, unknown>,
        };
      } catch (error) {
        return {
          status: 0,
          headers: new Headers(),
          body: { error: `no answer within 8 s: ${String(error)}` },
        };
      }
    };

    it('keeps the balance and the balance_after chain consistent under concurrent grants', async () => {
      const userId = await raceAdmin.createUser(freshEmail('concurrent'), 100);
      const amounts = [10, -5, 10, -5, 10, -5, 10, -5];
      const answers = await Promise.all(amounts.map((amount) => grantWithin(userId, { amount })));
      for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const read = await raceAdmin.call<{ user: PublicUser }>('GET', `/users/${userId}`);
      assert.equal(read.body.user.credits, 120, 'no change is lost');
      const ledger = await raceAdmin.call<{ entries: LedgerEntry[] }>('GET', `/users/${userId}/ledger`);
      const oldestFirst = [...ledger.body.entries].reverse();
      assert.equal(oldestFirst.length, 9);
      let balance = 0;
      for (const entry of oldestFirst) {
        balance += entry.delta;
        assert.equal(entry.balance_after, balance, 'each balance_after = previous + delta');
      }
      // Interleaved +10/-5 may legitimately pass through a balance twice; what matters is that each answer is
      // the balance its own ledger entry recorded.
      const answered = answers.map((a) => a.body.credits as number).sort((a, b) => a - b);
      const recorded = oldestFirst
        .slice(1)
        .map((entry) => entry.balance_after)
        .sort((a, b) => a - b);
      assert.deepEqual(answered, recorded);
    });

    it('applies an op_id once when the same grant is sent concurrently', async () => {
      const userId = await raceAdmin.createUser(freshEmail('opidrace'));
      const answers = await Promise.all(
        Array.from({ length: 4 }, () => grantWithin(userId, { amount: 40, op_id: 'race-1' })),
      );
      const serviceErrors = () => raceService.lines.filter((line) => line.includes('"level":50')).join('\n');
      for (const answer of answers) {
        assert.equal(answer.status, 200, `${JSON.stringify(answer.body)}\n${serviceErrors()}`);
        assert.deepEqual(answer.body, { user_id: userId, credits: 40 });
      }
      const ledger = await raceAdmin.call<{ entries: LedgerEntry[] }>('GET', `/users/${userId}/ledger`);
      assert.equal(ledger.body.entries.length, 1);
      const read = await raceAdmin.call<{ user: PublicUser }>('GET', `/users/${userId}`);
      assert.equal(read.body.user.credits, 40);
    });
  });

  describe('API keys', () => {
    it('creates a key shown once, with models:read added and a prefix that starts the key', async () => {
      const user = await createUser('key', 77);
      const answer = await admin.call<{ key: Omit<PublicKey, 'revoked_at'>; api_key: string }>(
        'POST',
        `/users/${user.id}/keys`,
        { name: 'ci', scopes: ['video:write'] },
      );
      assert.equal(answer.status, 201);
      assert.deepEqual(Object.keys(answer.body).sort(), ['api_key', 'key']);
      assert.deepEqual(Object.keys(answer.body.key).sort(), ['created_at', 'id', 'name', 'prefix', 'scopes']);
      const { key, api_key: apiKey } = answer.body;
      assert.match(apiKey, API_KEY);
      assert.equal(key.name, 'ci');
      assert.deepEqual([...key.scopes].sort(), ['models:read', 'video:write']);
      assert.ok(key.prefix.length > 0 && key.prefix.length < apiKey.length);
      assert.ok(apiKey.startsWith(key.prefix), 'prefix is the start of the key');
      assert.match(key.created_at, ISO);

      const account = await call(service.url, 'GET', '/api/v1/account', { token: apiKey });
      assert.equal(account.status, 200);
      assert.deepEqual(account.body, { user_id: user.id, credits: 77 });
    });

    it('adds models:read to a key created with no scopes, without duplicating it', async () => {
      const user = await createUser('keyscopes');
      const none = await admin.call<{ key: PublicKey }>('POST', `/users/${user.id}/keys`, { scopes: [] });
      assert.equal(none.status, 201);
      assert.deepEqual(none.body.key.scopes, ['models:read']);
      const twice = await admin.call<{ key: PublicKey }>('POST', `/users/${user.id}/keys`, {
        scopes: ['models:read', 'image:write', 'models:read'],
      });
      assert.equal(twice.status, 201);
      assert.deepEqual([...twice.body.key.scopes].sort(), ['image:write', 'models:read']);
    });

    it("lists a user's keys without the key or its hash", async () => {
      const user = await createUser('listkeys');
      const created = await admin.call<{ key: Omit<PublicKey, 'revoked_at'>; api_key: string }>(
        'POST',
        `/users/${user.id}/keys`,
        { name: 'listed', scopes: ['image:write'] },
      );
      const answer = await admin.call<{ keys: PublicKey[] }>('GET', `/users/${user.id}/keys`);
      assert.equal(answer.status, 200);
      assert.deepEqual(Object.keys(answer.body), ['keys']);
      assert.equal(answer.body.keys.length, 1);
      const [key] = answer.body.keys;
      assert.deepEqual(Object.keys(key!).sort(), [
        'created_at',
        'id',
        'name',
        'prefix',
        'revoked_at',
        'scopes',
      ]);
      assert.deepEqual(key, { ...created.body.key, revoked_at: null });
      const text = JSON.stringify(answer.body);
      assert.ok(!text.includes(created.body.api_key), 'the key is never listed');
      assert.ok(!/hash/i.test(text), 'no hash field');
    });

    it('revokes a key: 200 { id, revoked: true }, revoked_at set, and the key answers 401', async () => {
      const user = await createUser('revoke', 5);
      const key = await admin.createKey(user.id, ['video:write']);
      assert.equal((await call(service.url, 'GET', '/api/v1/account', { token: key.apiKey })).status, 200);

      const answer = await admin.call('DELETE', `/keys/${key.id}`);
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body, { id: key.id, revoked: true });

      const listed = await admin.call<{ keys: PublicKey[] }>('GET', `/users/${user.id}/keys`);
      const shown = listed.body.keys.find((k) => k.id === key.id);
      assert.ok(shown);
      assert.match(shown.revoked_at ?? '', ISO);

      const refused = await call<{ error: string }>(service.url, 'GET', '/api/v1/account', {
        token: key.apiKey,
      });
      assertError(refused, 401, 'Invalid or revoked API key');
    });

    it('answers 200 again when a revoked key is revoked twice, keeping the first revocation time', async () => {
      const user = await createUser('revoketwice');
      const key = await admin.createKey(user.id);
      assert.equal((await admin.call('DELETE', `/keys/${key.id}`)).status, 200);
      const first = await admin.call<{ keys: PublicKey[] }>('GET', `/users/${user.id}/keys`);
      const again = await admin.call('DELETE', `/keys/${key.id}`);
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, { id: key.id, revoked: true });
      const second = await admin.call<{ keys: PublicKey[] }>('GET', `/users/${user.id}/keys`);
      assert.deepEqual(second.body.keys, first.body.keys);
    });

    it('answers 400 for an unknown scope', async () => {
      const user = await createUser('badscope');
      const answer = await admin.call<{ error: string }>('POST', `/users/${user.id}/keys`, {
        scopes: ['admin:all'],
      });
      assertError(
        answer,
        400,
        'scopes must be an array of: models:read, video:write, image:write, video-editor:read, video-editor:write',
      );
      const notArray = await admin.call<{ error: string }>('POST', `/users/${user.id}/keys`, {
        scopes: 'video:write',
      });
      assertError(notArray, 400);
      const keys = await admin.call<{ keys: PublicKey[] }>('GET', `/users/${user.id}/keys`);
      assert.deepEqual(keys.body.keys, []);
    });

    it('answers 404 for the keys of an unknown user and for an unknown key', async () => {
      assertError(await admin.call<{ error: string }>('GET', `/users/${UNKNOWN_USER}/keys`), 404);
      assertError(
        await admin.call<{ error: string }>('POST', `/users/${UNKNOWN_USER}/keys`, { scopes: [] }),
        404,
      );
      assertError(await admin.call<{ error: string }>('DELETE', `/keys/${UNKNOWN_KEY}`), 404);
    });
  });

  describe('webhooks', () => {
    const keyForWebhook = async (tag: string) => {
      const user = await createUser(tag);
      return admin.createKey(user.id, ['video:write']);
    };

    it('generates a whsec_ secret on first enablement only, and never shows it again', async () => {
      const key = await keyForWebhook('hook');
      const first = await admin.call<{ url: string; secret?: string }>('PUT', `/keys/${key.id}/webhook`, {
        url: 'https://example.com/hook',
      });
      assert.equal(first.status, 200);
      assert.deepEqual(Object.keys(first.body).sort(), ['secret', 'url']);
      assert.equal(first.body.url, 'https://example.com/hook');
      assert.match(first.body.secret ?? '', /^whsec_.{16,}$/);

      const second = await admin.call<{ url: string; secret?: string }>('PUT', `/keys/${key.id}/webhook`, {
        url: 'https://example.com/other',
      });
      assert.equal(second.status, 200);
      assert.deepEqual(second.body, { url: 'https://example.com/other' });

      const read = await admin.call('GET', `/keys/${key.id}/webhook`);
      assert.equal(read.status, 200);
      assert.deepEqual(read.body, { url: 'https://example.com/other', enabled: true });
      assert.ok(!JSON.stringify(read.body).includes('whsec_'));
    });

    it('reads an unset webhook as { url: null, enabled: false }', async () => {
      const key = await keyForWebhook('nohook');
      const read = await admin.call('GET', `/keys/${key.id}/webhook`);
      assert.equal(read.status, 200);
      assert.deepEqual(read.body, { url: null, enabled: false });
    });

    it('rotates the secret: DELETE then PUT generates a new, different secret', async () => {
      const key = await keyForWebhook('rotate');
      const first = await admin.call<{ secret?: string }>('PUT', `/keys/${key.id}/webhook`, {
        url: 'https://example.com/hook',
      });
      assert.match(first.body.secret ?? '', /^whsec_/);

      const cleared = await admin.call('DELETE', `/keys/${key.id}/webhook`);
      assert.equal(cleared.status, 200);
      assert.deepEqual(cleared.body, { cleared: true });
      assert.deepEqual((await admin.call('GET', `/keys/${key.id}/webhook`)).body, {
        url: null,
        enabled: false,
      });

      const again = await admin.call<{ url: string; secret?: string }>('PUT', `/keys/${key.id}/webhook`, {
        url: 'https://example.com/hook',
      });
      assert.equal(again.status, 200);
      assert.match(again.body.secret ?? '', /^whsec_/);
      assert.notEqual(again.body.secret, first.body.secret);
    });

    it('answers 400 url must be a https URL for a non-https or unparsable URL', async () => {
      const key = await keyForWebhook('badurl');
      for (const url of ['ftp://x', 'not a url', 'http://example.com/hook', '', '/relative/hook', 42]) {
        const answer = await admin.call<{ error: string }>('PUT', `/keys/${key.id}/webhook`, { url });
        assertError(answer, 400, 'url must be a https URL');
      }
      assertError(
        await admin.call<{ error: string }>('PUT', `/keys/${key.id}/webhook`, {}),
        400,
        'url must be a https URL',
      );
      assert.deepEqual((await admin.call('GET', `/keys/${key.id}/webhook`)).body, {
        url: null,
        enabled: false,
      });
    });

    it('answers 400 url must not point to a private or local address for literal private hosts in any notation', async () => {
      const key = await keyForWebhook('privatehook');
      for (const url of [
        'https://127.0.0.1',
        'https://[::1]',
        'https://169.254.169.254',
        'https://10.0.0.1',
        'https://2130706433',
        'https://0x7f.0.0.1',
        'https://0177.0.0.1',
        'https://[::ffff:127.0.0.1]',
        'https://localhost',
        'https:\\\\127.0.0.1\\',
        'https://0.0.0.0:8443/hook',
        'https://[fe80::1]/hook',
        'https://192.168.1.20/hook',
      ]) {
        const answer = await admin.call<{ error: string }>('PUT', `/keys/${key.id}/webhook`, { url });
        assert.deepEqual(
          [answer.status, answer.body],
          [400, { error: 'url must not point to a private or local address' }],
          url,
        );
      }
      // The https rule comes first.
      assertError(
        await admin.call<{ error: string }>('PUT', `/keys/${key.id}/webhook`, {
          url: 'http://127.0.0.1/hook',
        }),
        400,
        'url must be a https URL',
      );
      // Nothing was stored, no secret was issued.
      assert.deepEqual((await admin.call('GET', `/keys/${key.id}/webhook`)).body, {
        url: null,
        enabled: false,
      });
    });

    it('stores the parsed, normalised URL and answers it on PUT and GET', async () => {
      const key = await keyForWebhook('normalhook');
      const set = await admin.call<{ url: string; secret?: string }>('PUT', `/keys/${key.id}/webhook`, {
        url: 'HTTPS://Hooks.EXAMPLE.com:443/a/../mediaforge?x=1',
      });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.equal(set.body.url, 'https://hooks.example.com/mediaforge?x=1');
      assert.deepEqual((await admin.call('GET', `/keys/${key.id}/webhook`)).body, {
        url: 'https://hooks.example.com/mediaforge?x=1',
        enabled: true,
      });
      const backslashes = await admin.call<{ url: string }>('PUT', `/keys/${key.id}/webhook`, {
        url: 'https:\\\\example.com\\hook',
      });
      assert.deepEqual([backslashes.status, backslashes.body], [200, { url: 'https://example.com/hook' }]);
    });

    it('answers 400 for an invalid JSON or non-object webhook body', async () => {
      const key = await keyForWebhook('badhookbody');
      assertError(
        await rawAdmin('PUT', `/keys/${key.id}/webhook`, 'https://example.com'),
        400,
        'Invalid JSON body',
      );
      assertError(
        await rawAdmin('PUT', `/keys/${key.id}/webhook`, '["https://example.com"]'),
        400,
        'Request body must be a JSON object',
      );
    });

    it('accepts an http URL only when the service runs with WEBHOOK_ALLOW_PRIVATE=true', async () => {
      const privateAdmin = adminClient(privateService);
      const user = await privateAdmin.createUser(freshEmail('private'));
      const key = await privateAdmin.createKey(user, ['video:write']);
      const answer = await privateAdmin.call<{ url: string; secret?: string }>(
        'PUT',
        `/keys/${key.id}/webhook`,
        {
          url: 'http://127.0.0.1:9/hook',
        },
      );
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.equal(answer.body.url, 'http://127.0.0.1:9/hook');
      assert.match(answer.body.secret ?? '', /^whsec_/);
      // Private and local hosts too, stored in their normalised form.
      for (const [url, stored] of [
        ['https://0x7f.0.0.1:9/hook', 'https://127.0.0.1:9/hook'],
        ['https://[::ffff:127.0.0.1]/', 'https://[::ffff:7f00:1]/'],
        ['https://localhost:9', 'https://localhost:9/'],
      ]) {
        const allowed = await privateAdmin.call<{ url: string }>('PUT', `/keys/${key.id}/webhook`, { url });
        assert.deepEqual([allowed.status, allowed.body], [200, { url: stored }], url);
      }
      // Other schemes stay refused even there.
      const ftp = await privateAdmin.call<{ error: string }>('PUT', `/keys/${key.id}/webhook`, {
        url: 'ftp://x',
      });
      assertError(ftp, 400, 'url must be a https URL');
      // The two services keep their own databases: the main one does not know this key.
      assertError(await admin.call<{ error: string }>('GET', `/keys/${key.id}/webhook`), 404);
    });

    it('answers 404 on every webhook route for an unknown key', async () => {
      const path = `/keys/${UNKNOWN_KEY}/webhook`;
      assertError(await admin.call<{ error: string }>('PUT', path, { url: 'https://example.com/hook' }), 404);
      assertError(await admin.call<{ error: string }>('GET', path), 404);
      assertError(await admin.call<{ error: string }>('DELETE', path), 404);
    });
  });

  describe('admin authentication', () => {
    const routes: Array<[string, string, unknown?]> = [
      ['POST', '/users', { email: 'noauth@example.com' }],
      ['GET', '/users'],
      ['GET', `/users/${UNKNOWN_USER}`],
      ['POST', `/users/${UNKNOWN_USER}/credits`, { amount: 1 }],
      ['GET', `/users/${UNKNOWN_USER}/ledger`],
      ['POST', `/users/${UNKNOWN_USER}/keys`, { scopes: [] }],
      ['GET', `/users/${UNKNOWN_USER}/keys`],
      ['DELETE', `/keys/${UNKNOWN_KEY}`],
      ['PUT', `/keys/${UNKNOWN_KEY}/webhook`, { url: 'https://example.com/hook' }],
      ['GET', `/keys/${UNKNOWN_KEY}/webhook`],
      ['DELETE', `/keys/${UNKNOWN_KEY}/webhook`],
      ['GET', '/audit'],
    ];

    it('answers 401 on every admin route without a token', async () => {
      for (const [method, path, body] of routes) {
        const answer = await call<{ error: string }>(service.url, method, `/api/admin/v1${path}`, { body });
        assertError(answer, 401);
        assert.equal(answer.body.error, 'Missing Authorization header', `${method} ${path}`);
      }
    });

    it('answers 401 on every admin route with a wrong token, and with an API key', async () => {
      const user = await createUser('apikeyasadmin');
      const key = await admin.createKey(user.id, ['video:write']);
      for (const token of ['wrong-token', `${service.adminToken}x`, key.apiKey]) {
        for (const [method, path, body] of routes) {
          const answer = await call<{ error: string }>(service.url, method, `/api/admin/v1${path}`, {
            token,
            body,
          });
          assertError(answer, 401);
        }
      }
      const listed = await admin.call<{ users: PublicUser[] }>('GET', '/users?limit=1000');
      assert.ok(!listed.body.users.some((u) => u.email === 'noauth@example.com'), 'nothing was created');
    });
  });
});
