// Job webhooks: from a job's terminal-state write to the moment its signed delivery has fully reached the
// receiver, against the database operations that delivery needs issued directly with the driver, on one
// jongodb server. 100 API keys, each with its own node:http receiver on 127.0.0.1 answering 200 at once;
// 500 image jobs (plus 50 warm-up jobs) inserted as `processing` before the clock starts, job i on key
// i mod 100. CONCURRENCY closed-loop finishers each take the next job: t0, the terminal write
// (`jobs.finish` → completed), then what the service's completion does next (the jobs outbox's
// `announce(job)`: `job.finished` to the webhooks, then the job's outbox flag cleared; not awaited, as the
// jobs feature does), and wait until the receiver has the whole body; latency = arrival − t0.
//
// Fairness: jongodb's writes cost time in proportion to the size of the collection written,
// so every run starts on its own fresh database of the same server with the same keys and jobs, and does
// the same work in the same order at the same concurrency: the i-th delivery of every run writes into
// collections of the same size. Runs go one after another, in BENCH_ROUNDS rounds (default 3) of direct →
// single-node → cluster; the judged figures are the medians of the rounds' p50 and p99 (see ROUNDS).
// - direct: the delivery's database operations through the same adapters, in the service's order:
//   jobs.finish, keys.get, deliveries.insert, jobs.notified, deliveries.get, keys.get,
//   deliveries.recordAttempt, then the audit entry inserted through the Mongo audit sink; timed t0 → last
//   write. The service sends the POST after the second keys.get and writes the attempt and the audit entry
//   after the receiver has it, so the judged comparison (service p99 − direct p99) leaves
//   the service the time of two writes it makes after the send; the stricter figure against direct t0 → the
//   second keys.get is printed with it.
// - single-node: the webhooks feature as src/app/app.ts wires it (Mongo deliveries, keys, jobs, the job
//   events channel and the jobs' outbox, a real audit log over the Mongo audit sink, guardedPost with private
//   targets allowed, in-process scheduler, the periodic sweep), in this process.
// - cluster: the same, but attempts timed by the JetStream work queue `MF_WEBHOOKS` on a fresh nats-server.
// A closed loop whose dispatch is slower also loads the database less (fewer deliveries per second), which
// hides dispatch time in a comparison between runs; so each service run also measures, per delivery, its
// dispatch share: latency minus the database calls on its own path (time marks on the deliveries repository
// and the POST, see timeMarks), judged against the same budget.
// Every delivery is checked at the receiver (signature with the key's secret over the raw body, headers,
// body), then every delivery must be recorded `delivered` after one attempt with one `webhook_attempt` audit
// entry: the benchmark cannot pass on wrong or missing output.
// BENCH_SCALE (default 1) scales jobs and keys, for trying the benchmark out on a busy machine.
import http, { type IncomingHttpHeaders, type Server } from 'node:http';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { connectMongo, type MongoConnection } from '../../src/platform/mongo/connect.ts';
import { createMongoApiKeys } from '../../src/accounts/mongo/api-keys.ts';
import { createMongoJobs } from '../../src/jobs/mongo-jobs.ts';
import { createMongoWebhookDeliveries } from '../../src/webhooks/mongo-deliveries.ts';
import { jobsOnServer } from '../../src/jobs/mongo-jobs.ts';
import { webhookDeliveriesOnServer } from '../../src/webhooks/mongo-deliveries.ts';
import { createMongoAuditSink, AUDIT_COLLECTION } from '../../src/platform/audit/mongo-sink.ts';
import { connectNats } from '../../src/platform/nats/connect.ts';
import { guardedPost } from '../../src/platform/net/guarded-fetch.ts';
import { systemClock } from '../../src/platform/core/clock.ts';
import { newId } from '../../src/platform/core/ids.ts';
import { DEFAULT_PROVIDER_ENDPOINTS, MODEL_IDS, imageCost } from '../../schemas/models-catalog.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { createAuditLog } from '../../src/platform/audit/audit-log.ts';
import { newJobRecord } from '../../src/jobs/job-submission.ts';
import type { ImageGeneration } from '../../src/jobs/ports/media-provider.ts';
import type { JobOutcome, JobRecord } from '../../src/jobs/ports/jobs-repository.ts';
import type {
  WebhookAttempt,
  WebhookDeliveriesRepository,
  WebhookDelivery,
} from '../../src/webhooks/ports/webhook-deliveries-repository.ts';
import { webhooksFeature } from '../../src/webhooks/feature.ts';
import { createJobOutbox, type JobEvents } from '../../src/jobs/job-outbox.ts';
import { createDomainEvents } from '../../src/platform/core/domain-events.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { deliveryBody, deliveryIdOf } from '../../src/webhooks/webhooks-service.ts';
import { WEBHOOK_USER_AGENT } from '../../src/webhooks/webhook-send.ts';
import { type WebhookPost } from '../../src/webhooks/ports/webhook-post.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { natsServerAvailable, startNats } from '../helpers/nats.ts';
import { percentile, load1, verdict } from '../helpers/bench.ts';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
/** Jobs finishing at once (closed loop: each finisher waits for its delivery before the next job). */
const CONCURRENCY = 10;
const KEYS = Math.max(CONCURRENCY, Math.round(100 * SCALE));
const JOBS = Math.max(CONCURRENCY * 5, Math.round(500 * SCALE));
/** Unmeasured deliveries first in every run (JIT, connection pools, the stream and consumer); sizes stay equal. */
const WARMUP = 50;
const OVERHEAD_BUDGET_MS = 50;
/**
 * Rounds of the three runs, each run on its own fresh database. A p99 of 500 deliveries at 10 at once is set by
 * the few worst moments, and a single stall of jongodb or of this process (2 shared cores) moves it by 100 ms
 * or more in any run, direct included; the medians of the rounds are what is judged.
 */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
