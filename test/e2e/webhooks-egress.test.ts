// Webhook egress end to end, with private targets NOT allowed (the production default): the service as a
// process whose DNS answers for one name rebind from a public address to loopback (a test-only preload,
// test/helpers/rebinding-dns.preload.mjs). Every attempt resolves the name once, checks the address and
// connects to that address, so the loopback listener on the same port never sees a connection; the attempts
// are refused, retried and recorded like any other failure.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, adminClient, type RunningService } from '../helpers/service.ts';
import { jobsClient } from '../helpers/jobs.ts';

const REBIND_NAME = 'rebind.mediaforge.test';
const PRELOAD = fileURLToPath(new URL('../helpers/rebinding-dns.preload.mjs', import.meta.url));

interface Delivery {
  job_id: string;
  state: string;
  attempts: Array<{ attempt: number; status: number | null; error: string | null }>;
}

describe('webhook egress guard (private targets not allowed)', () => {
  let mongo: TestMongo;
  let service: RunningService;
  let loopback: net.Server;
  let port: number;
  let connections = 0;
  const jobs = jobsClient(() => service);

  before(async () => {
    // What an attacker wants to reach: anything on loopback. Counts every connection, TLS or not.
    loopback = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => loopback.listen(0, '127.0.0.1', resolve));
    port = (loopback.address() as AddressInfo).port;
    mongo = await startMongo();
    service = await startService({
      MONGO_URL: mongo.uri,
      NODE_OPTIONS: `--import ${PRELOAD}`,
      MF_TEST_REBIND_NAME: REBIND_NAME,
      WEBHOOK_RETRY_DELAYS_MS: '300,300,300',
      WEBHOOK_TIMEOUT_MS: '1000',
      SANDBOX_IMAGE_MS: '200',
      PROVIDER_POLL_INTERVAL_MS: '100',
    });
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
    await new Promise<void>((resolve) => loopback.close(() => resolve()));
  });

  it('never reaches loopback through a name that rebinds to it between attempts', async () => {
    const admin = adminClient(service);
    const key = await admin.createKey(await admin.createUser('egress@example.com', 1000), ['image:write']);
    const hook = `https://${REBIND_NAME}:${port}/hook`;
    const set = await admin.call<{ url: string; secret?: string }>('PUT', `/keys/${key.id}/webhook`, {
      url: hook,
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));

    const submitted = await jobs.submitImage(key.apiKey, { prompt: 'a rebinding fox' });
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    const jobId = submitted.body.job_id as string;
    assert.equal((await jobs.waitForEnd(key.apiKey, jobId)).status, 'completed');

    let delivery: Delivery | undefined;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const answer = await admin.call<{ deliveries: Delivery[] }>('GET', `/keys/${key.id}/deliveries`);
      delivery = answer.body.deliveries.find((d) => d.job_id === jobId);
      if (delivery && delivery.state !== 'pending') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(delivery?.state, 'failed', JSON.stringify(delivery));
    assert.equal(delivery.attempts.length, 4, 'every attempt failed and was retried, then it gave up');
    assert.ok(
      delivery.attempts.every((attempt) => attempt.status === null && attempt.error),
      JSON.stringify(delivery.attempts),
    );
    // The first lookup gave the public address (unreachable here); every later one gave loopback, refused.
    for (const attempt of delivery.attempts.slice(1)) {
      assert.match(attempt.error!, /address/i, `attempt ${attempt.attempt}: ${attempt.error}`);
    }
    assert.equal(connections, 0, 'loopback was never reached');
    // The audit log is written in batches (up to 250 ms later): wait for the fourth entry.
    let audited = 0;
    for (const stop = Date.now() + 5000; audited < 4 && Date.now() < stop;) {
      const audit = await admin.call<{ entries: Array<{ job_id?: string }> }>(
        'GET',
        `/audit?kind=webhook_attempt&key_id=${key.id}`,
      );
      audited = audit.body.entries.filter((entry) => entry.job_id === jobId).length;
      if (audited < 4) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(audited, 4, 'every attempt is in the audit log');
  });

  it('refuses at configuration a webhook URL that is not https', async () => {
    const admin = adminClient(service);
    const key = await admin.createKey(await admin.createUser('egress-http@example.com'), ['image:write']);
    const answer = await admin.call('PUT', `/keys/${key.id}/webhook`, {
      url: `http://127.0.0.1:${port}/hook`,
    });
    assert.deepEqual([answer.status, answer.body], [400, { error: 'url must be a https URL' }]);
  });
});
