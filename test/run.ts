// Runs the test suites (Node 20's --test does not expand globs, and cannot weigh one file against another):
//
//   tsx test/run.ts                  unit, integration and e2e (`npm run test:all`)
//   tsx test/run.ts --checks         the same with the type check and the lint beside them (`npm test`, after build)
//   tsx test/run.ts unit integration `npm run test:quick` (no build needed: nothing of it runs dist/)
//   tsx test/run.ts cluster          `npm run test:cluster`: 3-node clusters and 3 actor processes, minutes each
//   tsx test/run.ts chaos | fuzz     the chaos tests of a local cluster; the fuzz run of 10 000+ requests
//
// Jobs: each e2e, cluster, chaos and fuzz file runs in its own `node --test` process (it starts services, and a
// crash or a leftover must stay its own); the unit and integration files run in a few batches, each batch's
// files imported into one process (test/helpers/import-all.ts), as a process and a TypeScript loader per file
// cost more CPU than most of their tests. Jobs start longest first, as many at once as the cores carry: each job
// has a weight, the cores it keeps busy on average (its CPU time over its wall time, see PROFILES), and a job
// starts when the running weights leave room for it. Most e2e files wait on timers, sockets and renders far
// more than they compute, so three or four share 2 cores; one that keeps the machine busy (ffmpeg exports, the
// browser, 3 actor processes) shares it with light ones only, or runs alone. Each job runs in a process group of
// its own, ended when the job ends: what a failed file left running does not slow the rest down.
//
// Options: `--cores N` (or MF_TEST_CORES) the cores to fill (default: this machine's); `--serial` one job at a
// time. Each job's output is printed when it ends; a summary with every job's wall and CPU time closes the run,
// and MF_TEST_TIMINGS=<file> writes them as JSON (how the figures in PROFILES were measured).
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** A suite's files (whole folders and single files, less `except`), and how they run. */
interface Suite {
  folders?: string[];
  files?: string[];
  except?: string[];
  /** Run in this many processes, the files split between them (by PROFILES' wall), each process importing its share. */
  batches?: number;
  /** The weight of one batch. */
  batchCores?: number;
}

/**
 * Files that start several service nodes or actor processes: their own suite (`npm run test:cluster`, which CI
 * runs after `npm test`), so the default run stays within minutes on 2 cores.
 */
const CLUSTER_FILES = [
  'test/integration/actors/cluster.test.ts', // 3000 commands from 3 actor processes on jongodb: minutes
  'test/e2e/editor-cluster.test.ts', // 3 service nodes on one NATS
  'test/e2e/events-cluster.test.ts', // 3 service nodes on one NATS
  'test/e2e/jobs-cluster.test.ts', // 3 service nodes on one NATS
  'test/e2e/export-segments-cluster.test.ts', // cluster.sh: 3 NATS, 3 nodes encoding one export's segments
];

const SUITES: Record<string, Suite> = {
  unit: { folders: ['test/unit'], batches: 2, batchCores: 0.5 },
  integration: { folders: ['test/integration'], except: CLUSTER_FILES, batches: 6, batchCores: 0.5 },
  e2e: { folders: ['test/e2e'], except: CLUSTER_FILES },
  cluster: { folders: ['test/cluster'], files: CLUSTER_FILES },
  chaos: { folders: ['test/chaos'] },
  fuzz: { folders: ['test/fuzz'] },
};
const DEFAULT_SUITES = ['unit', 'integration', 'e2e'];

/**
 * What a file costs on the 2-core VM: `wall` seconds (the longest start first; in a batched suite, the split)
 * and `cores`, its weight: CPU time over wall time, rounded to 0.5 (1.5: ffmpeg or the browser on both cores, or
 * a file whose timing checks need the room; 2 runs alone). The e2e figures: MF_TEST_TIMINGS of a whole `npm test`
 * on a fresh clone on a quiet 2-core VM (wall as it runs beside others). Only a guide: a file not listed counts
 * as 10 s (2 s in a batch) on one core.
 */
