// The same mixed load on 1 service node versus 3, on this machine (docs/deploy.md). Both runs use the local
// cluster of deploy/local/cluster.sh with the same 3-node NATS cluster (JetStream, 3 replicas) and one jongodb:
// only the service tier changes (MF_CLUSTER_NODES=1, then 3). On a 2-core machine three nodes cannot be faster
// than one; what this shows is the cluster's overhead: throughput, p50/p99 and CPU per request.
//
// Load: CONCURRENCY closed-loop callers (the same in both runs), each with its own project and one of USERS
// users, spread round-robin over the nodes; each call is picked from a fixed mix (seeded, the same sequence in
// both runs): GET /api/v1/account, GET /api/v1/models, POST image jobs (sandbox, SANDBOX_IMAGE_MS short, a
// real ffmpeg render each), GET /api/v1/jobs/<id> of a recent job, and direct edits (rename the project,
// move a clip) that go through the project actor. CPU is read from /proc/<pid>/stat (utime+stime of each
// process, plus its reaped children — the sandbox's ffmpeg renders — for the service nodes) over the measured
// window only, and divided by the calls completed in it; NATS and jongodb are shown separately, as is the
// load generator (this process).
//
// BENCH_SECONDS (measured window, default 25) and BENCH_CONCURRENCY (default 24) change the run.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { startLocalCluster, type LocalCluster } from '../helpers/local-cluster.ts';
import { adminClient } from '../helpers/service.ts';
import { makeMedia } from '../helpers/editor.ts';
import { load1, percentile, verdict } from '../helpers/bench.ts';
import { seededRandom } from '../helpers/random.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 25);
const WARMUP_SECONDS = 5;
const IDLE_SECONDS = 4;
const SERIAL_CALLS = 20;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 24);
const USERS = 6;
const CLIPS = 3;
const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
const ENV = {
  SANDBOX_IMAGE_MS: '100',
  SANDBOX_VIDEO_MS: '300',
  PROVIDER_POLL_INTERVAL_MS: '200',
  RATE_LIMIT_PER_MINUTE: '10000000',
  LOG_LEVEL: 'warn',
};

type Op = 'account' | 'models' | 'submit' | 'poll' | 'rename' | 'move';
/** The mix, in parts of 100. */
const MIX: [Op, number][] = [
  ['account', 30],
  ['models', 15],
  ['submit', 5],
  ['poll', 25],
  ['rename', 12],
  ['move', 13],
];

function pick(r: number): Op {
  let acc = 0;
  for (const [op, parts] of MIX) {
    acc += parts / 100;
    if (r < acc) return op;
  }
  return MIX.at(-1)![0];
}

/** CPU seconds of a process: its own, and its reaped children's (utime+stime, cutime+cstime). */
function cpuOf(pid: number): { self: number; children: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state): utime is field 14 → index 11
    const n = (i: number) => Number(fields[i]) / TICKS;
    return { self: n(11) + n(12), children: n(13) + n(14) };
  } catch {
    return { self: 0, children: 0 };
  }
}

interface Caller {
  token: string;
  projectId: string;
  clipIds: string[];
  jobs: string[];
}

interface RunResult {
  label: string;
  nodes: number;
  calls: number;
  errors: number;
  errorSamples: string[];
  seconds: number;
  latencies: Map<Op | 'all', number[]>;
  cpu: { service: number; serviceChildren: number; nats: number; mongo: number; generator: number };
  /** CPU seconds per second with no load at all. */
  idle: { service: number; nats: number; mongo: number };
  /** Latencies of one caller alone, before the load. */
  serial: Map<Op, number[]>;
}

async function send(
  base: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> | undefined }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

