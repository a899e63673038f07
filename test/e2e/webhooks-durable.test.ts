// Job webhooks that outlive the service: a real node:http receiver, the service as a process, and a MongoDB
// (and nats-server, in cluster mode) that outlive every service process. A delivery whose first attempt failed
// is retried, once, by the process started after the one that made the attempt (SIGTERM and SIGKILL, single
// node and cluster); two cluster nodes deliver each job exactly once; and 50 endpoints that hang until the
// time-out do not delay a healthy endpoint's delivery by more than 1 s.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startNats, skipWithoutNats, type TestNats } from '../helpers/nats.ts';
import { startService, adminClient, call, type RunningService } from '../helpers/service.ts';
import { jobsClient, type Job } from '../helpers/jobs.ts';

// ---------------------------------------------------------------------------------------------------------
// A small webhook receiver (its own, so this file depends on nothing but the service's black box).

/** What the receiver does with one request: answer with this status, or never answer. */
type Answer = number | 'hang';

/** One request as the receiver got it. */
interface Hit {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The exact bytes of the body. */
  body: Buffer;
  /** Date.now() when the request (its head) arrived. */
  at: number;
  answer: Answer;
  /** Date.now() when the connection of an unanswered request was closed (by the service's time-out). */
  closedAt?: number;
}

interface Receiver {
  url: string;
  hits: Hit[];
  /** Hits on one path. */
  on(path: string): Hit[];
  close(): Promise<void>;
}

/** A receiver on 127.0.0.1:<free port>; `decide` picks the answer of each request from it and the earlier ones. */
async function startReceiver(decide: (hit: Hit, earlier: Hit[]) => Answer = () => 200): Promise<Receiver> {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    const at = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const hit: Hit = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
        at,
        answer: 200,
      };
      const earlier = hits.slice();
      hits.push(hit);
      hit.answer = decide(hit, earlier);
      res.on('close', () => (hit.closedAt ??= Date.now()));
      if (hit.answer === 'hang') return;
      res.writeHead(hit.answer, { 'content-type': 'text/plain' }).end(`answered ${hit.answer}`);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    on: (path) => hits.filter((hit) => hit.path === path),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The first attempt of each delivery answers 500, every later one 200. */
const failFirstAttempt = (hit: Hit, earlier: Hit[]): Answer =>
  earlier.some((e) => e.headers['x-svc-delivery-id'] === hit.headers['x-svc-delivery-id']) ? 200 : 500;

// ---------------------------------------------------------------------------------------------------------
// The service side.

/** A delivery as `GET /api/admin/v1/keys/<key_id>/deliveries` lists it. */
interface Delivery {
  id: string;
  job_id: string;
  event: string;
  state: 'pending' | 'delivered' | 'failed' | 'dropped';
  attempts: Array<{
    attempt: number;
    at: string;
    url: string;
    status: number | null;
    error: string | null;
    duration_ms: number;
  }>;
  next_attempt_at: string | null;
  created_at: string;
}