const PROFILES: Record<string, { wall: number; cores?: number }> = {
  // unit (batched)
  'test/unit/audit-log.test.ts': { wall: 17 },
  'test/unit/event-fanout.test.ts': { wall: 4 },
  'test/unit/deploy-manifests.test.ts': { wall: 4 },
  'test/unit/sign-in.test.ts': { wall: 3 },
  // integration (batched)
  'test/integration/sandbox-render.test.ts': { wall: 74 },
  'test/integration/media-intake.test.ts': { wall: 61 },
  'test/integration/export-runner.test.ts': { wall: 58 },
  'test/integration/export-picture.test.ts': { wall: 45 },
  'test/integration/export-fast-path.test.ts': { wall: 38 },
  'test/integration/sandbox-provider.test.ts': { wall: 31 },
  'test/integration/asset-pictures.test.ts': { wall: 25 },
  'test/integration/export-probe.test.ts': { wall: 24 },
  'test/integration/probe-pool.test.ts': { wall: 22 },
  'test/integration/actors/nats-restart.test.ts': { wall: 15 },
  'test/integration/actors/jetstream.test.ts': { wall: 15 },
  'test/integration/mcp-endpoint.test.ts': { wall: 14 },
  'test/integration/mongo-editor.test.ts': { wall: 12 },
  'test/integration/mongo-jobs.test.ts': { wall: 12 },
  'test/integration/actors/in-process.test.ts': { wall: 11 },
  'test/integration/export-sound.test.ts': { wall: 12 },
  'test/integration/export-sound-mixing.test.ts': { wall: 30 },
  'test/integration/export-segments.test.ts': { wall: 15 },
  'test/integration/export-segment-farm.test.ts': { wall: 23 }, // waits out ack waits and pulls
  'test/integration/job-poll-queue.test.ts': { wall: 8 },
  'test/integration/mcp-tool-schemas.test.ts': { wall: 8 },
  'test/integration/job-sweeper.test.ts': { wall: 7 },
  'test/integration/tied-child.test.ts': { wall: 7 },
  'test/integration/scopes.test.ts': { wall: 7 },
  'test/integration/credit-ledger.test.ts': { wall: 6 },
  'test/integration/guarded-fetch.test.ts': { wall: 6 },
  // e2e
  'test/e2e/dashboard-budget-browser.test.ts': { wall: 79, cores: 0.5 }, // a rolling minute of waiting
  'test/e2e/mcp.test.ts': { wall: 50, cores: 0.5 },
  'test/e2e/agents-timeline-v2.test.ts': { wall: 16, cores: 1.5 }, // five scenes, three exports with effects
  'test/e2e/editor-timeline-v2.test.ts': { wall: 16, cores: 0.5 },
  'test/e2e/editor-concurrency.test.ts': { wall: 40, cores: 1.5 },
  'test/e2e/jobs-races.test.ts': { wall: 39, cores: 1 },
  'test/e2e/export-errors.test.ts': { wall: 37, cores: 1 },
  'test/e2e/webhooks-durable.test.ts': { wall: 37, cores: 1.5 },
  'test/e2e/signals.test.ts': { wall: 36, cores: 1 }, // an export must finish within the drain
  'test/e2e/export-sharing.test.ts': { wall: 34, cores: 1 },
  'test/e2e/webhooks.test.ts': { wall: 33, cores: 0.5 },
  'test/e2e/dashboard-browser.test.ts': { wall: 32, cores: 1 }, // the browser
  'test/e2e/dashboard-timeline-v2.test.ts': { wall: 10, cores: 1 }, // the browser and a preview export
  'test/e2e/dashboard-studio-timeline.test.ts': { wall: 14, cores: 1 }, // the browser
  'test/e2e/dashboard-studio-library.test.ts': { wall: 12, cores: 1 }, // the browser and a turn
  'test/e2e/dashboard-studio-preview.test.ts': { wall: 10, cores: 1 }, // the browser, OCR
  'test/e2e/dashboard-studio-live.test.ts': { wall: 12, cores: 1 }, // the browser, two tabs and two turns
  'test/e2e/admin-cli.test.ts': { wall: 30, cores: 1.5 },
  'test/e2e/jobs-restart.test.ts': { wall: 27, cores: 0.5 },
  'test/e2e/llm-agent.test.ts': { wall: 23, cores: 0.5 },
  'test/e2e/sign-in.test.ts': { wall: 23, cores: 0.5 },
  'test/e2e/export.test.ts': { wall: 20, cores: 1.5 },
  'test/e2e/lifecycle.test.ts': { wall: 19, cores: 0.5 },
  'test/e2e/events.test.ts': { wall: 18, cores: 1 },
  'test/e2e/asset-pictures.test.ts': { wall: 7, cores: 1 },
  'test/e2e/export-effects.test.ts': { wall: 9, cores: 1 },
  'test/e2e/export-segments.test.ts': { wall: 20, cores: 1.5 }, // two services' exports, PSNR of every frame
  'test/e2e/jobs-inputs.test.ts': { wall: 15, cores: 0.5 },
  'test/e2e/agent-contract.test.ts': { wall: 14, cores: 0.5 },
  'test/e2e/editor-media.test.ts': { wall: 12, cores: 1.5 },
  'test/e2e/jobs.test.ts': { wall: 12, cores: 1 },
  'test/e2e/dashboard-api.test.ts': { wall: 10, cores: 0.5 },
  'test/e2e/production-install.test.ts': { wall: 10, cores: 1 },
  'test/e2e/audit.test.ts': { wall: 9, cores: 0.5 },
  'test/e2e/mcp-oauth.test.ts': { wall: 9, cores: 0.5 },
  'test/e2e/media.test.ts': { wall: 9, cores: 0.5 },
  'test/e2e/dashboard-budget.test.ts': { wall: 8, cores: 1 },
  'test/e2e/director-export.test.ts': { wall: 8, cores: 1.5 },
  'test/e2e/editor-bounds.test.ts': { wall: 8, cores: 1.5 },
  'test/e2e/admin-api.test.ts': { wall: 7, cores: 1 },
  'test/e2e/media-limits.test.ts': { wall: 7, cores: 1 },
  'test/e2e/readme-events-client.test.ts': { wall: 7, cores: 0.5 },
  'test/e2e/editor-edits.test.ts': { wall: 6, cores: 1 },
  'test/e2e/webhooks-egress.test.ts': { wall: 6, cores: 0.5 },
  'test/e2e/sign-up-and-links.test.ts': { wall: 5, cores: 1 },
  'test/e2e/admin-passwords.test.ts': { wall: 4, cores: 0.5 },
  'test/e2e/cluster-mode.test.ts': { wall: 4, cores: 0.5 },
  'test/e2e/editor.test.ts': { wall: 4, cores: 1 },
  'test/e2e/fuzz.test.ts': { wall: 4, cores: 1.5 },
  'test/e2e/mcp-inspector.test.ts': { wall: 4, cores: 1.5 },
  'test/e2e/openapi.test.ts': { wall: 4, cores: 1 },
  'test/e2e/rate-limit.test.ts': { wall: 4, cores: 0.5 },
  'test/e2e/auth.test.ts': { wall: 3, cores: 2 },
  // cluster
  'test/integration/actors/cluster.test.ts': { wall: 270, cores: 1 }, // one core of jongodb and 3 node processes; asks wait up to 120 s
  'test/e2e/editor-cluster.test.ts': { wall: 46, cores: 1 },
  'test/e2e/jobs-cluster.test.ts': { wall: 36, cores: 1 },
  'test/e2e/events-cluster.test.ts': { wall: 34, cores: 1.5 },
  'test/e2e/export-segments-cluster.test.ts': { wall: 33, cores: 2 }, // 10 s of it the ack wait after a kill
  'test/cluster/cluster.test.ts': { wall: 23, cores: 1.5 }, // 3 NATS servers and 3 nodes, detached (not measured)
  // chaos and fuzz: minutes of load on the whole machine
  'test/chaos/chaos.test.ts': { wall: 600, cores: 2 },
  'test/fuzz/fuzz.test.ts': { wall: 300, cores: 2 },
};

