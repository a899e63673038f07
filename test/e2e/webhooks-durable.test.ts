// Job webhooks that outlive the service: a real node:http receiver, the service as a process, and a MongoDB
// (and nats-server, in cluster mode) that outlive every service process. A delivery whose first attempt failed
// is retried, once, by the process started after the one that made the attempt (SIGTERM and SIGKILL, single
// node and cluster); two cluster nodes deliver each job exactly once; and 50 endpoints that hang until the
// time-out do not delay a healthy endpoint's delivery by more than 1 s.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startNats, skipWithoutNats, type TestNats } from '../helpers/nats.ts';
import { startService, call, type RunningService } from '../helpers/service.ts';
import { jobsClient, type Job } from '../helpers/jobs.ts';
import { startWebhookReceiver, type Decide, type ReceivedRequest } from '../helpers/webhook-receiver.ts';
import {
  assertBodyMatchesJob,
  assertSigned,
  bodyOf,
  hookedKeys,
  readDeliveries,
  readJob,
  sleep,
  submitImage as submit,
  until,
  type Delivery,
} from '../helpers/webhooks.ts';

/** The first attempt of each delivery answers 500, every later one 200. */
const failFirstAttempt: Decide = (req, earlier) =>
  earlier.some((e) => e.headers['x-svc-delivery-id'] === req.headers['x-svc-delivery-id']) ? 200 : 500;

/** The provider endpoint the sandbox serves image jobs on: the `model` of their webhook bodies. */
const IMAGE_ENDPOINT = 'fal-ai/nano-banana';

const EVENT_OF: Record<string, string> = {
  completed: 'job.completed',
  failed: 'job.failed',
  cancelled: 'job.cancelled',
};

// ---------------------------------------------------------------------------------------------------------

const RETRY_DELAY_MS = 2000;

/** Environment every service process of this file gets. */
const common = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  SANDBOX_IMAGE_MS: '200',
  PROVIDER_POLL_INTERVAL_MS: '100',
  RATE_LIMIT_PER_MINUTE: '1000000',
};

let mongo: TestMongo;
let dbNo = 0;
/** A database of its own for each scenario: what one scenario leaves pending never reaches the next. */
const freshDb = () => `mf_webhooks_${++dbNo}_${process.pid}`;

before(async () => {
  mongo = await startMongo();
});
after(async () => {
  await mongo?.stop();
});

/**
 * The restart scenario: a job completes, the receiver answers its first attempt 500; once the service has
 * recorded that attempt, `stop` ends every service process and `start` launches new ones on the same MongoDB
 * (and NATS); the retry arrives once, from the new ones, and nothing more after it.
 */
async function restartBetweenAttempts(
  start: (generation: number) => Promise<RunningService[]>,
  stop: (nodes: RunningService[]) => Promise<void>,
): Promise<RunningService[]> {
  const receiver = await startWebhookReceiver(failFirstAttempt);
  let nodes = await start(1);
  try {
    const [key] = await hookedKeys(nodes[0]!, 1, () => `${receiver.origin}/hooks/restart`);
    const jobId = await submit(nodes[0]!, key!.token, 'a lighthouse in the rain');
    const job = await jobsClient(() => nodes[0]!).waitForEnd(key!.token, jobId);
    assert.equal(job.status, 'completed', JSON.stringify(job));

    await receiver.waitFor(1, 15_000);
    // Between attempts: the service has recorded attempt 1 (500) and waits RETRY_DELAY_MS for the retry.
    const pending = await until(
      'attempt 1 recorded',
      () => readDeliveries(nodes[0]!, key!.keyId),
      (list) => list.length === 1 && list[0]!.attempts.length === 1,
    );
    assert.equal(pending[0]!.state, 'pending', JSON.stringify(pending));
    assert.equal(pending[0]!.attempts[0]!.status, 500);
    await sleep(200); // a little way into the retry delay, as a restart between attempts would come
    await stop(nodes);
    const stoppedAt = performance.now();
    // Otherwise the old processes made the retry, and the scenario did not happen.
    assert.equal(receiver.requests.length, 1, 'no retry before the stop');
    nodes = await start(2);

    const delivered = await until(
      'retry delivered by the new process',
      () => readDeliveries(nodes[0]!, key!.keyId),
      (list) => list[0]?.state === 'delivered',
      30_000,
    );
    // Longer than a retry delay: a duplicate (or a third attempt) would have arrived by now.
    await sleep(RETRY_DELAY_MS + 500); // a wait for nothing (see above)

    assert.equal(receiver.requests.length, 2, 'exactly two attempts in all');
    const [first, second] = receiver.requests as [ReceivedRequest, ReceivedRequest];
    assert.deepEqual([first.answer, second.answer], [500, 200]);
    assert.equal(second.headers['x-svc-delivery-id'], first.headers['x-svc-delivery-id']);
    assert.ok(second.body.equals(first.body), 'the retry sends the same body bytes');
    assert.ok(second.at > stoppedAt, 'the retry came from a process started after the stop');
    assert.ok(
      second.at - first.at >= RETRY_DELAY_MS * 0.8,
      `retry ${second.at - first.at} ms after the first attempt`,
    );
    for (const req of receiver.requests) {
      assert.equal(req.path, '/hooks/restart');
      assertSigned(req, key!.secret, { event: 'job.completed' });
    }
    const afterRestart = await readJob(nodes[0]!, key!.token, jobId);
    // The result's URLs may name the old process's port; everything else is the job as it is shown now.
    assertBodyMatchesJob(bodyOf(first), afterRestart, { model: IMAGE_ENDPOINT, sameResult: false });

    const [delivery] = (await readDeliveries(nodes[0]!, key!.keyId)) as [Delivery];
    assert.deepEqual(
      [delivery.id, delivery.job_id, delivery.event, delivery.state],
      [first.headers['x-svc-delivery-id'], jobId, 'job.completed', 'delivered'],
      JSON.stringify(delivered),
    );
    assert.deepEqual(
      delivery.attempts.map((a) => [a.attempt, a.status, a.url]),
      [
        [1, 500, key!.url],
        [2, 200, key!.url],
      ],
    );
    return nodes;
  } catch (error) {
    await Promise.all(nodes.map((node) => node.stop('SIGKILL')));
    throw error;
  } finally {
    await receiver.close();
  }
}