async function setUp(cluster: LocalCluster): Promise<Caller[]> {
  const urls = cluster.nodes.map((node) => node.url);
  const admin = adminClient({ url: urls[0]!, adminToken: cluster.adminToken });
  const tokens: string[] = [];
  for (let u = 0; u < USERS; u++) {
    const userId = await admin.createUser(`bench${u}-${Date.now()}@bench.test`, 10_000_000);
    const key = await admin.createKey(userId, [
      'image:write',
      'video:write',
      'video-editor:read',
      'video-editor:write',
    ]);
    tokens.push(key.apiKey);
  }
  const png = makeMedia('png', { colour: 'blue' });
  const callers: Caller[] = [];
  for (let c = 0; c < CONCURRENCY; c++) {
    const token = tokens[c % USERS]!;
    const base = urls[c % urls.length]!;
    const created = await send(base, 'POST', '/api/v1/media-studio/projects', token, { name: `bench ${c}` });
    if (created.status !== 200)
      throw new Error(`create project: ${created.status} ${JSON.stringify(created.json)}`);
    const projectId = (created.json!.project as { id: string }).id;
    const uploaded = await fetch(`${base}/api/v1/media-studio/projects/${projectId}/assets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'image/png' },
      body: png,
    });
    const asset = (await uploaded.json()) as { asset?: { id: string } };
    if (uploaded.status !== 200) throw new Error(`upload: ${uploaded.status} ${JSON.stringify(asset)}`);
    const clipIds: string[] = [];
    for (let i = 0; i < CLIPS; i++) {
      const clip = await send(base, 'POST', `/api/v1/media-studio/projects/${projectId}/clips`, token, {
        track: 'video',
        asset_id: asset.asset!.id,
        duration_sec: 1,
      });
      if (clip.status !== 200) throw new Error(`add clip: ${clip.status} ${JSON.stringify(clip.json)}`);
      clipIds.push((clip.json!.clip as { id: string }).id);
    }
    callers.push({ token, projectId, clipIds, jobs: [] });
  }
  return callers;
}

/** One call of the mix by `caller` on `base`; resolves with the HTTP status. */
async function call(op: Op, caller: Caller, base: string, r: number, n: number): Promise<number> {
  const project = `/api/v1/media-studio/projects/${caller.projectId}`;
  switch (op) {
    case 'account':
      return (await send(base, 'GET', '/api/v1/account', caller.token)).status;
    case 'models':
      return (await send(base, 'GET', '/api/v1/models', caller.token)).status;
    case 'submit': {
      const answer = await send(base, 'POST', '/api/v1/image/nano-banana/generate', caller.token, {
        prompt: `bench ${n}`,
      });
      if (answer.status === 202) {
        caller.jobs.push(answer.json!.job_id as string);
        if (caller.jobs.length > 8) caller.jobs.shift();
      }
      return answer.status;
    }
    case 'poll': {
      const jobId = caller.jobs[Math.floor(r * caller.jobs.length)];
      if (!jobId) return (await send(base, 'GET', '/api/v1/account', caller.token)).status;
      return (await send(base, 'GET', `/api/v1/jobs/${jobId}`, caller.token)).status;
    }
    case 'rename':
      return (await send(base, 'PATCH', project, caller.token, { name: `bench ${n}` })).status;
    case 'move': {
      const clipId = caller.clipIds[n % CLIPS]!;
      return (
        await send(base, 'PATCH', `${project}/clips/${clipId}`, caller.token, { idx: Math.floor(r * CLIPS) })
      ).status;
    }
  }
}

async function runOnce(nodeCount: number): Promise<RunResult> {
  const label =
    nodeCount === 1
      ? '1 service node (same 3-node NATS cluster and jongodb: only the service tier changes)'
      : `${nodeCount} service nodes (3-node NATS cluster, one jongodb)`;
  const cluster = await startLocalCluster({ nodes: nodeCount, natsNodes: 3, env: ENV });
  try {
    const callers = await setUp(cluster);
    const urls = cluster.nodes.map((node) => node.url);
    const latencies = new Map<Op | 'all', number[]>([['all', []]]);
    let errors = 0;
    const errorSamples: string[] = [];
    let measuring = false;
    let stop = false;
    let counter = 0;

    const worker = async (c: number) => {
      const caller = callers[c]!;
      const draw = seededRandom(1000 + c);
      while (!stop) {
        const n = counter++;
        const op = pick(draw());
        const base = urls[n % urls.length]!;
        const started = performance.now();
        let status: number;
        try {
          status = await call(op, caller, base, draw(), n);
        } catch (error) {
          status = 0;
          if (errorSamples.length < 5) errorSamples.push(`${op}: ${(error as Error).message}`);
        }
        const ms = performance.now() - started;
        if (!measuring) continue;
        if (status !== 200 && status !== 202) {
          errors++;
          if (errorSamples.length < 5 && status !== 0) errorSamples.push(`${op}: HTTP ${status}`);
        }
        latencies.get('all')!.push(ms);
        if (!latencies.has(op)) latencies.set(op, []);
        latencies.get(op)!.push(ms);
      }
    };
    const servicePids = cluster.nodes.map((node) => node.pid);
    const natsPids = cluster.nats.map((node) => node.pid);
    const sum = (pids: number[], which: 'self' | 'children') =>
      pids.reduce((total, pid) => total + cpuOf(pid)[which], 0);
    const read = () => ({
      service: sum(servicePids, 'self'),
      serviceChildren: sum(servicePids, 'children'),
      nats: sum(natsPids, 'self'),
      mongo: cpuOf(cluster.mongo.pid).self,
      generator: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
    });

    // The cluster at rest (after the set-up's work settled): what it costs with no request at all.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idleBefore = read();
    await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
    const idleAfter = read();
    const idle = {
      service: (idleAfter.service - idleBefore.service) / IDLE_SECONDS,
      nats: (idleAfter.nats - idleBefore.nats) / IDLE_SECONDS,
      mongo: (idleAfter.mongo - idleBefore.mongo) / IDLE_SECONDS,
    };

    // One caller alone (below any load): what a read and an edit through the project actor take by themselves.
    const serial = new Map<Op, number[]>([
      ['account', []],
      ['rename', []],
    ]);
    for (let i = 0; i < SERIAL_CALLS; i++) {
      for (const op of ['account', 'rename'] as const) {
        const t = performance.now();
        await call(op, callers[0]!, urls[i % urls.length]!, 0, i);
        serial.get(op)!.push(performance.now() - t);
      }
    }

    const workers = Array.from({ length: CONCURRENCY }, (_, c) => worker(c));
    await new Promise((resolve) => setTimeout(resolve, WARMUP_SECONDS * 1000));
    const before = read();
    const t0 = performance.now();
    measuring = true;
    await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
    measuring = false;
    const seconds = (performance.now() - t0) / 1000;
    const after = read();
    stop = true;
    await Promise.all(workers);
    const calls = latencies.get('all')!.length;
    return {
      label,
      nodes: nodeCount,
      calls,
      errors,
      errorSamples,
      seconds,
      latencies,
      idle,
      serial,
      cpu: {
        service: after.service - before.service,
        serviceChildren: after.serviceChildren - before.serviceChildren,
        nats: after.nats - before.nats,
        mongo: after.mongo - before.mongo,
        generator: after.generator - before.generator,
      },
    };
  } finally {
    await cluster.down();
  }
}

const fmt = (values: number[] | undefined) => {
  if (!values || values.length === 0) return 'none';
  const sorted = [...values].sort((a, b) => a - b);
  return `p50 ${percentile(sorted, 0.5).toFixed(1)} p99 ${percentile(sorted, 0.99).toFixed(1)} ms (${values.length})`;
};

function report(run: RunResult) {
  const rate = run.calls / run.seconds;
  const perCall = (cpuSeconds: number) => ((cpuSeconds * 1000) / run.calls).toFixed(2);
  console.log(
    `  ${run.label}: ${rate.toFixed(0)} requests/s over ${run.seconds.toFixed(1)} s, all ${fmt(run.latencies.get('all'))}, ` +
      `${run.errors} errors${run.errorSamples.length ? ` (${run.errorSamples.join('; ')})` : ''}`,
  );
  console.log(
    `    CPU per request: service ${perCall(run.cpu.service)} ms (+ ${perCall(run.cpu.serviceChildren)} ms in ffmpeg renders), ` +
      `nats-server ×3 ${perCall(run.cpu.nats)} ms, jongodb ${perCall(run.cpu.mongo)} ms, load generator ` +
      `${perCall(run.cpu.generator)} ms; total ${perCall(
        run.cpu.service + run.cpu.serviceChildren + run.cpu.nats + run.cpu.mongo + run.cpu.generator,
      )} ms (${(
        (run.cpu.service + run.cpu.serviceChildren + run.cpu.nats + run.cpu.mongo + run.cpu.generator) /
        run.seconds
      ).toFixed(2)} cores busy)`,
  );
  console.log(
    `    at rest (no requests, ${IDLE_SECONDS} s): service ${(run.idle.service * 1000).toFixed(0)} ms CPU/s, ` +
      `nats-server ×3 ${(run.idle.nats * 1000).toFixed(0)} ms/s, jongodb ${(run.idle.mongo * 1000).toFixed(0)} ms/s; ` +
      `one caller alone: account ${fmt(run.serial.get('account'))}, rename (project actor) ${fmt(run.serial.get('rename'))}`,
  );
  console.log(`    by call: ${MIX.map(([op]) => `${op} ${fmt(run.latencies.get(op))}`).join('; ')}`);
}

const started = performance.now();
const loads = [load1()];
const one = await runOnce(1);
loads.push(load1());
const three = await runOnce(3);
loads.push(load1());

const rate = (run: RunResult) => run.calls / run.seconds;
/**
 * Server CPU per request: the service nodes, NATS and jongodb. The sandbox's ffmpeg renders are left out of it
 * (shown per run): they are counted when reaped, and one node renders 2 at a time while three render 6, so the
 * backlog left at the end of the window differs between the runs.
 */
const cpuPerCall = (run: RunResult) => ((run.cpu.service + run.cpu.nats + run.cpu.mongo) * 1000) / run.calls;
const p99 = (run: RunResult) =>
  percentile(
    [...run.latencies.get('all')!].sort((a, b) => a - b),
    0.99,
  );
console.log(
  `cluster (the same mixed load, ${CONCURRENCY} closed-loop callers, ${USERS} users, one project each caller, ` +
    `mix ${MIX.map(([op, parts]) => `${op} ${parts}%`).join(' ')}, ${SECONDS} s measured after ${WARMUP_SECONDS} s ` +
    `warm-up, on ${(await import('node:os')).cpus().length} CPUs): 3 nodes vs 1 node: throughput ` +
    `${((rate(three) / rate(one)) * 100).toFixed(0)} %, p99 ${p99(three).toFixed(1)} vs ${p99(one).toFixed(1)} ms, ` +
    `server CPU per request (service + NATS + jongodb, renders apart) ${cpuPerCall(three).toFixed(2)} vs ${cpuPerCall(one).toFixed(2)} ms ` +
    `(+${(((cpuPerCall(three) - cpuPerCall(one)) / cpuPerCall(one)) * 100).toFixed(0)} %) ` +
    `[every request answered 200/202 in both runs: ${verdict(one.errors === 0 && three.errors === 0, 'every request answered 200/202 on 1 and on 3 nodes', `${one.errors} and ${three.errors} errors`)}]`,
);
report(one);
report(three);
console.log(
  `  load average (1 min) before each run and after: ${loads.join(' → ')}; whole benchmark ` +
    `${((performance.now() - started) / 1000).toFixed(0)} s`,
);
process.exit(one.errors === 0 && three.errors === 0 ? 0 : 1);
