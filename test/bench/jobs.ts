// Generation submits through the whole service against the same database operations issued directly with the
// driver, on one jongodb server: 50 closed-loop submitters, 200 users, 2000 image submits (POST
// /api/v1/image/nano-banana/generate → 202), then 50 readers of GET /api/v1/jobs/<id>.
//
// Fairness: jongodb's writes cost time in proportion to the size of the collection written (
// other collections and databases stay fast), so every run starts on its own fresh database of the same
// server and does the same work in the same order: the i-th submit of every run writes into collections of
// the same size. The runs go one after another, not interleaved: a running service keeps rendering and
// polling its jobs between its own submits, and that background work would land on the direct run's clock.
// Order: direct (before any service process exists) → service with `[sandbox:hang]` prompts (no render ever
// starts; the submit writes the same documents) → service with plain prompts (every submit queues a real
// ffmpeg render behind SANDBOX_RENDER_CONCURRENCY). The last two differ only by the renders, which is how
// "rendering never delays submits" is judged; the last one is the service figure the overhead is judged on.
// Every run first does SERIAL_SUBMITS submits from one caller (after the warm-up, before the 50 callers): below
// saturation a submit's latency is its own work, not seconds of queueing behind jongodb's one-at-a-time writes,
// so that line shows what the service's pipeline itself adds and what renders cost a lone submit.
// BENCH_SCALE (default 1) scales users, submits and reads, for trying the benchmark out on a busy machine.
import { randomInt } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { connectMongo, type MongoConnection } from '../../src/platform/mongo/connect.ts';
import { createMongoUsers } from '../../src/accounts/mongo/users.ts';
import { createMongoApiKeys } from '../../src/accounts/mongo/api-keys.ts';
import { createMongoCreditLedger } from '../../src/credits/mongo-ledger.ts';
import { createMongoJobs } from '../../src/jobs/mongo-jobs.ts';
import { jobsOnServer } from '../../src/jobs/mongo-jobs.ts';
import { sandboxBehaviour } from '../../src/jobs/providers/sandbox/markers.ts';
import { systemClock } from '../../src/platform/core/clock.ts';
import { generateApiKey } from '../../src/accounts/api-key.ts';
import { newId } from '../../src/platform/core/ids.ts';
import { DEFAULT_PROVIDER_ENDPOINTS, MODEL_IDS, imageCost } from '../../schemas/models-catalog.ts';
import { createAuthenticator } from '../../src/accounts/authenticator.ts';
import { newJobRecord } from '../../src/jobs/job-submission.ts';
import type { ImageGeneration } from '../../src/jobs/ports/media-provider.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, adminClient, type RunningService } from '../helpers/service.ts';
import { percentile, load1, verdict } from '../helpers/bench.ts';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const CONCURRENCY = 50;
const USERS = Math.max(1, Math.round(200 * SCALE));
const SUBMITS = Math.max(CONCURRENCY, Math.round(2000 * SCALE));
const READS = Math.max(CONCURRENCY, Math.round(4000 * SCALE));
const SERIAL_SUBMITS = Math.max(20, Math.round(200 * SCALE));
/** Unmeasured submits first in every run (JIT, connection pools, the first key lookups); sizes stay equal. */
const WARMUP = CONCURRENCY;
const CREDITS = 1_000_000;
const RENDER_CONCURRENCY = process.env.SANDBOX_RENDER_CONCURRENCY ?? '2'; // the service's default
const SANDBOX_IMAGE_MS = '1500'; // the defaults: renders start at submit and run for the whole submit phase
const SANDBOX_VIDEO_MS = '4000';
const OVERHEAD_BUDGET_MS = 3;
const SEED_MAX = 2 ** 31 - 1;
const SAMPLE_EVERY_MS = 500;
const IMAGE_PATH = '/api/v1/image/nano-banana/generate';

interface Account {
  userId: string;
  token: string;
}

interface Stats {
  rate: number;
  p50: number;
  p99: number;
  /** p50 of each tenth of the run, in submit order (the collections grow from one to the next). */
  tenths: number[];
  seconds: number;
}