/** A delivery not at its receiver by then counts as not arrived (healthy receivers answer at once). */
const ARRIVAL_TIMEOUT_MS = 15_000;
/** After the last arrival: how long the attempts' own writes (recordAttempt, audit) may take to land. */
const SETTLE_TIMEOUT_MS = 60_000;

// The service's defaults (src/platform/config.ts).
const RETRY_DELAYS_MS = [30_000, 120_000, 600_000];
const WEBHOOK_TIMEOUT_MS = 10_000;
const RETENTION_DAYS = 30;
const SWEEP_INTERVAL_MS = 30_000;

const ENDPOINT = DEFAULT_PROVIDER_ENDPOINTS.textToImage;
const OUTCOME = (jobId: string): JobOutcome => ({
  status: 'completed',
  media_ids: [`med_${jobId.slice(4)}.png`],
  result: { images: [`http://127.0.0.1:1/media/med_${jobId.slice(4)}.png`] },
});

interface Stats {
  p50: number;
  p99: number;
  max: number;
  rate: number;
}

function stats(latencies: number[], seconds: number): Stats {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted.at(-1)!,
    rate: latencies.length / seconds,
  };
}

const figures = (s: Stats) =>
  `p50 ${s.p50.toFixed(1)} ms p99 ${s.p99.toFixed(1)} ms (max ${s.max.toFixed(1)} ms, ${s.rate.toFixed(0)}/s)`;

// ---------------------------------------------------------------------------------------------------------
// Receivers: one node:http server per key. Each records when a delivery's body has fully arrived, answers
// 200, then checks the delivery against what the benchmark expects for that job.

interface Expected {
  receiver: number;
  secret: string;
  t0: number;
  arrived(at: number): void;
}

interface Checks {
  received: number;
  verified: number;
  bad: number;
  duplicates: number;
  unexpected: number;
  firstProblem: string | null;
}

const expected = new Map<string, Expected>();
const seen = new Set<string>();
let checks: Checks = newChecks();

