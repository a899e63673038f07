// Which of the export's audio filters the resolved ffmpeg has (docs/editor.md, The sound): checked once at
// start-up so that an old build (the registry's 2018 fallback) degrades the export with one logged notice
// instead of failing.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { FilterSupport } from './plan.ts';

const run = promisify(execFile);

/** Filters the export can do without (each one degrades a feature, see `FilterSupport`). */
export const OPTIONAL_FILTERS = [
  'loudnorm',
  'sidechaincompress',
] as const satisfies readonly (keyof FilterSupport)[];

/** Filters the sound graph always relies on; every ffmpeg since 3.x has them, a custom build might not. */
export const REQUIRED_FILTERS = [
  'adelay',
  'aformat',
  'alimiter',
  'amix',
  'anullsrc',
  'apad',
  'aresample',
  'asplit',
  'atrim',
  'concat',
  'volume',
] as const;

/** Longest wait for `ffmpeg -filters` (it answers in a few milliseconds; a hung binary must not block start-up). */
const LIST_TIMEOUT_MS = 10_000;

// A filter row: flag columns (`T.C`, or two columns in older builds), the name, then its pads (`A->A`, `|->V`, `N->A`).
const FILTER_ROW = /^\s*[TSC.|]{2,3}\s+([A-Za-z0-9_]+)\s+[AVN|]*->[AVN|]*\s/;

/** The filter names in the text of `ffmpeg -hide_banner -filters` (the legend and other lines are skipped). */
export function parseFilterList(ffmpegFiltersOutput: string): Set<string> {
  const names = new Set<string>();
  for (const line of ffmpegFiltersOutput.split('\n')) {
    const name = FILTER_ROW.exec(line)?.[1];
    if (name) names.add(name);
  }
  return names;
}

/** The optional features a set of filter names allows. */
export function filterSupport(filters: Set<string>): FilterSupport {
  return { loudnorm: filters.has('loudnorm'), sidechaincompress: filters.has('sidechaincompress') };
}

/**
 * Runs `ffmpeg -hide_banner -filters` once and reports what the export may use; `missing` names every filter
 * of `OPTIONAL_FILTERS` and `REQUIRED_FILTERS` the build lacks, for the caller's single notice. Rejects when
 * ffmpeg cannot be run or does not answer within the time limit.
 */
export async function detectFilterSupport(
  ffmpegPath: string,
): Promise<FilterSupport & { missing: string[] }> {
  const { stdout } = await run(ffmpegPath, ['-hide_banner', '-filters'], {
    encoding: 'utf8',
    timeout: LIST_TIMEOUT_MS,
    killSignal: 'SIGKILL',
    maxBuffer: 4 * 1024 * 1024,
  });
  const filters = parseFilterList(stdout);
  const missing = [...OPTIONAL_FILTERS, ...REQUIRED_FILTERS].filter((name) => !filters.has(name));
  return { ...filterSupport(filters), missing };
}
