// Runs the test suites (Node 20's --test does not expand globs, and cannot weigh one file against another):
//
//   tsx test/run.ts                  unit, integration and e2e: what `npm test` runs after build, typecheck, lint
//   tsx test/run.ts unit integration `npm run test:quick` (no build needed: nothing of it runs dist/)
//   tsx test/run.ts cluster          `npm run test:cluster`: 3-node clusters, 3 actor processes, minutes each
//   tsx test/run.ts chaos | fuzz     the chaos tests of a local cluster; the fuzz run of 10 000+ requests
//
// Each file runs in its own `node --test` process. The files are started longest first and as many at once as
// the cores can carry: every file has a weight, the cores it keeps busy on average (measured: CPU time over
// wall time, see PROFILES), and files start while the running weights fit the machine's cores. Most e2e files
// wait on timers, sockets and renders far more than they compute, so three or four run beside each other on 2
// cores; a file that uses the whole machine (the browser, ffmpeg exports, the local clusters) runs alone or with
// a light one. `--cores N` (or MF_TEST_CORES) overrides the core count, `--serial` runs one file at a time.
// Each file's output is printed when it ends; a summary (wall and CPU time per file) closes the run.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The files a suite runs: whole folders, single files, less what belongs to another suite. */
interface SuiteFiles {
  folders?: string[];
  files?: string[];
  except?: string[];
}

/**
 * Files that start several service nodes or actor processes: their own suite (`npm run test:cluster`, run by CI
 * after `npm test`), so the default run stays within minutes on 2 cores.
 */
const CLUSTER_FILES = [
  'test/integration/actors/cluster.test.ts', // 3000 commands from 3 actor processes on jongodb: minutes
  'test/e2e/editor-cluster.test.ts', // 3 service nodes
  'test/e2e/events-cluster.test.ts', // 3 service nodes
  'test/e2e/jobs-cluster.test.ts', // 3 service nodes
];

const SUITES: Record<string, SuiteFiles> = {
  unit: { folders: ['test/unit'] },
  integration: { folders: ['test/integration'], except: CLUSTER_FILES },
  e2e: { folders: ['test/e2e'], except: CLUSTER_FILES },
  cluster: { folders: ['test/cluster'], files: CLUSTER_FILES },
  chaos: { folders: ['test/chaos'] },
  fuzz: { folders: ['test/fuzz'] },
};
const DEFAULT_SUITES = ['unit', 'integration', 'e2e'];

/**
 * What a file costs: `wall` seconds (to start the longest first) and `cores` kept busy on average while it runs
 * (its weight). Measured on the 2-core VM with `MF_TEST_TIMINGS=<file> tsx test/run.ts` (which writes both for
 * every file); a file not listed counts as 10 s on one core. `alone`: the file needs the machine to itself
 * (its own timing checks would fail beside another file).
 */
const PROFILES: Record<string, { wall: number; cores: number; alone?: boolean }> = {};

/** The unit tests are many short files: one `node --test` process runs them all, two at a time. */
const BATCHED_SUITES = new Set(['unit']);

// A file's whole run must end within this; a test within it, within TEST_TIMEOUT_MS (the longest single test,
// the 3000 actor commands of test/integration/actors/cluster.test.ts, declares 400 s itself).
const FILE_TIMEOUT_MS = 900_000;
const TEST_TIMEOUT_MS = 420_000;

interface Job {
  name: string;
  suite: string;
  files: string[];
  concurrency: number;
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

function suiteFiles(name: string): string[] {
  const suite = SUITES[name];
  if (!suite) {
    console.error(`unknown suite ${name}: one of ${Object.keys(SUITES).join(', ')}`);
    process.exit(2);
  }
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
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--serial') serial = true;
    else if (arg === '--cores') cores = Number(argv[++i]);
    else if (arg.startsWith('--cores=')) cores = Number(arg.slice('--cores='.length));
    else suites.push(arg);
  }
  if (!(cores > 0)) {
    console.error('--cores takes a positive number');
    process.exit(2);
  }
  return { suites: suites.length > 0 ? suites : DEFAULT_SUITES, cores, serial };
}

function jobsOf(suites: string[], cores: number): Job[] {
  const jobs: Job[] = [];
  for (const suite of suites) {
    const files = suiteFiles(suite);
    if (BATCHED_SUITES.has(suite)) {
      if (files.length > 0)
        jobs.push({
          name: `${suite} (${files.length} files)`,
          suite,
          files,
          concurrency: 2,
          wall: 30,
          cores: 2,
        });
      continue;
    }
    for (const file of files) {
      const profile = PROFILES[file];
      const weight = profile?.alone ? cores : Math.min(cores, profile?.cores ?? 1);
      jobs.push({
        name: file,
        suite,
        files: [file],
        concurrency: 1,
        wall: profile?.wall ?? 10,
        cores: weight,
      });
    }
  }
  // Longest first: the long files overlap the rest instead of ending the run alone.
  return jobs.sort((a, b) => b.wall - a.wall || a.name.localeCompare(b.name));
}