function stats(latencies: number[], seconds: number): Stats {
  const sorted = [...latencies].sort((a, b) => a - b);
  const tenths = Array.from({ length: 10 }, (_, t) => {
    const part = latencies.slice(
      Math.floor((t * latencies.length) / 10),
      Math.floor(((t + 1) * latencies.length) / 10),
    );
    return percentile(
      part.sort((a, b) => a - b),
      0.5,
    );
  });
  return {
    rate: latencies.length / seconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    tenths,
    seconds,
  };
}

/** `count` operations by `callers` closed-loop callers; latencies are kept in operation order. */
async function load(
  count: number,
  operation: (i: number) => Promise<void>,
  callers = CONCURRENCY,
): Promise<Stats> {
  const latencies = new Array<number>(count);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      for (let i = next++; i < count; i = next++) {
        const t = performance.now();
        await operation(i);
        latencies[i] = performance.now() - t;
      }
    }),
  );
  return stats(latencies, (performance.now() - started) / 1000);
}

const figures = (s: Stats) => `p50 ${s.p50.toFixed(1)} ms p99 ${s.p99.toFixed(1)} ms, ${s.rate.toFixed(0)}/s`;

/**
 * What one submit does to MongoDB in the service (src/jobs/jobs-service.ts submit), issued directly with the
 * driver through the same adapters: the key lookup of the authenticator (cached per token, as in the service:
 * awaited on a miss, refreshed in the background after 2 s), `jobs` insert (`submitting`), the debit (the
 * user actor runs the ledger's apply: user read, ledger read, guarded user update, ledger insert), the
 * sandbox provider's `sandbox_requests` insert, then `jobs` update to `processing`. Off the request path the
 * service also writes audit entries, polls its jobs and renders; none of that is reproduced here.
 */
async function directRun(mongo: TestMongo) {
  const connection = await connectMongo(mongo.uri, 'bench_direct'); // the service's client settings
  try {
    const db = connection.db;
    const [users, keys, ledger, jobs] = await Promise.all([
      createMongoUsers(db),
      createMongoApiKeys(db),
      createMongoCreditLedger(db, systemClock),
      createMongoJobs(db).then((store) => jobsOnServer(connection.compat, store)), // as the service wires it
    ]);
    const requests = db.collection('sandbox_requests');
    await requests.createIndexes([{ key: { created_at: 1 }, name: 'by_age' }]); // as the sandbox provider
    const auth = createAuthenticator({
      keys,
      adminToken: 'unused-admin-token-0123456789',
      clock: systemClock,
    });
    // The admin API's writes for a new user and key: user, opening grant through the ledger, key.
    const accounts: Account[] = [];
    for (let u = 0; u < USERS; u++) {
      const userId = newId('usr');
      await users.create({ id: userId, email: `u${u}@bench.test`, credits: 0, created_at: new Date() });
      const granted = await ledger.apply({
        userId,
        opId: 'initial_grant',
        delta: CREDITS,
        reason: 'initial_grant',
      });
      if (granted.kind !== 'applied') throw new Error(`grant refused: ${granted.kind}`);
      const { apiKey, hash, prefix } = generateApiKey();
      await keys.create({
        id: newId('key'),
        user_id: userId,
        name: '',
        scopes: ['image:write'],
        hash,
        prefix,
        created_at: new Date(),
        revoked_at: null,
        webhook: null,
      });
      accounts.push({ userId, token: apiKey });
    }
    const jobIds: Array<{ id: string }> = [];
    const submit = async (account: Account, prompt: string) => {
      const principal = await auth.authenticateKey(`Bearer ${account.token}`);
      const generation: ImageGeneration = {
        capability: 'text-to-image',
        prompt,
        num_images: 1,
        aspect_ratio: '1:1',
        seed: randomInt(SEED_MAX),
        images: [],
      };
      const job = newJobRecord({
        id: newId('job', 14),
        principal,
        type: 'image',
        model: MODEL_IDS.image,
        generation,
        credits: imageCost(1),
        now: new Date(),
        providerTimeoutMs: 600_000,
      });
      const id = job.id;
      await jobs.insert(job);
      const debit = await ledger.apply({
        userId: principal.userId,
        opId: job.debit_op_id,
        delta: -job.credits,
        reason: 'job',
        jobId: id,
      });
      if (debit.kind !== 'applied') throw new Error(`debit refused: ${debit.kind}`);
      const at = Date.now();
      const request = {
        _id: newId('sbx', 20),
        endpoint: DEFAULT_PROVIDER_ENDPOINTS.textToImage,
        generation,
        behaviour: sandboxBehaviour(prompt),
        state: 'pending',
        ready_at: new Date(at + Number(SANDBOX_IMAGE_MS)),
        outputs: [],
        error: null,
        render_owner: 'bench-direct',
        render_lease_until: new Date(at + 15_000),
        created_at: new Date(at),
      };
      await requests.insertOne(request as never);
      const handle = { endpoint: request.endpoint, requestId: request._id };
      if (!(await jobs.markProcessing(id, handle, new Date()))) throw new Error(`job ${id} left submitting`);
      return id;
    };
    await load(WARMUP, async (i) => void (await submit(accounts[i % USERS]!, `warm-up ${i}`)));
    const serial = await load(
      SERIAL_SUBMITS,
      async (i) => void (await submit(accounts[i % USERS]!, `serial ${i}`)),
      1,
    );
    const submits = await load(SUBMITS, async (i) => {
      jobIds[i] = { id: await submit(accounts[i % USERS]!, `bench image ${i}`) };
    });
    return {
      serial,
      submits,
      /** Direct reads of the same shape as the service's GET: one job by id. */
      reads: () =>
        load(READS, async (i) => {
          const job = await jobs.get(jobIds[i % jobIds.length]!.id);
          if (!job) throw new Error('direct read found no job');
        }),
      close: () => connection.close(),
    };
  } catch (error) {
    await connection.close();
    throw error;
  }
}