function newChecks(): Checks {
  return { received: 0, verified: 0, bad: 0, duplicates: 0, unexpected: 0, firstProblem: null };
}

/** What is wrong with one delivery, or null: our own HMAC over the raw bytes, never the service's code. */
function problemWith(headers: IncomingHttpHeaders, raw: Buffer, jobId: string, secret: string) {
  const signature = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(headers['x-svc-signature'] ?? ''));
  if (!signature) return `malformed signature ${headers['x-svc-signature']}`;
  if (signature[1] !== headers['x-svc-timestamp']) return 'signature t differs from X-Svc-Timestamp';
  const mac = createHmac('sha256', secret).update(`${signature[1]}.`).update(raw).digest();
  if (!timingSafeEqual(mac, Buffer.from(signature[2]!, 'hex'))) return 'signature does not verify';
  if (Math.abs(Number(signature[1]) - Date.now() / 1000) > 300) return 'timestamp too far from now';
  if (headers['content-type'] !== 'application/json') return `content-type ${headers['content-type']}`;
  if (headers['user-agent'] !== WEBHOOK_USER_AGENT) return `user-agent ${headers['user-agent']}`;
  if (headers['x-svc-event'] !== 'job.completed') return `event ${headers['x-svc-event']}`;
  if (headers['x-svc-delivery-id'] !== deliveryIdOf(jobId)) return 'wrong X-Svc-Delivery-Id';
  const body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  if (body.status !== 'completed' || body.model !== ENDPOINT || body.type !== 'image')
    return `body ${raw.toString('utf8')}`;
  const images = (body.result as { images?: unknown } | null)?.images;
  if (!Array.isArray(images) || images.length !== 1) return 'body without the result images';
  return null;
}

function receive(index: number, headers: IncomingHttpHeaders, raw: Buffer, at: number) {
  checks.received++;
  let jobId: string;
  try {
    jobId = (JSON.parse(raw.toString('utf8')) as { job_id: string }).job_id;
  } catch {
    jobId = '';
  }
  const problem = (text: string) => {
    checks.bad++;
    checks.firstProblem ??= `${jobId || '(no job id)'}: ${text}`;
  };
  if (seen.has(jobId)) {
    checks.duplicates++;
    return problem('delivered twice');
  }
  const job = expected.get(jobId);
  if (!job) {
    checks.unexpected++;
    return problem('a delivery nobody expected (or later than the time-out)');
  }
  seen.add(jobId);
  if (job.receiver !== index) return problem(`reached receiver ${index}, its key's is ${job.receiver}`);
  const wrong = problemWith(headers, raw, jobId, job.secret);
  if (wrong) return problem(wrong);
  checks.verified++;
  job.arrived(at);
}

async function startReceivers(count: number): Promise<{ urls: string[]; close(): Promise<void> }> {
  const servers: Server[] = [];
  const urls: string[] = [];
  for (let index = 0; index < count; index++) {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const at = performance.now();
        res.writeHead(200, { 'content-length': '0' });
        res.end();
        receive(index, req.headers, Buffer.concat(chunks), at);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('receiver has no port');
    servers.push(server);
    urls.push(`http://127.0.0.1:${address.port}/hooks/${index}`);
  }
  return {
    urls,
    close: async () => {
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeAllConnections();
            }),
        ),
      );
    },
  };
}