/** CPU time of this process's reaped children so far, in seconds (Linux; 0 elsewhere). */
function childrenCpuS(): number {
  try {
    // /proc/self/stat: fields after the command's closing parenthesis; cutime and cstime are the 16th and 17th.
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return 0;
  }
}

/** Children's CPU time already put down to a job. */
let cpuSeen = childrenCpuS();

function runJob(job: Job): Promise<Outcome> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      '--test-reporter=spec',
      `--test-concurrency=${job.concurrency}`,
      `--test-timeout=${TEST_TIMEOUT_MS}`,
      ...job.files,
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FORCE_COLOR: '0' } },
  );
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
  const killer = setTimeout(() => {
    chunks.push(Buffer.from(`\n${job.name}: still running after ${FILE_TIMEOUT_MS / 1000} s: killed\n`));
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
  }, FILE_TIMEOUT_MS);
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      // Read at once: the CPU of the child just reaped (two ending in one tick share their sum).
      const total = childrenCpuS();
      const cpuS = total - cpuSeen;
      cpuSeen = total;
      clearTimeout(killer);
      const wallS = (performance.now() - started) / 1000;
      child.once('close', () =>
        resolve({ job, code, signal, wallS, cpuS, output: Buffer.concat(chunks).toString('utf8') }),
      );
    });
  });
}

const { suites, cores, serial } = parseArgs(process.argv.slice(2));
const queue = jobsOf(suites, cores);
const startedAt = performance.now();
const outcomes: Outcome[] = [];
const running = new Set<Job>();
console.log(
  `test/run.ts: ${suites.join(', ')}: ${queue.length} jobs on ${cores} cores` +
    `${serial ? ', one at a time' : ''}`,
);

await new Promise<void>((done) => {
  const load = () => [...running].reduce((sum, job) => sum + job.cores, 0);
  const fits = (job: Job) => running.size === 0 || (!serial && load() + job.cores <= cores + 1e-9);
  const next = () => {
    // The longest waiting job that fits beside the running ones (a light one may fill a gap).
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
        report(outcome);
        next();
      });
    }
    if (running.size === 0 && queue.length === 0) done();
  };
  next();
});

function report(outcome: Outcome) {
  const ok = outcome.code === 0;
  const how = ok ? 'ok' : `FAILED (exit ${outcome.code ?? outcome.signal})`;
  const figures = `${outcome.wallS.toFixed(1)} s, CPU ${outcome.cpuS.toFixed(1)} s`;
  console.log(`\n━━ ${outcome.job.name}: ${how} (${figures}; running: ${running.size})`);
  process.stdout.write(outcome.output.endsWith('\n') ? outcome.output : `${outcome.output}\n`);
}

const wallS = (performance.now() - startedAt) / 1000;
const failed = outcomes.filter((outcome) => outcome.code !== 0);
const byWall = [...outcomes].sort((a, b) => b.wallS - a.wallS);
console.log(`\n━━ summary: ${suites.join(', ')}`);
for (const outcome of byWall.slice(0, 15))
  console.log(
    `  ${outcome.wallS.toFixed(1).padStart(6)} s  CPU ${outcome.cpuS.toFixed(1).padStart(6)} s  ${outcome.job.name}`,
  );
const cpuS = outcomes.reduce((sum, outcome) => sum + outcome.cpuS, 0);
console.log(
  `  ${outcomes.length} jobs, ${failed.length} failed; wall ${wallS.toFixed(0)} s, CPU ${cpuS.toFixed(0)} s ` +
    `(${(cpuS / wallS).toFixed(2)} cores on average)`,
);
for (const outcome of failed) console.log(`  FAILED: ${outcome.job.name}`);
if (process.env.MF_TEST_TIMINGS) {
  const timings = Object.fromEntries(
    byWall.map((o) => [o.job.name, { wall: +o.wallS.toFixed(1), cpu: +o.cpuS.toFixed(1), ok: o.code === 0 }]),
  );
  writeFileSync(process.env.MF_TEST_TIMINGS, `${JSON.stringify({ wallS, timings }, null, 2)}\n`);
}
process.exit(failed.length > 0 ? 1 : 0);