/**
 * `--checks` (`npm test`): the type check and the lint run as jobs beside the tests. Each keeps one core busy for
 * a minute or so, CPU time the tests' waits leave free.
 */
const CHECKS = [
  { name: 'npm run typecheck', command: ['npm', 'run', '--silent', 'typecheck'], wall: 60, cores: 1 },
  { name: 'npm run lint', command: ['npm', 'run', '--silent', 'lint'], wall: 35, cores: 1 },
];

// A job's whole run must end within this; a test in a file of its own, within TEST_TIMEOUT_MS (the longest, the
// 3000 actor commands of test/integration/actors/cluster.test.ts, declares 400 s itself).
const JOB_TIMEOUT_MS = 900_000;
const TEST_TIMEOUT_MS = 420_000;

interface Job {
  name: string;
  /** The command and its arguments. */
  command: string[];
  wall: number;
  cores: number;
}

interface Outcome {
  job: Job;
  code: number | null;
  signal: NodeJS.Signals | null;
  wallS: number;
  cpuS: number;
  output: string;
}

function testFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((entry) => {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) return testFiles(path);
      return entry.endsWith('.test.ts') ? [path] : [];
    });
}

function suiteFiles(suite: Suite): string[] {
  const fromFolders = (suite.folders ?? []).flatMap((folder) =>
    testFiles(join(root, folder)).map((file) => relative(root, file)),
  );
  const except = new Set(suite.except ?? []);
  return [...new Set([...fromFolders, ...(suite.files ?? [])])].filter((file) => !except.has(file));
}