/** A key with image:write and its webhook set to `url`. */
interface HookedKey {
  keyId: string;
  token: string;
  secret: string;
  url: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `read` until `done` holds for its value; fails with the last value after `limitMs`. */
async function until<T>(
  what: string,
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  limitMs = 15_000,
) {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(value)} after ${limitMs} ms`);
    await sleep(25);
  }
}

let userNo = 0;

/** A user with `credits` and `count` keys, each with its own webhook URL (`urlOf(i)`). */
async function hookedKeys(
  service: RunningService,
  count: number,
  urlOf: (i: number) => string,
  credits = 100_000,
): Promise<HookedKey[]> {
  const admin = adminClient(service);
  const userId = await admin.createUser(`webhooks${++userNo}-${Date.now()}@example.com`, credits);
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const key = await admin.createKey(userId, ['image:write']);
      const url = urlOf(i);
      const set = await admin.call<{ url: string; secret?: string }>('PUT', `/keys/${key.id}/webhook`, {
        url,
      });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.equal(set.body.url, url);
      assert.match(set.body.secret ?? '', /^whsec_/, 'first enablement shows the secret');
      return { keyId: key.id, token: key.apiKey, secret: set.body.secret!, url };
    }),
  );
}

async function deliveriesOf(service: RunningService, keyId: string): Promise<Delivery[]> {
  const answer = await adminClient(service).call<{ deliveries: Delivery[] }>(
    'GET',
    `/keys/${keyId}/deliveries?limit=100`,
  );
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.deliveries;
}

async function submit(service: RunningService, token: string, prompt: string): Promise<string> {
  const answer = await jobsClient(() => service).submitImage(token, { prompt });
  assert.equal(answer.status, 202, JSON.stringify(answer.body));
  return answer.body.job_id as string;
}

/** Asserts the headers of spec §6.2 and a signature that verifies, from the raw bytes, with `secret`. */
function assertSigned(hit: Hit, secret: string, event: string) {
  assert.equal(hit.method, 'POST');
  assert.equal(hit.headers['content-type'], 'application/json');
  assert.equal(hit.headers['user-agent'], 'Svc-Webhooks/1.0');
  assert.equal(hit.headers['x-svc-event'], event);
  assert.match(String(hit.headers['x-svc-delivery-id']), /^dlv_\S+$/);
  const timestamp = String(hit.headers['x-svc-timestamp']);
  assert.match(timestamp, /^\d+$/);
  assert.ok(
    Math.abs(Number(timestamp) - hit.at / 1000) <= 5,
    `timestamp ${timestamp} is the time of the attempt (${hit.at})`,
  );
  const v1 = createHmac('sha256', secret).update(`${timestamp}.`).update(hit.body).digest('hex');
  assert.equal(hit.headers['x-svc-signature'], `t=${timestamp},v1=${v1}`);
}

/** The delivery body of spec §6.2 checked against the job as the API shows it. */
function assertBodyOf(hit: Hit, job: Job, options: { sameResult?: boolean } = {}) {
  const body = JSON.parse(hit.body.toString('utf8')) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), [
    'completed_at',
    'created_at',
    'credits_consumed',
    'error',
    'job_id',
    'model',
    'result',
    'status',
    'type',
  ]);
  assert.deepEqual(
    [
      body.job_id,
      body.status,
      body.model,
      body.type,
      body.credits_consumed,
      body.created_at,
      body.completed_at,
    ],
    [
      job.job_id,
      job.status,
      'fal-ai/nano-banana',
      job.type,
      job.credits_consumed,
      job.created_at,
      job.completed_at,
    ],
  );
  assert.equal(body.error, job.error);
  if (options.sameResult !== false) assert.deepEqual(body.result, job.result);
  else assert.equal(body.result === null, job.result === null);
}

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
  const receiver = await startReceiver(failFirstAttempt);
  let nodes = await start(1);
  try {
    const [key] = await hookedKeys(nodes[0]!, 1, () => `${receiver.url}/hooks/restart`);
    const jobId = await submit(nodes[0]!, key!.token, 'a lighthouse in the rain');
    const job = await jobsClient(() => nodes[0]!).waitForEnd(key!.token, jobId);
    assert.equal(job.status, 'completed', JSON.stringify(job));

    await until(
      'first attempt at the receiver',
      () => receiver.hits.length,
      (n) => n >= 1,
    );
    // Between attempts: the service has recorded attempt 1 (500) and waits RETRY_DELAY_MS for the retry.
    const pending = await until(
      'attempt 1 recorded',
      () => deliveriesOf(nodes[0]!, key!.keyId),
      (list) => list.length === 1 && list[0]!.attempts.length === 1,
    );
    assert.equal(pending[0]!.state, 'pending', JSON.stringify(pending));
    assert.equal(pending[0]!.attempts[0]!.status, 500);
    await sleep(200);
    await stop(nodes);
    const stoppedAt = Date.now();
    // Otherwise the old processes made the retry, and the scenario did not happen.
    assert.equal(receiver.hits.length, 1, 'no retry before the stop');
    nodes = await start(2);

    const delivered = await until(
      'retry delivered by the new process',
      () => deliveriesOf(nodes[0]!, key!.keyId),
      (list) => list[0]?.state === 'delivered',
      30_000,
    );
    // Longer than a retry delay: a duplicate (or a third attempt) would have arrived by now.
    await sleep(RETRY_DELAY_MS + 500);

    assert.equal(receiver.hits.length, 2, 'exactly two attempts in all');
    const [first, second] = receiver.hits as [Hit, Hit];
    assert.deepEqual([first.answer, second.answer], [500, 200]);
    assert.equal(second.headers['x-svc-delivery-id'], first.headers['x-svc-delivery-id']);
    assert.ok(second.body.equals(first.body), 'the retry sends the same body bytes');
    assert.ok(second.at > stoppedAt, 'the retry came from a process started after the stop');
    assert.ok(
      second.at - first.at >= RETRY_DELAY_MS * 0.8,
      `retry ${second.at - first.at} ms after the first attempt`,
    );
    for (const hit of receiver.hits) {
      assert.equal(hit.path, '/hooks/restart');
      assertSigned(hit, key!.secret, 'job.completed');
    }
    const afterRestart = await jobsClient(() => nodes[0]!).getJob(key!.token, jobId);
    assert.equal(afterRestart.status, 200);
    // The result's URLs may name the old process's port; everything else is the job as it is shown now.
    assertBodyOf(first, afterRestart.body, { sameResult: false });

    const [delivery] = (await deliveriesOf(nodes[0]!, key!.keyId)) as [Delivery];
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
 * and 1 healthy key; 51 jobs submitted at once, the healthy one finishing last (a little after the others, so
 * that the 50 hanging deliveries are due, and under way, first). Its delivery must arrive within 1 s of its
 * `completed_at`.
 */
async function isolation(nodes: RunningService[]) {
  const hanging = await startReceiver(() => 'hang');
  const healthy = await startReceiver(() => 200);
  try {
    const slowKeys = await hookedKeys(nodes[0]!, 50, (i) => `${hanging.url}/hang/${i}`);
    const [okKey] = await hookedKeys(nodes[0]!, 1, () => `${healthy.url}/ok`);

    // All 51 at once, spread over the nodes; every render is done long before its delay is over, so the
    // 50 finish together and the healthy one about 3 s later, while their deliveries still hang.
    const [okJobId, ...slowJobIds] = await Promise.all([
      submit(nodes[50 % nodes.length]!, okKey!.token, 'healthy [sandbox:delay=5000]'),
      ...slowKeys.map((key, i) =>
        submit(nodes[i % nodes.length]!, key.token, `slow ${i} [sandbox:delay=2000]`),
      ),
    ]);

    const hit = (await until(
      'the healthy delivery',
      () => healthy.hits[0],
      (h) => h !== undefined,
      20_000,
    ))!;
    const okJob = await jobsClient(() => nodes[0]!).waitForEnd(okKey!.token, okJobId!);
    assert.equal(okJob.status, 'completed', JSON.stringify(okJob));
    assertSigned(hit, okKey!.secret, 'job.completed');
    assertBodyOf(hit, okJob);

    // The scenario happened: the 50 other jobs ended first, so their deliveries were due before this one.
    const slowJobs = await Promise.all(
      slowJobIds.map((id, i) => jobsClient(() => nodes[0]!).waitForEnd(slowKeys[i]!.token, id)),
    );
    const completedAt = Date.parse(okJob.completed_at!);
    assert.deepEqual(
      slowJobs.filter((job) => job.status !== 'completed'),
      [],
    );
    // (In cluster mode a few jobs may be noticed late by the pollers; most must be done before the healthy one.)
    const before = slowJobs.filter((job) => Date.parse(job.completed_at!) <= completedAt).length;
    assert.ok(before >= 40, `${before} of the 50 hanging-endpoint jobs completed before the healthy one`);
    const inFlight = hanging.hits.filter((h) => h.at <= hit.at && (h.closedAt ?? Infinity) > hit.at).length;
    assert.ok(inFlight >= 1, 'hanging deliveries were under way when the healthy one arrived');

    const lateness = hit.at - completedAt;
    assert.ok(
      lateness >= -50 && lateness <= 1000,
      `healthy delivery ${lateness} ms after completed_at (${inFlight} hanging deliveries under way, ` +
        `${hanging.hits.length} hanging attempts so far)`,
    );
    assert.equal(healthy.hits.length, 1);
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
        WEBHOOK_TIMEOUT_MS: '5000',
        WEBHOOK_RETRY_DELAYS_MS: '60000,60000,60000',
        SANDBOX_RENDER_CONCURRENCY: '4',
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
      const receiver = await startReceiver((hit, earlier) =>
        /^\/k[23]$/.test(hit.path) ? failFirstAttempt(hit, earlier) : 200,
      );
      try {
        const keys = await hookedKeys(nodes[0]!, 4, (i) => `${receiver.url}/k${i}`);
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
          () => receiver.hits.filter((h) => h.answer === 200).length,
          (n) => n >= 20,
          20_000,
        );
        // Longer than a retry delay: duplicates or extra attempts would have arrived by now.
        await sleep(2500);

        for (const [k, key] of keys.entries()) {
          const hits = receiver.on(`/k${k}`);
          const mine = submitted.filter((s) => s.key === k);
          const byJob = new Map<string, Hit[]>();
          for (const hit of hits) {
            const jobId = (JSON.parse(hit.body.toString('utf8')) as { job_id: string }).job_id;
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
              assertSigned(hit, key.secret, EVENT_OF[kind]!);
              assert.ok(hit.body.equals(jobHits[0]!.body));
            }
            assertBodyOf(jobHits[0]!, jobs.get(jobId)!);
          }
          assert.equal(deliveryIds.size, mine.length, 'a different delivery id per job');

          const listed = await deliveriesOf(nodes[k % 2]!, key.keyId);
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
        assert.equal(receiver.hits.length, 2 * 5 * 1 + 2 * 5 * 2, 'no attempt beyond those');
      } finally {
        await Promise.all(nodes.map((node) => node.stop()));
        await receiver.close();
      }
    });

    it('does not let 50 endpoints hanging until the time-out delay a healthy delivery', async () => {
      const cluster = await freshCluster();
      const extra = {
        WEBHOOK_TIMEOUT_MS: '5000',
        WEBHOOK_RETRY_DELAYS_MS: '60000,60000,60000',
        SANDBOX_RENDER_CONCURRENCY: '4',
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
