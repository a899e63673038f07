// Start-up time of `mediaforge serve` in embedded mode, from spawn to its `listening on` line: the compiled
// service (dist/, what `npm start` runs) against the sources loaded through tsx (what it ran before the build
// step), alternating so a busy machine weighs on both alike. Includes starting the embedded database.
import { fileURLToPath } from 'node:url';
import { watchProcess, stopProcess } from '../helpers/processes.ts';
import { serveArgs, serviceEnv } from '../helpers/service.ts';
import { load1 } from '../helpers/bench.ts';

const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 10);
const TSX_ARGS = [
  '--import',
  'tsx',
  fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url)),
  'serve',
];

/** Milliseconds from spawn to `listening on`; the process is stopped before the next run. */
async function startOnce(args: string[]): Promise<number> {
  const started = performance.now();
  const proc = watchProcess(process.execPath, args, serviceEnv({}));
  try {
    await proc.waitForLine(/listening on http:\/\//, 60_000);
    return performance.now() - started;
  } finally {
    await stopProcess(proc, 'SIGTERM', 20_000);
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const figures = (values: number[]) =>
  `median ${median(values).toFixed(0)} ms (min ${Math.min(...values).toFixed(0)}, max ${Math.max(...values).toFixed(0)})`;

const compiledArgs = serveArgs();
await startOnce(compiledArgs); // warm-up: the file system cache for both, tsx's transform cache
await startOnce(TSX_ARGS);
const compiled: number[] = [];
const tsx: number[] = [];
for (let i = 0; i < RUNS; i++) {
  compiled.push(await startOnce(compiledArgs));
  tsx.push(await startOnce(TSX_ARGS));
}
console.log(
  `startup (spawn → listening, embedded mode, ${RUNS} runs each alternating, load ${load1()}): ` +
    `compiled dist/ ${figures(compiled)}; tsx sources ${figures(tsx)}; ` +
    `compiled/tsx ${((median(compiled) / median(tsx)) * 100).toFixed(0)} % of the time [reported, not judged]`,
);
