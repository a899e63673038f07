// The figures of a chaos run: each check (check-*.ts, settle.ts) returns one, a line with counts
// for the note and the problems it found (an empty list is a pass); `report` prints them.
import type { ChaosLoad } from './chaos-load.ts';

/** One invariant's outcome. */
export interface Figure {
  name: string;
  /** One line of counts for the note. */
  line: string;
  /** What is wrong (empty: it holds). */
  problems: string[];
  /** Known and explained departures, printed but not failing. */
  notes?: string[];
}

/** How long the load's turns, exports and job submissions took (answered 200/202), for the note. */
export function latencies(load: ChaosLoad): Figure {
  const parts: string[] = [];
  for (const op of ['instruct', 'export', 'submit image', 'grant']) {
    const times = load.traffic.requests
      .filter((r) => r.op === op && r.actor !== 'setup' && r.status !== null && r.status < 300)
      .map((r) => r.endedAt - r.startedAt)
      .sort((a, b) => a - b);
    if (times.length === 0) continue;
    const q = (f: number) => times[Math.min(times.length - 1, Math.floor(f * times.length))]!;
    parts.push(`${op} ${times.length}× p50 ${q(0.5)} ms, p95 ${q(0.95)} ms, max ${times.at(-1)} ms`);
  }
  return { name: 'latency', line: `latency: ${parts.join('; ')}`, problems: [] };
}

/** Prints the figures (a line each, then the problems and notes) and returns the problems of all. */
export function report(title: string, figures: Figure[]): string[] {
  const lines = [`---- ${title} ----`];
  for (const figure of figures) {
    lines.push(figure.line);
    for (const note of figure.notes ?? []) lines.push(`    note: ${note}`);
    for (const problem of figure.problems.slice(0, 15)) lines.push(`    PROBLEM: ${problem}`);
    if (figure.problems.length > 15) lines.push(`    … and ${figure.problems.length - 15} more`);
  }
  console.log(lines.join('\n'));
  return figures.flatMap((figure) => figure.problems.map((problem) => `${figure.name}: ${problem}`));
}