/** Registers the expectation before the terminal write; resolves with the arrival time, or null. */
function expectDelivery(jobId: string, receiver: number, secret: string, t0: number): Promise<number | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      expected.delete(jobId);
      resolve(null);
    }, ARRIVAL_TIMEOUT_MS);
    expected.set(jobId, {
      receiver,
      secret,
      t0,
      arrived(at) {
        clearTimeout(timer);
        expected.delete(jobId);
        resolve(at);
      },
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// One run's database: keys with webhooks on the receivers, jobs already `processing`.

interface Setup {
  connection: MongoConnection;
  keys: Awaited<ReturnType<typeof createMongoApiKeys>>;
  jobs: Awaited<ReturnType<typeof createMongoJobs>>;
  deliveries: Awaited<ReturnType<typeof createMongoWebhookDeliveries>>;
  keyIds: string[];
  secrets: string[];
  jobList: JobRecord[];
}

async function setUp(mongo: TestMongo, dbName: string, urls: string[]): Promise<Setup> {
  const connection = await connectMongo(mongo.uri, dbName); // the service's client settings
  const db = connection.db;
  const [keys, jobs, deliveries] = await Promise.all([
    createMongoApiKeys(db),
    createMongoJobs(db).then((store) => jobsOnServer(connection.compat, store)), // as the service wires them
    createMongoWebhookDeliveries(db).then((store) => webhookDeliveriesOnServer(connection.compat, store)),
  ]);
  const keyIds: string[] = [];
  const secrets: string[] = [];
  for (let k = 0; k < KEYS; k++) {
    const id = newId('key');
    const secret = `whsec_${randomBytes(32).toString('base64url')}`; // as the admin service makes them
    await keys.create({
      id,
      user_id: `usr_bench${k}`,
      name: '',
      scopes: ['image:write'],
      hash: randomBytes(32).toString('hex'),
      prefix: `mf_${k}`,
      created_at: new Date(),
      revoked_at: null,
      webhook: { url: urls[k]!, secret },
    });
    keyIds.push(id);
    secrets.push(secret);
  }
  const jobList: JobRecord[] = [];
  for (let i = 0; i < WARMUP + JOBS; i++) {
    const k = i % KEYS;
    const generation: ImageGeneration = {
      capability: 'text-to-image',
      prompt: `bench image ${i}`,
      num_images: 1,
      aspect_ratio: '1:1',
      seed: i,
      images: [],
    };
    const now = new Date();
    const job: JobRecord = {
      ...newJobRecord({
        id: newId('job', 14),
        principal: { userId: `usr_bench${k}`, keyId: keyIds[k]! },
        type: 'image',
        model: MODEL_IDS.image,
        generation,
        credits: imageCost(1),
        now,
        providerTimeoutMs: 600_000,
      }),
      status: 'processing',
      provider: { endpoint: ENDPOINT, requestId: `req_${i}` },
    };
    await jobs.insert(job);
    jobList.push(job);
  }
  return { connection, keys, jobs, deliveries, keyIds, secrets, jobList };
}

/** `count` operations on jobs[offset..] by CONCURRENCY closed-loop finishers; latencies in job order. */
async function drive(
  count: number,
  offset: number,
  operation: (i: number) => Promise<number | null>,
): Promise<{ latencies: number[]; missing: number; seconds: number }> {
  const latencies: number[] = [];
  let missing = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < count; i = next++) {
        const latency = await operation(offset + i);
        if (latency === null) missing++;
        else latencies.push(latency);
      }
    }),
  );
  return { latencies, missing, seconds: (performance.now() - started) / 1000 };
}

// ---------------------------------------------------------------------------------------------------------
// The runs.

interface RunResult {
  stats: Stats;
  missing: number;
  /** Direct run only: t0 → the point where the service would send the POST. */
  beforeSend?: Stats;
  delivered?: number;
  audited?: number;
  warnings?: number;
  errors?: number;
  firstLogged?: string;
  /** What the receivers saw (service runs). */
  checks?: Checks;
  /** Longest event-loop stall of this process during the measured phase (receivers, driver, service). */
  loopMaxMs: number;
  /** Service runs: each delivery's latency minus the database calls on its path (see `dispatchShare`). */
  dispatch?: Stats;
}

/** Runs the measured phase with an event-loop delay monitor: stalls explain tails common to every run. */
async function measured<T>(work: () => Promise<T>): Promise<T & { loopMaxMs: number }> {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  try {
    return { ...(await work()), loopMaxMs: loop.max / 1e6 };
  } finally {
    loop.disable();
  }
}

