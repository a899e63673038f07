// `npm run bench`: runs every benchmark in this folder, one after another (they must not share the CPU).
// `npm run bench -- export jobs` runs the benches whose file names start with those words.
// `npm run bench -- --check` also fails (exit 1) when a bench misses a budget, listing every miss: each bench
// judges its figures through verdict() (test/helpers/bench.ts), which records budget, verdict and figure as a
// JSON line in the file MF_BENCH_RECORD names. Without --check only a bench that fails outright (wrong
// results, a crash) fails the run, as before: budgets on a shared VM are for reading, unless asked to judge.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { BENCH_RECORD_ENV, type Judgement } from '../helpers/bench.ts';

const dir = fileURLToPath(new URL('.', import.meta.url));
const args = process.argv.slice(2);
const check = args.includes('--check');
const only = args.filter((arg) => !arg.startsWith('--'));
const benches = readdirSync(dir)
  // bare-*: a baseline server a bench starts; *-clients: a bench's client child process (events-clients.ts).
  .filter((file) => file.endsWith('.ts') && file !== 'run.ts' && !file.startsWith('bare-'))
  .filter((file) => !file.endsWith('-clients.ts'))
  .filter((file) => only.length === 0 || only.some((name) => file.startsWith(name)))
  .sort();
if (benches.length === 0) {
  console.error(`no bench matches ${only.join(' ')}`);
  process.exit(2);
}

const recordDir = mkdtempSync(join(tmpdir(), 'mf-bench-'));
const record = join(recordDir, 'judgements.jsonl');
const failedRuns: string[] = [];
for (const file of benches) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(dir, file)], {
    stdio: 'inherit',
    env: { ...process.env, [BENCH_RECORD_ENV]: record },
  });
  if (result.status !== 0) failedRuns.push(`${file} (exit ${result.status ?? result.signal})`);
}

let judgements: Judgement[] = [];
try {
  judgements = readFileSync(record, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Judgement);
} catch {
  // No bench judged anything (startup.ts and actor-startup.ts only report).
}
rmSync(recordDir, { recursive: true, force: true });

const misses = judgements.filter((one) => !one.ok);
console.log(
  `\nbench: ${benches.length} run, ${failedRuns.length} failed outright; ${judgements.length} budgets judged, ` +
    `${misses.length} missed${check ? '' : ' (not failing the run: add --check)'}`,
);
for (const failed of failedRuns) console.log(`  failed: ${failed}`);
for (const miss of misses) console.log(`  missed: ${miss.bench}: ${miss.budget}: ${miss.figure}`);
const unjudged = benches.filter((file) => !judgements.some((one) => one.bench === file));
if (unjudged.length > 0) console.log(`  no budget: ${unjudged.join(', ')}`);
process.exit(failedRuns.length > 0 || (check && misses.length > 0) ? 1 : 0);