function parseArgs(argv: string[]) {
  const suites: string[] = [];
  let cores = Number(process.env.MF_TEST_CORES ?? availableParallelism());
  let serial = false;
  let checks = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--serial') serial = true;
    else if (arg === '--checks') checks = true;
    else if (arg === '--cores') cores = Number(argv[++i]);
    else if (arg.startsWith('--cores=')) cores = Number(arg.slice('--cores='.length));
    else if (SUITES[arg]) suites.push(arg);
    else {
      console.error(`unknown argument ${arg}: suites are ${Object.keys(SUITES).join(', ')}`);
      process.exit(2);
    }
  }
  if (!(cores > 0)) {
    console.error('--cores takes a positive number');
    process.exit(2);
  }
  return { suites: suites.length > 0 ? suites : DEFAULT_SUITES, cores, serial, checks };
}

/** `files` split into `count` shares of about equal wall time (the longest placed first, each on the lightest). */
function split(files: string[], count: number): string[][] {
  const shares = Array.from({ length: Math.min(count, files.length) }, () => ({
    wall: 0,
    files: [] as string[],
  }));
  const wall = (file: string) => PROFILES[file]?.wall ?? 2;
  for (const file of [...files].sort((a, b) => wall(b) - wall(a) || a.localeCompare(b))) {
    const lightest = shares.reduce((a, b) => (b.wall < a.wall ? b : a));
    lightest.wall += wall(file);
    lightest.files.push(file);
  }
  // Each share in name order: its output reads like the folder's.
  return shares.map((share) => share.files.sort());
}

function jobsOf(suites: string[], cores: number, checks: boolean): Job[] {
  const jobs: Job[] = checks ? [...CHECKS] : [];
  for (const name of suites) {
    const suite = SUITES[name]!;
    const files = suiteFiles(suite);
    if (suite.batches) {
      for (const [i, share] of split(files, suite.batches).entries())
        jobs.push({
          name: `${name} ${i + 1}/${suite.batches} (${share.length} files)`,
          command: [
            process.execPath,
            '--import',
            'tsx',
            '--test-reporter=spec',
            join(root, 'test/helpers/import-all.ts'),
            ...share,
          ],
          wall: share.reduce((sum, file) => sum + (PROFILES[file]?.wall ?? 2), 0),
          cores: Math.min(cores, suite.batchCores ?? 1),
        });
      continue;
    }
    for (const file of files)
      jobs.push({
        name: file,
        command: [
          process.execPath,
          '--import',
          'tsx',
          '--test',
          '--test-reporter=spec',
          `--test-timeout=${TEST_TIMEOUT_MS}`,
          file,
        ],
        wall: PROFILES[file]?.wall ?? 10,
        cores: Math.min(cores, PROFILES[file]?.cores ?? 1),
      });
  }
  // Longest first: the long jobs overlap the rest instead of ending the run alone.
  return jobs.sort((a, b) => b.wall - a.wall || a.name.localeCompare(b.name));
}

/** CPU time of this process's reaped children so far, in seconds (Linux; 0 elsewhere). */
function childrenCpuS(): number {
  try {
    // /proc/self/stat: fields after the command's closing parenthesis; cutime and cstime are the 14th and 15th.
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return 0;
  }
}

/** Children's CPU time already put down to a job. */
let cpuSeen = childrenCpuS();

/** Process groups of the running jobs (each job leads its own, so whatever it leaves behind can be ended). */
const groups = new Set<number>();

/**
 * Ends what a job left running in its process group (a service whose test timed out before its `after` hook, an
 * ffmpeg of a killed service): a leftover would slow every later job down. Returns what it ended.
 */
function endGroup(pgid: number): string[] {
  const left = spawnSync('ps', ['-o', 'pid=,args=', '-g', String(pgid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.endsWith('<defunct>'));
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // Nothing left.
  }
  return left;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    for (const pgid of groups) endGroup(pgid);
    process.exit(130);
  });