async function directRun(mongo: TestMongo, urls: string[], round: number): Promise<RunResult> {
  const setup = await setUp(mongo, `bench_webhooks_${round}_direct`, urls);
  const { jobs, keys, deliveries, jobList } = setup;
  const sink = createMongoAuditSink(setup.connection.db);
  try {
    const beforeSend: number[] = [];
    const deliverOne = async (i: number) => {
      const job = jobList[i]!;
      const t0 = performance.now();
      const finished = await jobs.finish(job.id, ['processing'], OUTCOME(job.id), new Date());
      if (!finished) throw new Error(`job ${job.id} was not processing`);
      // jobFinished
      const key = await keys.get(finished.key_id);
      if (!key?.webhook) throw new Error('key without webhook');
      const now = new Date();
      const delivery: WebhookDelivery = {
        id: deliveryIdOf(finished.id),
        key_id: finished.key_id,
        user_id: finished.user_id,
        job_id: finished.id,
        event: 'job.completed',
        body: deliveryBody(finished),
        state: 'pending',
        attempts: [],
        next_attempt_at: now,
        created_at: now,
        updated_at: now,
      };
      if (!(await deliveries.insert(delivery))) throw new Error('delivery already there');
      await jobs.notified([finished.id]); // the outbox's confirmation
      // attempt
      const stored = await deliveries.get(delivery.id);
      if (!stored) throw new Error('delivery not found');
      const webhook = (await keys.get(stored.key_id))?.webhook;
      if (!webhook) throw new Error('key without webhook');
      const send = performance.now(); // the service POSTs here
      const attempt: WebhookAttempt = {
        attempt: 1,
        at: new Date(),
        url: webhook.url,
        status: 200,
        error: null,
        duration_ms: 1,
      };
      if (!(await deliveries.recordAttempt(stored, attempt, 'delivered', null)))
        throw new Error('attempt not recorded');
      await sink.write([
        {
          kind: 'webhook_attempt',
          ts: attempt.at.toISOString(),
          key_id: stored.key_id,
          user_id: stored.user_id,
          delivery_id: stored.id,
          job_id: stored.job_id,
          event: stored.event,
          attempt: 1,
          url: webhook.url,
          status: 200,
          error: null,
          duration_ms: 1,
        },
      ]);
      const end = performance.now();
      if (i >= WARMUP) beforeSend.push(send - t0);
      return end - t0;
    };
    await drive(WARMUP, 0, deliverOne);
    const run = await measured(() => drive(JOBS, WARMUP, deliverOne));
    return {
      stats: stats(run.latencies, run.seconds),
      missing: run.missing,
      beforeSend: stats(beforeSend, run.seconds),
      loopMaxMs: run.loopMaxMs,
    };
  } finally {
    await sink.close();
    await setup.connection.close();
  }
}

/** A pino logger as the service's (level info), counting what it logs instead of printing it. */
function countingLogger() {
  const counts = { warnings: 0, errors: 0, first: undefined as string | undefined };
  const logger: Logger = createLogger({
    level: 'info',
    nodeId: 'bench',
    destination: {
      write(line: string) {
        if (line.includes('"level":40')) counts.warnings++;
        else if (line.includes('"level":50') || line.includes('"level":60')) counts.errors++;
        else return;
        counts.first ??= line.trim().slice(0, 400);
      },
    },
  });
  return { logger, counts };
}

/**
 * The same deliveries repository and POST, with time marks: when a delivery's insert returned, when its
 * attempt started reading it, when its POST started. A delivery's path is: the terminal write, keys.get,
 * deliveries.insert (database) → scheduling (in-process timer, or JetStream publish and consume) →
 * deliveries.get, keys.get (database) → the POST until the receiver has the body. `dispatchShare` is the
 * scheduling plus the POST: what the delivery took beyond its own database calls, measured inside the
 * service run, so it is not moved by how busy the database was (a closed loop whose dispatch is slower
 * also loads the database less, which hides dispatch time in a run-to-run comparison).
 */