/**
 * The isolation scenario: 50 keys whose endpoints never answer (the service gives up after WEBHOOK_TIMEOUT_MS)
 * and 1 healthy key. The 50 jobs are submitted at once; once all 50 deliveries hang, the healthy job is
 * submitted. Its delivery must arrive within 1 s of its `completed_at`, with all 50 still under way.
 */
async function isolation(nodes: RunningService[]) {
  const hanging = await startWebhookReceiver([], 'hang');
  const healthy = await startWebhookReceiver();
  try {
    const slowKeys = await hookedKeys(nodes[0]!, 50, (i) => `${hanging.origin}/hang/${i}`);
    const [okKey] = await hookedKeys(nodes[0]!, 1, () => `${healthy.origin}/ok`);

    // The 50 at once, spread over the nodes. They fail at the provider (`[sandbox:fail]`): a failed job is
    // announced like a completed one, and nothing is rendered, so 50 renders do not starve the machine (under
    // CI load they took over a minute). The healthy job goes in only once all 50 deliveries hang, so it ends
    // while every one of them is under way.
    const slowJobIds = await Promise.all(
      slowKeys.map((key, i) => submit(nodes[i % nodes.length]!, key.token, `slow ${i} [sandbox:fail]`)),
    );
    await hanging.waitFor(50, 60_000);
    const okJobId = await submit(nodes[50 % nodes.length]!, okKey!.token, 'healthy');

    const [hit] = (await healthy.waitFor(1, 20_000)) as [ReceivedRequest];
    const okJob = await jobsClient(() => nodes[0]!).waitForEnd(okKey!.token, okJobId);
    assert.equal(okJob.status, 'completed', JSON.stringify(okJob));
    assertSigned(hit, okKey!.secret, { event: 'job.completed' });
    assertBodyMatchesJob(bodyOf(hit), okJob, { model: IMAGE_ENDPOINT });

    // The scenario happened: the 50 other jobs ended first, and all their deliveries were still hanging.
    const slowJobs = await Promise.all(
      slowJobIds.map((id, i) => jobsClient(() => nodes[0]!).waitForEnd(slowKeys[i]!.token, id)),
    );
    const completedAt = Date.parse(okJob.completed_at!);
    assert.deepEqual(
      slowJobs.filter((job) => job.status !== 'failed' || Date.parse(job.completed_at!) > completedAt),
      [],
    );
    const inFlight = hanging.requests.filter(
      (h) => h.at <= hit.at && (h.closedAt ?? Infinity) > hit.at,
    ).length;
    assert.equal(inFlight, 50, 'all 50 hanging deliveries were under way when the healthy one arrived');

    const lateness = hit.wallAt - completedAt;
    assert.ok(
      lateness >= -50 && lateness <= 1000,
      `healthy delivery ${lateness} ms after completed_at (${inFlight} hanging deliveries under way, ` +
        `${hanging.requests.length} hanging attempts so far)`,
    );
    assert.equal(healthy.requests.length, 1);
  } finally {
    await hanging.close();
    await healthy.close();
  }
}

