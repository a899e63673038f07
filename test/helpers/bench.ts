import { appendFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { basename } from 'node:path';

/** The value at fraction `p` of an ascending list (nearest rank, never past the end). */
export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

/** The 1-minute load average, printed with figures so a busy machine shows in them. */
export const load1 = () => loadavg()[0]!.toFixed(2);

/** Where test/bench/run.ts wants each judgement as a JSON line (set by `npm run bench -- --check`). */
export const BENCH_RECORD_ENV = 'MF_BENCH_RECORD';

/** One judged budget, as a bench records it for test/bench/run.ts. */
export interface Judgement {
  bench: string;
  budget: string;
  ok: boolean;
  figure: string;
}

/**
 * Judges one budget (or a must-hold check the figures depend on): returns PASS or FAIL for the bench's own
 * line and, under `npm run bench -- --check`, records the budget, the verdict and the measured figure, so that
 * test/bench/run.ts can fail the run and list every miss.
 */
export function verdict(ok: boolean, budget: string, figure: string): 'PASS' | 'FAIL' {
  const file = process.env[BENCH_RECORD_ENV];
  if (file) {
    const judgement: Judgement = { bench: basename(process.argv[1] ?? '?'), budget, ok, figure };
    appendFileSync(file, `${JSON.stringify(judgement)}\n`);
  }
  return ok ? 'PASS' : 'FAIL';
}