/** ffmpeg processes the service has running right now (its renders). */
function ffmpegChildren(pid: number): number {
  let count = 0;
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      for (const child of children ? children.split(' ') : []) {
        try {
          if (readFileSync(`/proc/${child}/comm`, 'utf8').trim() === 'ffmpeg') count++;
        } catch {
          // the render ended between the two reads
        }
      }
    }
  } catch {
    return 0; // no /proc here: the figure is reported as 0
  }
  return count;
}

/** Samples the sandbox's request states and the service's ffmpeg processes until stopped. */
function watchRenders(connection: MongoConnection, pid: number) {
  const requests = connection.db.collection('sandbox_requests');
  const seen = { maxPending: 0, maxFfmpeg: 0, pending: 0, rendered: 0 };
  const sample = async () => {
    const [pending, rendered] = await Promise.all([
      requests.countDocuments({ state: 'pending' }),
      requests.countDocuments({ state: 'rendered' }),
    ]);
    const ffmpeg = ffmpegChildren(pid);
    Object.assign(seen, {
      pending,
      rendered,
      maxPending: Math.max(seen.maxPending, pending),
      maxFfmpeg: Math.max(seen.maxFfmpeg, ffmpeg),
    });
  };
  let running = true;
  const loop = (async () => {
    while (running) {
      await sample();
      await delay(SAMPLE_EVERY_MS);
    }
  })();
  return {
    /** Stops sampling; `pending` and `rendered` are then as of the end of the submits. */
    async stop() {
      running = false;
      await loop;
      await sample();
      return seen;
    },
  };
}

