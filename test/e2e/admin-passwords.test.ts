// Operators set a user's password (docs/accounts.md, Passwords): POST /api/admin/v1/users/<id>/password { password } → { ok }.
// Only a scrypt hash is stored, apart from the user document; the password reaches no log line and no audit
// entry. The service runs as a process at debug level.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import {
  startService,
  call,
  adminClient,
  TEST_ADMIN_TOKEN,
  type RunningService,
} from '../helpers/service.ts';
import { verifyPassword } from '../../src/accounts/passwords.ts';

const DB = 'admin_passwords';
const PASSWORD = 'a long and secret passphrase 7';

describe('POST /api/admin/v1/users/<id>/password', () => {
  let mongo: TestMongo;
  let service: RunningService;
  let userId: string;
  before(async () => {
    mongo = await startMongo();
    service = await startService({ MONGO_URL: mongo.uri, MONGO_DB: DB, LOG_LEVEL: 'debug' });
    userId = await adminClient(service).createUser('pw@example.com', 7);
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  /** `token: null` sends no Authorization header. */
  const setPassword = (id: string, body: unknown, token: string | null = TEST_ADMIN_TOKEN) =>
    call(service.url, 'POST', `/api/admin/v1/users/${id}/password`, { ...(token ? { token } : {}), body });

  async function storedHash(id: string): Promise<string | undefined> {
    const client = new MongoClient(mongo.uri);
    try {
      const doc = await client
        .db(DB)
        .collection('user_credentials')
        .findOne({ _id: id as never });
      return doc?.password_hash as string | undefined;
    } finally {
      await client.close();
    }
  }

  it('stores a scrypt hash of the password, apart from the user, and answers { ok: true }', async () => {
    const answer = await setPassword(userId, { password: PASSWORD });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.deepEqual(answer.body, { ok: true });
    const hash = await storedHash(userId);
    assert.match(hash ?? '', /^scrypt\$/);
    assert.equal(await verifyPassword(PASSWORD, hash!), true);
    const user = await adminClient(service).call<{ user: { credits: number } }>('GET', `/users/${userId}`);
    assert.equal(user.body.user.credits, 7, 'the user document is untouched');
    assert.ok(!JSON.stringify(user.body).includes('scrypt'), 'the hash is never answered');
    // A second password replaces the first.
    assert.equal((await setPassword(userId, { password: `${PASSWORD}!` })).status, 200);
    const replaced = await storedHash(userId);
    assert.equal(await verifyPassword(`${PASSWORD}!`, replaced!), true);
    assert.equal(await verifyPassword(PASSWORD, replaced!), false);
  });

  it('refuses a short, missing or non-string password (400), an unknown user (404), a caller without the admin token (401)', async () => {
    const short = await setPassword(userId, { password: 'short' });
    assert.equal(short.status, 400);
    assert.deepEqual(short.body, { error: 'password must be at least 10 characters' });
    const long = await setPassword(userId, { password: 'x'.repeat(1025) });
    assert.deepEqual([long.status, long.body], [400, { error: 'password must be at most 1024 characters' }]);
    for (const body of [{}, { password: 12345678901 }]) {
      const answer = await setPassword(userId, body);
      assert.equal(answer.status, 400, JSON.stringify(body));
    }
    const unknown = await setPassword('usr_doesnotexist000', { password: PASSWORD });
    assert.deepEqual([unknown.status, unknown.body], [404, { error: 'User not found' }]);
    assert.equal((await setPassword(userId, { password: PASSWORD }, null)).status, 401);
    assert.equal(
      (await setPassword(userId, { password: PASSWORD }, 'not-the-admin-token-at-all')).status,
      401,
    );
  });

  it('never writes the password to a log line or the audit log', async () => {
    await new Promise((resolve) => setTimeout(resolve, 300)); // the asynchronous log destination writes
    const output = service.lines.join('\n');
    assert.ok(output.includes('/password'), 'the requests were logged (debug)');
    assert.ok(!output.includes(PASSWORD), 'a password reached the logs');
    const audit = await adminClient(service).call<{ entries: unknown[] }>('GET', '/audit?limit=100');
    assert.equal(audit.status, 200);
    assert.ok(!JSON.stringify(audit.body).includes(PASSWORD), 'a password reached the audit log');
  });
});