// ---------------------------------------------------------------------------------------------------------

describe('durable webhooks, single node (MongoDB outlives the service)', () => {
  const mediaDir = mkdtempSync(join(tmpdir(), 'mf-webhooks-media-'));
  const singleEnv = (db: string, extra: Record<string, string> = {}) => ({
    ...common,
    MONGO_URL: mongo.uri,
    MONGO_DB: db,
    MEDIA_DIR: mediaDir,
    WEBHOOK_RETRY_DELAYS_MS: `${RETRY_DELAY_MS},${RETRY_DELAY_MS},${RETRY_DELAY_MS}`,
    ...extra,
  });

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`delivers the retry once from the new process after ${signal} between attempts`, async () => {
      const db = freshDb();
      const nodes = await restartBetweenAttempts(
        async () => [await startService(singleEnv(db))],
        async ([old]) => {
          const exit = await old!.stop(signal);
          if (signal === 'SIGKILL') assert.equal(exit.signal, 'SIGKILL');
          else assert.equal(exit.code, 0, 'a graceful stop exits 0');
        },
      );
      await Promise.all(nodes.map((node) => node.stop()));
    });
  }

  it('does not let 50 endpoints hanging until the time-out delay a healthy delivery', async () => {
    const service = await startService(
      singleEnv(freshDb(), {
        // Far longer than the whole scenario, so every hanging attempt stays open until the check, however slow
        // the machine.
        WEBHOOK_TIMEOUT_MS: '600000',
        WEBHOOK_RETRY_DELAYS_MS: '600000,600000,600000',
      }),
    );
    try {
      await isolation([service]);
    } finally {
      await service.stop();
    }
  });
});