function runJob(job: Job): Promise<Outcome> {
  const started = performance.now();
  const [command, ...args] = job.command;
  const child = spawn(command!, args, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, FORCE_COLOR: '0' },
    detached: true, // its own process group
  });
  const pgid = child.pid!;
  groups.add(pgid);
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
  const killer = setTimeout(() => {
    chunks.push(Buffer.from(`\n${job.name}: still running after ${JOB_TIMEOUT_MS / 1000} s: stopped\n`));
    child.kill('SIGTERM');
    setTimeout(() => endGroup(pgid), 10_000).unref();
  }, JOB_TIMEOUT_MS);
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      // Read at once: the CPU of the child just reaped (two ending in one tick share their sum).
      const total = childrenCpuS();
      const cpuS = total - cpuSeen;
      cpuSeen = total;
      clearTimeout(killer);
      groups.delete(pgid);
      const left = endGroup(pgid);
      if (left.length > 0)
        chunks.push(
          Buffer.from(
            `\n${job.name} left ${left.length} processes running, ended:\n  ${left.join('\n  ')}\n`,
          ),
        );
      const wallS = (performance.now() - started) / 1000;
      child.once('close', () =>
        resolve({ job, code, signal, wallS, cpuS, output: Buffer.concat(chunks).toString('utf8') }),
      );
    });
  });
}

function report(outcome: Outcome, runningNow: number) {
  const how = outcome.code === 0 ? 'ok' : `FAILED (exit ${outcome.code ?? outcome.signal})`;
  const figures = `${outcome.wallS.toFixed(1)} s, CPU ${outcome.cpuS.toFixed(1)} s`;
  console.log(`\n━━ ${outcome.job.name}: ${how} (${figures}; ${runningNow} running)`);
  process.stdout.write(outcome.output.endsWith('\n') ? outcome.output : `${outcome.output}\n`);
}

const { suites, cores, serial, checks } = parseArgs(process.argv.slice(2));
const queue = jobsOf(suites, cores, checks);
const startedAt = performance.now();
const outcomes: Outcome[] = [];
const running = new Set<Job>();
console.log(
  `test/run.ts: ${checks ? 'typecheck, lint, ' : ''}${suites.join(', ')}: ${queue.length} jobs on ${cores} cores` +
    `${serial ? ', one at a time' : ''}`,
);

await new Promise<void>((done) => {
  const load = () => [...running].reduce((sum, job) => sum + job.cores, 0);
  const fits = (job: Job) => running.size === 0 || (!serial && load() + job.cores <= cores + 1e-9);
  const next = () => {
    // The longest waiting job that fits beside the running ones (a lighter one may fill a gap).
    for (let i = 0; i < queue.length;) {
      const job = queue[i]!;
      if (!fits(job)) {
        i++;
        continue;
      }
      queue.splice(i, 1);
      running.add(job);
      void runJob(job).then((outcome) => {
        running.delete(job);
        outcomes.push(outcome);
        report(outcome, running.size);
        next();
      });
    }
    if (running.size === 0 && queue.length === 0) done();
  };
  next();
});

const wallS = (performance.now() - startedAt) / 1000;
const failed = outcomes.filter((outcome) => outcome.code !== 0);
const byWall = [...outcomes].sort((a, b) => b.wallS - a.wallS);
const cpuS = outcomes.reduce((sum, outcome) => sum + outcome.cpuS, 0);
console.log(`\n━━ summary: ${checks ? 'typecheck, lint, ' : ''}${suites.join(', ')}`);
for (const outcome of byWall)
  console.log(
    `  ${outcome.wallS.toFixed(1).padStart(6)} s  CPU ${outcome.cpuS.toFixed(1).padStart(6)} s  ` +
      `${outcome.code === 0 ? '  ' : '✖ '}${outcome.job.name}`,
  );
console.log(
  `  ${outcomes.length} jobs, ${failed.length} failed; wall ${wallS.toFixed(0)} s, CPU ${cpuS.toFixed(0)} s ` +
    `(${(cpuS / wallS).toFixed(2)} cores on average)`,
);
for (const outcome of failed) console.log(`  FAILED: ${outcome.job.name}`);
if (process.env.MF_TEST_TIMINGS) {
  const timings = Object.fromEntries(
    byWall.map((o) => [o.job.name, { wall: +o.wallS.toFixed(1), cpu: +o.cpuS.toFixed(1), ok: o.code === 0 }]),
  );
  writeFileSync(
    process.env.MF_TEST_TIMINGS,
    `${JSON.stringify({ suites, cores, wallS, timings }, null, 2)}\n`,
  );
}
process.exit(failed.length > 0 ? 1 : 0);
