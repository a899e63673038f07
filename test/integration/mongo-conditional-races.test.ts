// Spends that must have one winner, raced in pairs over the service's own pool of 50 connections, with each
// repository built as the service wires it (`…OnServer(connection.compat, …)`): an OAuth code, a refresh
// token and a sign-in link are spent by exactly one of two racing calls, and a key revoked twice at once
// keeps one revocation time. On jongodb, whose `findOneAndUpdate` on a state is not atomic across connections,
// the compatibility queues these calls per id; without it the code and token races have two winners there.
// On a real MongoDB (`MF_TEST_MONGO=container`) the repositories are used as they are.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connectMongo, type MongoConnection } from '../../src/platform/mongo/connect.ts';
import { createMongoOAuthStore, oauthStoreOnServer } from '../../src/accounts/mongo/oauth-store.ts';
import { createMongoWebSessions, webSessionsOnServer } from '../../src/accounts/mongo/web-sessions.ts';
import { apiKeysOnServer, createMongoApiKeys } from '../../src/accounts/mongo/api-keys.ts';
import type { OAuthStore } from '../../src/accounts/ports/oauth-store.ts';
import type { WebSessionsRepository } from '../../src/accounts/ports/web-sessions.ts';
import type { ApiKeysRepository } from '../../src/accounts/ports/api-keys-repository.ts';
import { useMongoClient } from '../helpers/mongo.ts';

const RACES = 200;
const now = new Date('2026-11-21T00:00:00Z');
const later = new Date(now.getTime() + 3_600_000);
const at = (ms: number) => new Date(now.getTime() + ms);

describe('conditional updates with one winner, as the service wires them', () => {
  const mongo = useMongoClient();
  let connection: MongoConnection;
  let oauth: OAuthStore;
  let sessions: WebSessionsRepository;
  let keys: ApiKeysRepository;

  before(async () => {
    connection = await connectMongo(mongo.uri, 'races'); // the service's client: a pool of 50
    const { db, compat } = connection;
    oauth = oauthStoreOnServer(compat, await createMongoOAuthStore(db));
    sessions = webSessionsOnServer(compat, await createMongoWebSessions(db));
    keys = apiKeysOnServer(compat, await createMongoApiKeys(db));
  });
  after(() => connection?.close());

  /** Runs `spend` twice at once for each of `RACES` fresh ids; answers how many races had not one winner. */
  async function racesWithoutOneWinner(
    make: (i: number) => Promise<string>,
    spend: (id: string, when: Date) => Promise<boolean>,
  ): Promise<number> {
    const ids = [];
    for (let i = 0; i < RACES; i++) ids.push(await make(i));
    const outcomes = await Promise.all(
      ids.map(async (id) => (await Promise.all([spend(id, at(1)), spend(id, at(2))])).filter(Boolean).length),
    );
    return outcomes.filter((winners) => winners !== 1).length;
  }

  it('spends an authorization code once', async () => {
    const bad = await racesWithoutOneWinner(
      async (i) => {
        const id = `code_${i}`;
        await oauth.saveCode({
          id,
          client_id: 'cli_1',
          user_id: 'usr_1',
          redirect_uri: 'https://client.test/cb',
          code_challenge: 'c',
          scopes: [],
          resource: 'https://mf.test/api/mcp',
          grant_id: `grt_${i}`,
          expires_at: later,
          spent_at: null,
        });
        return id;
      },
      async (id, when) => (await oauth.spendCode(id, when))?.first === true,
    );
    assert.equal(bad, 0, `${bad} of ${RACES} races had not exactly one winner`);
  });

  it('spends a refresh token once', async () => {
    const bad = await racesWithoutOneWinner(
      async (i) => {
        const id = `rt_${i}`;
        await oauth.saveTokens([
          {
            id,
            kind: 'refresh',
            grant_id: `grt_${i}`,
            user_id: 'usr_1',
            client_id: 'cli_1',
            scopes: [],
            resource: 'https://mf.test/api/mcp',
            expires_at: later,
            spent_at: null,
            revoked_at: null,
          },
        ]);
        return id;
      },
      async (id, when) => (await oauth.spendRefreshToken(id, when))?.first === true,
    );
    assert.equal(bad, 0, `${bad} of ${RACES} races had not exactly one winner`);
  });

  it('spends a sign-in link once', async () => {
    const bad = await racesWithoutOneWinner(
      async (i) => {
        const id = `link_${i}`;
        await sessions.createSignInLink({ id, user_id: 'usr_1', expires_at: later, spent_at: null });
        return id;
      },
      (id, when) => sessions.spendSignInLink(id, when),
    );
    assert.equal(bad, 0, `${bad} of ${RACES} races had not exactly one winner`);
  });

  it('keeps one revocation time when a key is revoked twice at once', async () => {
    let differing = 0;
    for (let i = 0; i < RACES; i++) {
      await keys.create({
        id: `key_${i}`,
        user_id: 'usr_1',
        name: 'k',
        scopes: [],
        hash: `hash_${i}`,
        prefix: 'sk_',
        created_at: now,
        revoked_at: null,
        webhook: null,
      });
    }
    await Promise.all(
      Array.from({ length: RACES }, async (_, i) => {
        const [a, b] = await Promise.all([keys.revoke(`key_${i}`, at(1)), keys.revoke(`key_${i}`, at(2))]);
        const stored = (await keys.get(`key_${i}`))?.revoked_at?.getTime();
        if (a?.revoked_at?.getTime() !== stored || b?.revoked_at?.getTime() !== stored) differing++;
      }),
    );
    assert.equal(differing, 0, `${differing} of ${RACES} keys answered another revocation time than stored`);
  });
});