/** The service as a process on its own fresh database; `marker` is appended to every prompt. */
async function serviceRun(mongo: TestMongo, dbName: string, marker: string, withReads: boolean) {
  const service: RunningService = await startService({
    MONGO_URL: mongo.uri,
    MONGO_DB: dbName,
    PROVIDER: 'sandbox',
    RATE_LIMIT_PER_MINUTE: '1000000000',
    LOG_LEVEL: 'warn',
    SANDBOX_IMAGE_MS,
    SANDBOX_VIDEO_MS,
    SANDBOX_RENDER_CONCURRENCY: RENDER_CONCURRENCY,
  });
  const observer = await connectMongo(mongo.uri, dbName);
  try {
    const admin = adminClient(service);
    const accounts: Account[] = [];
    for (let u = 0; u < USERS; u++) {
      const userId = await admin.createUser(`u${u}@bench.test`, CREDITS);
      accounts.push({ userId, token: (await admin.createKey(userId, ['image:write'])).apiKey });
    }
    const jobs: Array<{ id: string; token: string }> = [];
    const submit = async (account: Account, prompt: string) => {
      const response = await fetch(`${service.url}${IMAGE_PATH}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${account.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: `${prompt}${marker}`, num_images: 1, aspect_ratio: '1:1' }),
      });
      const text = await response.text();
      if (response.status !== 202) throw new Error(`submit answered ${response.status}: ${text}`);
      return (JSON.parse(text) as { job_id: string }).job_id;
    };
    await load(WARMUP, async (i) => void (await submit(accounts[i % USERS]!, `warm-up ${i}`)));
    const serial = await load(
      SERIAL_SUBMITS,
      async (i) => void (await submit(accounts[i % USERS]!, `serial ${i}`)),
      1,
    );
    const renders = watchRenders(observer, service.proc.child.pid!);
    const submits = await load(SUBMITS, async (i) => {
      const account = accounts[i % USERS]!;
      jobs[i] = { id: await submit(account, `bench image ${i}`), token: account.token };
    });
    const queue = await renders.stop();
    let reads: Stats | undefined;
    const readStatuses: Record<string, number> = {};
    // Renders still waiting when the reads begin (the reads compete with them, as the submits did).
    const pendingAtReads = await observer.db
      .collection('sandbox_requests')
      .countDocuments({ state: 'pending' });
    if (withReads) {
      reads = await load(READS, async (i) => {
        const job = jobs[i % jobs.length]!;
        const response = await fetch(`${service.url}/api/v1/jobs/${job.id}`, {
          headers: { authorization: `Bearer ${job.token}` },
        });
        const body = (await response.json()) as { status?: string };
        if (response.status !== 200 || !body.status) {
          throw new Error(`job read answered ${response.status}: ${JSON.stringify(body)}`);
        }
        readStatuses[body.status] = (readStatuses[body.status] ?? 0) + 1;
      });
    }
    // Warnings and errors the service logged (LOG_LEVEL warn): failed polls or renders would show here.
    const logged = (level: number) => service.lines.filter((l) => l.includes(`"level":${level}`)).length;
    return {
      serial,
      submits,
      queue,
      reads,
      readStatuses,
      pendingAtReads,
      warnings: logged(40),
      errors: logged(50),
    };
  } finally {
    await observer.close();
    await service.stop();
  }
}

const started = performance.now();
const mongo = await startMongo();
try {
  const loads = [load1()];
  const direct = await directRun(mongo);
  try {
    loads.push(load1());
    const idle = await serviceRun(mongo, 'bench_no_renders', ' [sandbox:hang]', false);
    loads.push(load1());
    const busy = await serviceRun(mongo, 'bench_renders', '', true);
    loads.push(load1());
    // On a quiet server (the service has stopped): a scale for the service's reads, not judged.
    const directReads = await direct.reads();

    const overhead = busy.submits.p50 - direct.submits.p50;
    const renderDelay = busy.submits.p50 - idle.submits.p50;
    const concurrency = Number(RENDER_CONCURRENCY);
    // Void unless renders really queued during the submits and never ran more than the limit at once.
    const rendersQueued = busy.queue.maxPending > concurrency && busy.queue.rendered > 0;
    const rendersBounded = busy.queue.maxFfmpeg <= concurrency && idle.queue.maxFfmpeg === 0;
    const overheadOk = overhead <= OVERHEAD_BUDGET_MS;
    const renderOk = renderDelay <= OVERHEAD_BUDGET_MS && rendersQueued && rendersBounded;
    console.log(
      `jobs (${CONCURRENCY} submitters, ${USERS} users, ${SUBMITS} image submits, fresh database per run on one ` +
        `jongodb, order direct → service without renders → service with renders): ` +
        `service submit→202 ${figures(busy.submits)}; direct driver ${figures(direct.submits)}; ` +
        `overhead ${overhead.toFixed(1)} ms [budget <= ${OVERHEAD_BUDGET_MS} ms: ` +
        `${verdict(overheadOk, `submit p50 <= direct p50 + ${OVERHEAD_BUDGET_MS} ms (${CONCURRENCY} submitters)`, `+${overhead.toFixed(1)} ms`)}]; ` +
        `without renders p50 ${idle.submits.p50.toFixed(1)} ms, renders add ${renderDelay.toFixed(1)} ms with up to ` +
        `${busy.queue.maxPending} queued [budget: <= ${OVERHEAD_BUDGET_MS} ms, renders queued, <= ${concurrency} ` +
        `ffmpeg at once: ${verdict(renderOk, `renders add <= ${OVERHEAD_BUDGET_MS} ms, queued, <= ${concurrency} ffmpeg at once`, `+${renderDelay.toFixed(1)} ms, max ${busy.queue.maxPending} queued, max ${busy.queue.maxFfmpeg} ffmpeg`)}]; job reads ${figures(busy.reads!)}`,
    );
    const serialOverhead = busy.serial.p50 - direct.serial.p50;
    const serialRenderDelay = busy.serial.p50 - idle.serial.p50;
    console.log(
      `  one submitter below saturation (${SERIAL_SUBMITS} submits each run, after the warm-up): service with ` +
        `renders ${figures(busy.serial)}; direct driver ${figures(direct.serial)}; overhead ` +
        `${serialOverhead.toFixed(1)} ms [budget <= ${OVERHEAD_BUDGET_MS} ms: ` +
        `${verdict(serialOverhead <= OVERHEAD_BUDGET_MS, `one submitter: p50 <= direct p50 + ${OVERHEAD_BUDGET_MS} ms`, `+${serialOverhead.toFixed(1)} ms`)}]; ` +
        `without renders ${figures(idle.serial)}, renders add ${serialRenderDelay.toFixed(1)} ms ` +
        `[budget <= ${OVERHEAD_BUDGET_MS} ms: ` +
        `${verdict(serialRenderDelay <= OVERHEAD_BUDGET_MS, `one submitter: renders add <= ${OVERHEAD_BUDGET_MS} ms`, `+${serialRenderDelay.toFixed(1)} ms`)}]`,
    );
    const tenths = (s: Stats) => s.tenths.map((v) => v.toFixed(0)).join(' ');
    console.log(
      `  submit p50 by tenth of the run, ms (collections grow left to right): direct ${tenths(direct.submits)}; ` +
        `service without renders ${tenths(idle.submits)}; service with renders ${tenths(busy.submits)}`,
    );
    console.log(
      `  service without renders submit→202 ${figures(idle.submits)}; ` +
        `submit phases ${direct.submits.seconds.toFixed(1)} / ${idle.submits.seconds.toFixed(1)} / ` +
        `${busy.submits.seconds.toFixed(1)} s (direct / without / with renders)`,
    );
    console.log(
      `  render queue (sandbox_requests, sampled every ${SAMPLE_EVERY_MS} ms during the submits): with renders ` +
        `max ${busy.queue.maxPending} pending, at the end ${busy.queue.pending} pending and ${busy.queue.rendered} ` +
        `rendered, at most ${busy.queue.maxFfmpeg} ffmpeg processes at once (SANDBOX_RENDER_CONCURRENCY ` +
        `${concurrency}); without renders at most ${idle.queue.maxFfmpeg} ffmpeg processes, ${idle.queue.rendered} ` +
        `rendered; service log lines: ${busy.warnings} warnings, ${busy.errors} errors with renders, ` +
        `${idle.warnings} warnings, ${idle.errors} errors without`,
    );
    console.log(
      `  job reads (${READS} GET /api/v1/jobs/<id>, ${CONCURRENCY} readers, ${busy.pendingAtReads} renders ` +
        `pending when they began): service ` +
        `${figures(busy.reads!)} (statuses read: ${JSON.stringify(busy.readStatuses)}); ` +
        `the same findOne directly ${figures(directReads)} (not judged)`,
    );
    console.log(
      `  load average (1 min) before each run and after: ${loads.join(' → ')}; whole benchmark ` +
        `${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
  } finally {
    await direct.close();
  }
} finally {
  await mongo.stop();
}
