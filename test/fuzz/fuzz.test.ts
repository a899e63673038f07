// The fuzz run (`npm run test:fuzz`): the service as a process in embedded mode on loopback, and a seeded corpus
// of at least 10 000 hostile requests over every route family — jobs, the editor (clips with hostile numbers,
// turns), exports of the timelines the corpus fuzzed, uploads and imports (the pixel bomb among them), the admin
// API, the dashboard (session API, pages, its bearer token), OAuth and MCP. Every answer is below 500, every
// request answers before its deadline (no hang), every /api error is `{ error }`, the service stays healthy,
// and its resident memory after a full GC ends within 20 % of what it was after the warm-up.
//
// Deterministic: MF_FUZZ_SEED fixes the corpus and every failure names the seed and the case; MF_FUZZ_REQUESTS
// sets the main run's size (default 10 000).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startService, type RunningService } from '../helpers/service.ts';
import { prng, type Random } from '../helpers/fuzz-values.ts';
import { FAMILIES, run, Tally, type FuzzCase } from './harness.ts';
import { settledRss, inspectorUrl } from './memory.ts';
import { makeWorld, type World } from './world.ts';
import { editorCase, exportCase, jobsCase, uploadCase } from './corpus-api.ts';
import { adminCase, dashboardCase, mcpCase, oauthCase, otherCase } from './corpus-web.ts';

const SEED = Number(process.env.MF_FUZZ_SEED ?? 20_261_127);
const REQUESTS = Number(process.env.MF_FUZZ_REQUESTS ?? 10_000);
const WARM_UP = 600;
const CONCURRENCY = 8;
/** One export per this many cases: each really encodes, so they are few and spread over the run. */
const EXPORT_EVERY = 250;
const MEMORY_GROWTH_LIMIT = 1.2;

/** How often each family is drawn (exports are placed separately). */
const WEIGHTS: Array<[number, (random: Random, world: World, index: number) => FuzzCase]> = [
  [15, jobsCase],
  [20, editorCase],
  [8, uploadCase],
  [12, adminCase],
  [14, dashboardCase],
  [10, oauthCase],
  [13, mcpCase],
  [8, otherCase],
];
const TOTAL_WEIGHT = WEIGHTS.reduce((sum, [weight]) => sum + weight, 0);

function corpus(random: Random, world: World, count: number, offset: number): FuzzCase[] {
  return Array.from({ length: count }, (_, n) => {
    const index = offset + n;
    if (index % EXPORT_EVERY === EXPORT_EVERY - 1) return exportCase(random, world, index);
    let roll = random.int(TOTAL_WEIGHT);
    for (const [weight, make] of WEIGHTS) {
      if (roll < weight) return make(random, world, index);
      roll -= weight;
    }
    throw new Error('unreachable');
  });
}

describe(`fuzzing every route family (seed ${SEED}, ${REQUESTS} requests)`, () => {
  let service: RunningService;
  let world: World;

  before(async () => {
    service = await startService({
      NODE_OPTIONS: '--inspect=127.0.0.1:0',
      LOG_LEVEL: 'error',
      RATE_LIMIT_PER_MINUTE: '10000000',
      AUTH_FAILURES_PER_MINUTE: '10000000',
      DASHBOARD_RATE_PER_MINUTE: '10000000',
      EXPORT_RATE_PER_MINUTE: '30',
      TIMELINE_MAX_SEC: '30',
      UPLOAD_MAX_BYTES: String(2 * 1024 * 1024),
      SANDBOX_IMAGE_MS: '200',
      SANDBOX_VIDEO_MS: '300',
      PROVIDER_POLL_INTERVAL_MS: '200',
      SIGNUP: 'open',
    });
    world = await makeWorld(service);
  });
  after(async () => {
    await service?.stop();
  });

  it('answers every request below 500 and in time, and gives its memory back', async (t) => {
    const random = prng(SEED);
    const pid = service.proc.child.pid!;
    const inspector = inspectorUrl(service.lines);

    await run(service.url, corpus(random, world, WARM_UP, 0), { seed: SEED, concurrency: CONCURRENCY });
    const before = await settledRss(pid, inspector);

    const tally = new Tally();
    const started = performance.now();
    await run(service.url, corpus(random, world, REQUESTS, WARM_UP), {
      seed: SEED,
      concurrency: CONCURRENCY,
      tally,
    });
    const seconds = (performance.now() - started) / 1000;

    // What the rich user got accepted hangs in the sandbox: cancel it (another route under test).
    const jobs = await fetch(`${service.url}/api/v1/jobs?limit=100&status=processing`, {
      headers: { authorization: `Bearer ${world.rich.token}` },
    });
    for (const job of ((await jobs.json()) as { jobs: Array<{ job_id: string }> }).jobs) {
      const cancelled = await fetch(`${service.url}/api/v1/jobs/${job.job_id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${world.rich.token}` },
      });
      assert.ok(
        cancelled.status === 200 || cancelled.status === 409,
        `cancel ${job.job_id}: ${cancelled.status}`,
      );
    }
    const after = await settledRss(pid, inspector);
    const health = await fetch(`${service.url}/healthz`);

    const mib = (bytes: number) => (bytes / 1048576).toFixed(1);
    const figures =
      `seed ${SEED}: ${tally.requests} requests in ${seconds.toFixed(1)} s (${(tally.requests / seconds).toFixed(0)}/s); ` +
      `slowest ${tally.slowest.ms.toFixed(0)} ms (${tally.slowest.label}); RSS after GC ${mib(before)} MiB → ${mib(after)} MiB ` +
      `(${((after / before - 1) * 100).toFixed(1)} %); ${tally}`;
    t.diagnostic(figures);
    console.log(`fuzz: ${figures}`);

    assert.equal(health.status, 200, 'the service is still healthy');
    assert.ok(tally.requests >= REQUESTS, `${tally.requests} requests`);
    for (const family of FAMILIES) assert.ok(tally.count(family) > 0, `the corpus reached ${family}`);
    // The corpus gets past validation too, in the families where that means work.
    for (const family of ['editor', 'export', 'uploads', 'dashboard', 'mcp', 'oauth'] as const) {
      assert.ok(
        tally.count(family, (status) => status < 300) > 0,
        `${family}: some requests succeeded: ${tally}`,
      );
    }
    assert.ok(after <= before * MEMORY_GROWTH_LIMIT, `RSS grew from ${mib(before)} to ${mib(after)} MiB`);
  });
});
