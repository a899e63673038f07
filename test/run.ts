// Runs every test file under test/unit, test/integration, test/e2e and test/cluster (Node 20's --test does not
// expand globs), two files at a time: each integration/e2e file starts its own servers, and the machine has 2
// cores. `tsx test/run.ts chaos` (npm run test:chaos) runs the chaos tests of a local cluster, which take minutes;
// `tsx test/run.ts fuzz` (npm run test:fuzz) the fuzz run of at least 10 000 requests over every route family.
import { readdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const suites =
  process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['unit', 'integration', 'e2e', 'cluster'];

function testFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((entry) => {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) return testFiles(path);
      return entry.endsWith('.test.ts') ? [path] : [];
    });
}

// A file's whole run must end within this. The longest file (test/integration/actors/cluster.test.ts: 3000
// actor commands on jongodb, about two minutes alone) declares 400 s for its test; two files share the 2 cores.
const FILE_TIMEOUT_MS = 420_000;

// Files that must have the machine to themselves: the actor cluster test counts every command's answer
// against ack-wait time-outs, and the export tests' ffmpeg runs (fixtures, renders, analysis) on both cores
// starved it into time-outs when the two shared them. The local clusters (test/cluster, test/chaos: three NATS
// servers and three service nodes each) would starve anything beside them. They run first, one at a time.
const ALONE_FILES = new Set(['test/integration/actors/cluster.test.ts']);
const ALONE_FOLDERS = ['test/cluster/', 'test/chaos/'];
const runsAlone = (file: string) =>
  ALONE_FILES.has(file) || ALONE_FOLDERS.some((folder) => file.startsWith(folder));

const files = suites.flatMap((suite) => testFiles(join(root, 'test', suite))).map((f) => relative(root, f));
const run = (concurrency: number, chosen: string[]): number => {
  if (chosen.length === 0) return 0;
  const result = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      `--test-concurrency=${concurrency}`,
      `--test-timeout=${FILE_TIMEOUT_MS}`,
      ...chosen,
    ],
    { cwd: root, stdio: 'inherit' },
  );
  return result.status ?? 1;
};
const alone = run(1, files.filter(runsAlone));
const shared = run(
  2,
  files.filter((file) => !runsAlone(file)),
);
process.exit(alone !== 0 ? alone : shared);