describe(
  'durable webhooks, cluster mode (MongoDB and NATS outlive the nodes)',
  { skip: skipWithoutNats() },
  () => {
    // A nats-server per scenario too: MF_WEBHOOKS and MF_JOBS left by one scenario stay out of the next.
    const natsServers: TestNats[] = [];
    after(async () => {
      await Promise.all(natsServers.map((nats) => nats.stop()));
    });
    async function freshCluster() {
      const nats = await startNats();
      natsServers.push(nats);
      return { nats, db: freshDb() };
    }
    const clusterEnv = (
      cluster: { nats: TestNats; db: string },
      nodeId: string,
      extra: Record<string, string> = {},
    ) => ({
      ...common,
      MONGO_URL: mongo.uri,
      MONGO_DB: cluster.db,
      NATS_URL: cluster.nats.url,
      NODE_ID: nodeId,
      MEDIA_STORE: 'gridfs',
      WEBHOOK_RETRY_DELAYS_MS: `${RETRY_DELAY_MS},${RETRY_DELAY_MS},${RETRY_DELAY_MS}`,
      ...extra,
    });

    it('delivers the retry exactly once after both nodes are replaced between attempts (SIGKILL and SIGTERM)', async () => {
      const cluster = await freshCluster();
      const nodes = await restartBetweenAttempts(
        (n) =>
          Promise.all([
            startService(clusterEnv(cluster, `a${n}`)),
            startService(clusterEnv(cluster, `b${n}`)),
          ]),
        async ([a, b]) => {
          const [killed, stopped] = await Promise.all([a!.stop('SIGKILL'), b!.stop('SIGTERM')]);
          assert.equal(killed.signal, 'SIGKILL');
          assert.equal(stopped.code, 0, 'a graceful stop exits 0');
        },
      );
      await Promise.all(nodes.map((node) => node.stop()));
    });

    it('delivers each of 20 jobs across two nodes exactly once per job', async () => {
      const cluster = await freshCluster();
      const nodes = await Promise.all([
        startService(clusterEnv(cluster, 'a', { WEBHOOK_RETRY_DELAYS_MS: '1000,1000,1000' })),
        startService(clusterEnv(cluster, 'b', { WEBHOOK_RETRY_DELAYS_MS: '1000,1000,1000' })),
      ]);
      // Keys 0 and 1 answer 200 at once; keys 2 and 3 answer each delivery's first attempt 500 (a retry through
      // the queue, which either node may take).
      const receiver = await startWebhookReceiver((req, earlier) =>
        /^\/k[23]$/.test(req.path) ? failFirstAttempt(req, earlier) : 200,
      );
      try {
        const keys = await hookedKeys(nodes[0]!, 4, (i) => `${receiver.origin}/k${i}`);
        const kinds = ['completed', 'completed', 'completed', 'failed', 'cancelled'] as const;
        const promptOf = {
          completed: 'a red fox',
          failed: 'broken [sandbox:fail]',
          cancelled: 'slow [sandbox:hang]',
        };
        const submitted = await Promise.all(
          keys.flatMap((key, k) =>
            kinds.map(async (kind, j) => {
              const n = k * kinds.length + j;
              const node = nodes[n % 2]!;
              const jobId = await submit(node, key.token, `${promptOf[kind]} ${n}`);
              if (kind === 'cancelled') {
                // Cancelled through the other node.
                const other = nodes[(n + 1) % 2]!;
                const cancel = await call(other.url, 'DELETE', `/api/v1/jobs/${jobId}`, { token: key.token });
                assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
              }
              return { key: k, jobId, kind };
            }),
          ),
        );
        assert.equal(submitted.length, 20);
        const jobs = new Map<string, Job>();
        for (const [n, { key, jobId, kind }] of submitted.entries()) {
          const job = await jobsClient(() => nodes[(n + 1) % 2]!).waitForEnd(keys[key]!.token, jobId);
          assert.equal(job.status, kind, JSON.stringify(job));
          jobs.set(jobId, job);
        }

        const attemptsPerDelivery = (k: number) => (k >= 2 ? 2 : 1);
        await until(
          'every delivery answered 200',
          () => receiver.requests.filter((h) => h.answer === 200).length,
          (n) => n >= 20,
          20_000,
        );
        // Longer than a retry delay: duplicates or extra attempts would have arrived by now.
        await sleep(2500); // a wait for nothing (see above)

        for (const [k, key] of keys.entries()) {
          const hits = receiver.requestsTo(`/k${k}`);
          const mine = submitted.filter((s) => s.key === k);
          const byJob = new Map<string, ReceivedRequest[]>();
          for (const hit of hits) {
            const jobId = bodyOf(hit).job_id;
            byJob.set(jobId, [...(byJob.get(jobId) ?? []), hit]);
          }
          assert.deepEqual(
            [...byJob.keys()].sort(),
            mine.map((s) => s.jobId).sort(),
            `key ${k}: one delivery per job of its own, none of another key's`,
          );
          const deliveryIds = new Set<string>();
          for (const { jobId, kind } of mine) {
            const jobHits = byJob.get(jobId)!;
            assert.deepEqual(
              jobHits.map((h) => h.answer),
              attemptsPerDelivery(k) === 2 ? [500, 200] : [200],
              `key ${k}, ${kind} job ${jobId}: attempts`,
            );
            const ids = new Set(jobHits.map((h) => String(h.headers['x-svc-delivery-id'])));
            assert.equal(ids.size, 1, `one delivery id for job ${jobId}`);
            deliveryIds.add([...ids][0]!);
            for (const hit of jobHits) {
              assertSigned(hit, key.secret, { event: EVENT_OF[kind]! });
              assert.ok(hit.body.equals(jobHits[0]!.body));
            }
            assertBodyMatchesJob(bodyOf(jobHits[0]!), jobs.get(jobId)!, { model: IMAGE_ENDPOINT });
          }
          assert.equal(deliveryIds.size, mine.length, 'a different delivery id per job');

          const listed = await readDeliveries(nodes[k % 2]!, key.keyId);
          assert.deepEqual(
            listed.map((d) => [d.job_id, d.event, d.state, d.attempts.map((a) => a.status)]).sort(),
            mine
              .map((s) => [
                s.jobId,
                EVENT_OF[s.kind],
                'delivered',
                attemptsPerDelivery(k) === 2 ? [500, 200] : [200],
              ])
              .sort(),
          );
        }
        assert.equal(receiver.requests.length, 2 * 5 * 1 + 2 * 5 * 2, 'no attempt beyond those');
      } finally {
        await Promise.all(nodes.map((node) => node.stop()));
        await receiver.close();
      }
    });

    it('does not let 50 endpoints hanging until the time-out delay a healthy delivery', async () => {
      const cluster = await freshCluster();
      const extra = {
        // Far longer than the whole scenario, so every hanging attempt stays open until the check, however slow
        // the machine.
        WEBHOOK_TIMEOUT_MS: '600000',
        WEBHOOK_RETRY_DELAYS_MS: '600000,600000,600000',
      };
      const nodes = await Promise.all([
        startService(clusterEnv(cluster, 'a', extra)),
        startService(clusterEnv(cluster, 'b', extra)),
      ]);
      try {
        await isolation(nodes);
      } finally {
        await Promise.all(nodes.map((node) => node.stop()));
      }
    });
  },
);
