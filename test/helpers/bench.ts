import { loadavg } from 'node:os';

/** The value at fraction `p` of an ascending list (nearest rank, never past the end). */
export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

/** The 1-minute load average, printed with figures so a busy machine shows in them. */
export const load1 = () => loadavg()[0]!.toFixed(2);

export const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