function timeMarks(deliveries: WebhookDeliveriesRepository) {
  const marks = new Map<string, { inserted?: number; reading?: number; posting?: number }>();
  const mark = (id: string) => {
    let entry = marks.get(id);
    if (!entry) marks.set(id, (entry = {}));
    return entry;
  };
  return {
    deliveries: {
      ...deliveries,
      async insert(delivery) {
        const inserted = await deliveries.insert(delivery);
        mark(delivery.id).inserted ??= performance.now();
        return inserted;
      },
      get(id) {
        mark(id).reading ??= performance.now();
        return deliveries.get(id);
      },
    } satisfies WebhookDeliveriesRepository,
    post: ((url, body, headers, options) => {
      mark(headers['x-svc-delivery-id']!).posting ??= performance.now();
      return guardedPost(url, body, headers, options);
    }) satisfies WebhookPost,
    dispatchShare(deliveryId: string, arrivedAt: number): number {
      const { inserted, reading, posting } = marks.get(deliveryId) ?? {};
      if (inserted === undefined || reading === undefined || posting === undefined)
        throw new Error(`delivery ${deliveryId} arrived without passing every step`);
      return reading - inserted + (arrivedAt - posting);
    },
  };
}

async function serviceRun(
  mongo: TestMongo,
  urls: string[],
  mode: 'single-node' | 'cluster',
  round: number,
): Promise<RunResult> {
  checks = newChecks();
  const setup = await setUp(mongo, `bench_webhooks_${round}_${mode.replace('-', '_')}`, urls);
  const { jobs, keys, deliveries, jobList, connection } = setup;
  const { logger: log, counts } = countingLogger();
  const natsServer = mode === 'cluster' ? await startNats() : undefined;
  const closers: Array<() => Promise<void>> = []; // run in reverse order, as app.ts does
  try {
    const nats = natsServer ? await connectNats([natsServer.url], 'bench-node') : undefined;
    if (nats) closers.push(() => nats.close());
    // As app.ts: the audit log over the Mongo sink, then the webhooks and their scheduler.
    const audit = createAuditLog({ sink: createMongoAuditSink(connection.db), logger: log });
    closers.push(() => audit.close());
    const timed = timeMarks(deliveries);
    const jobEvents = createDomainEvents<JobEvents>({ log });
    const webhooks = await webhooksFeature(
      {
        webhookRetryDelaysMs: RETRY_DELAYS_MS,
        webhookTimeoutMs: WEBHOOK_TIMEOUT_MS,
        webhookAllowPrivate: true, // loopback receivers (WEBHOOK_ALLOW_PRIVATE=true)
        jobRetentionDays: RETENTION_DAYS,
        jobSweepIntervalMs: SWEEP_INTERVAL_MS,
        natsReplicas: 1,
        tuning: loadConfig({}).tuning,
      },
      {
        log,
        clock: systemClock,
        audit,
        nats,
        repositories: { deliveries: timed.deliveries, keys },
        jobEvents,
      },
      timed.post,
    );
    await webhooks.start();
    closers.push(() => webhooks.stop());
    const outbox = createJobOutbox({ jobs, events: jobEvents, clock: systemClock, logger: log });
    const onFinished = (job: JobRecord) => void outbox.announce(job);

    const dispatch: number[] = [];
    const deliverOne = async (i: number) => {
      const job = jobList[i]!;
      const k = i % KEYS;
      const t0 = performance.now();
      const arrival = expectDelivery(job.id, k, setup.secrets[k]!, t0);
      const finished = await jobs.finish(job.id, ['processing'], OUTCOME(job.id), new Date());
      if (!finished) throw new Error(`job ${job.id} was not processing`);
      onFinished(finished); // what the completion does after the terminal write
      const at = await arrival;
      if (at === null) return null;
      if (i >= WARMUP) dispatch.push(timed.dispatchShare(deliveryIdOf(job.id), at));
      return at - t0;
    };
    await drive(WARMUP, 0, deliverOne);
    const run = await measured(() => drive(JOBS, WARMUP, deliverOne));

    // The attempts' own writes come after the receiver has the request: wait for them, then flush the audit.
    const stored = connection.db.collection('webhook_deliveries');
    const total = WARMUP + JOBS;
    const settleBy = performance.now() + SETTLE_TIMEOUT_MS;
    let delivered = 0;
    while (performance.now() < settleBy) {
      delivered = await stored.countDocuments({ state: 'delivered', attempt_count: 1 });
      if (delivered >= total) break;
      await delay(100);
    }
    await audit.flush();
    const audited = await connection.db
      .collection(AUDIT_COLLECTION)
      .countDocuments({ kind: 'webhook_attempt', status: 200, attempt: 1 });
    return {
      stats: stats(run.latencies, run.seconds),
      missing: run.missing,
      delivered,
      audited,
      warnings: counts.warnings,
      errors: counts.errors,
      firstLogged: counts.first,
      checks,
      loopMaxMs: run.loopMaxMs,
      dispatch: stats(dispatch, run.seconds),
    };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await connection.close();
    await natsServer?.stop();
  }
}

// ---------------------------------------------------------------------------------------------------------

const started = performance.now();
const mongo = await startMongo();
const receivers = await startReceivers(KEYS);
try {
  const loads = [load1()];
  const clusterAvailable = natsServerAvailable();
  const rounds: Array<{ direct: RunResult; single: RunResult; cluster?: RunResult }> = [];
  for (let round = 0; round < ROUNDS; round++) {
    const direct = await directRun(mongo, receivers.urls, round);
    const single = await serviceRun(mongo, receivers.urls, 'single-node', round);
    const cluster = clusterAvailable ? await serviceRun(mongo, receivers.urls, 'cluster', round) : undefined;
    rounds.push({ direct, single, cluster });
    loads.push(load1());
  }

  const total = WARMUP + JOBS;
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const medianOf = (runs: RunResult[], pick: (r: RunResult) => Stats = (r) => r.stats) => ({
    p50: median(runs.map((r) => pick(r).p50)),
    p99: median(runs.map((r) => pick(r).p99)),
  });
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  const direct = medianOf(rounds.map((r) => r.direct));
  const beforeSend = medianOf(
    rounds.map((r) => r.direct),
    (r) => r.beforeSend!,
  );
  const judged = (name: string, runs: RunResult[]) => {
    if (runs.length === 0)
      return {
        correct: false,
        text: `${name}: not run (nats-server is not on PATH) [${verdict(false, `${name}: run`, 'nats-server is not on PATH')}]`,
      };
    const service = medianOf(runs);
    const overhead = service.p99 - direct.p99;
    const dispatch = medianOf(runs, (r) => r.dispatch!);
    const sum = (pick: (r: RunResult) => number) => runs.reduce((acc, r) => acc + pick(r), 0);
    const missing = sum((r) => r.missing);
    const verified = sum((r) => r.checks!.verified);
    const bad = sum((r) => r.checks!.bad);
    const delivered = sum((r) => r.delivered!);
    const audited = sum((r) => r.audited!);
    const expected = total * runs.length;
    const signaturesOk = bad === 0 && verified === expected;
    const recordsOk = delivered === expected && audited === expected;
    const problem = runs.map((r) => r.checks!.firstProblem).find(Boolean);
    const logged = runs.map((r) => r.firstLogged).find(Boolean);
    return {
      correct: missing === 0 && signaturesOk && recordsOk,
      text:
        `${name} finish→arrival p50 ${ms(service.p50)} p99 ${ms(service.p99)}, overhead ${ms(overhead)} ` +
        `[budget <= ${OVERHEAD_BUDGET_MS} ms: ` +
        `${verdict(overhead <= OVERHEAD_BUDGET_MS, `${name}: finish→arrival p99 <= direct p99 + ${OVERHEAD_BUDGET_MS} ms`, `+${ms(overhead)}`)}] ` +
        `(against direct up to the send: ${ms(service.p99 - beforeSend.p99)}); its dispatch share p50 ` +
        `${ms(dispatch.p50)} p99 ${ms(dispatch.p99)} [budget <= ${OVERHEAD_BUDGET_MS} ms: ` +
        `${verdict(dispatch.p99 <= OVERHEAD_BUDGET_MS, `${name}: dispatch share p99 <= ${OVERHEAD_BUDGET_MS} ms`, ms(dispatch.p99))}]`,
      detail:
        `  ${name}, all rounds: not arrived ${missing} [must be 0: ${verdict(missing === 0, `${name}: every delivery arrived`, `${missing} missing`)}]; signatures ` +
        `verified ${verified}/${expected}, bad ${bad} (duplicates ${sum((r) => r.checks!.duplicates)}, ` +
        `unexpected ${sum((r) => r.checks!.unexpected)})${problem ? `, first: ${problem}` : ''} ` +
        `[${verdict(signaturesOk, `${name}: every signature verifies`, `${verified}/${expected} verified, ${bad} bad`)}]; recorded delivered after one attempt ${delivered}/${expected}, ` +
        `webhook_attempt audit entries ${audited}/${expected} ` +
        `[${verdict(recordsOk, `${name}: every delivery recorded and audited`, `${delivered}/${expected} delivered, ${audited}/${expected} audited`)}]; logged ` +
        `${sum((r) => r.warnings!)} warnings, ${sum((r) => r.errors!)} errors${logged ? ` (first: ${logged})` : ''}`,
    };
  };
  const singleVerdict = judged(
    'single-node',
    rounds.map((r) => r.single),
  );
  const clusterVerdict = judged(
    'cluster',
    rounds.flatMap((r) => (r.cluster ? [r.cluster] : [])),
  );
  console.log(
    `webhooks (${JOBS} jobs across ${KEYS} keys, ${CONCURRENCY} finishing at once, healthy loopback receivers, ` +
      `fresh database per run on one jongodb, ${ROUNDS} rounds of direct → single-node → cluster, medians of ` +
      `the rounds' figures): direct finish→last write p50 ${ms(direct.p50)} p99 ${ms(direct.p99)}; ` +
      `${singleVerdict.text}; ${clusterVerdict.text}`,
  );
  console.log(singleVerdict.detail ?? '');
  if (clusterVerdict.detail) console.log(clusterVerdict.detail);
  rounds.forEach((r, round) => {
    const run = (name: string, result: RunResult | undefined) =>
      result
        ? `${name} ${figures(result.stats)}` +
          (result.dispatch
            ? `, dispatch share p50 ${ms(result.dispatch.p50)} p99 ${ms(result.dispatch.p99)}`
            : '') +
          `, loop stall max ${ms(result.loopMaxMs)}`
        : `${name} not run`;
    console.log(
      `  round ${round + 1}: ${run('direct', r.direct)} (up to the send p50 ${ms(r.direct.beforeSend!.p50)} ` +
        `p99 ${ms(r.direct.beforeSend!.p99)}); ${run('single-node', r.single)}; ${run('cluster', r.cluster)}`,
    );
  });
  console.log(
    `  load average (1 min) before and after each round: ${loads.join(' → ')}; whole benchmark ` +
      `${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
  // Wrong or missing output makes the numbers meaningless: fail the run, not just the budget line.
  const directMissing = rounds.reduce((acc, r) => acc + r.direct.missing, 0);
  if (!singleVerdict.correct || !clusterVerdict.correct || directMissing !== 0) process.exitCode = 1;
} finally {
  await receivers.close();
  await mongo.stop();
}
