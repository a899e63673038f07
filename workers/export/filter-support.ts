// Which filters the resolved ffmpeg has: checked once at start-up. An old build (the registry's 2018 fallback)
// degrades the sound with one logged notice where that is harmless (docs/editor.md, How the export mixes the sound), and an export
// that needs a filter the build lacks for one of its effects (a transition, text, motion, speed) is refused
// with `unsupported_feature` naming both (docs/errors.md): never a silently different video.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { ExportPlan, FilterSupport } from './plan.ts';

const run = promisify(execFile);

/** Filters the export can do without (each one degrades a feature, see `FilterSupport`). */
export const OPTIONAL_FILTERS = [
  'loudnorm',
  'sidechaincompress',
] as const satisfies readonly (keyof FilterSupport)[];

/** Filters the sound graph always relies on; every ffmpeg since 3.x has them, a custom build might not. */
export const REQUIRED_FILTERS = [
  'adelay',
  'afade',
  'aformat',
  'alimiter',
  'amix',
  'anullsrc',
  'apad',
  'aresample',
  'asetpts',
  'asplit',
  'atrim',
  'concat',
  'volume',
] as const;

/** The effects of the timeline's second edition, each with the filters it needs (picture and sound). */
export const FEATURE_FILTERS = {
  transitions: ['xfade', 'acrossfade'],
  text: ['drawtext'],
  motion: ['perspective'],
  speed: ['atempo'],
} as const satisfies Record<string, readonly string[]>;

export type PlanFeature = keyof typeof FEATURE_FILTERS;

/** The effects `plan` uses (a first clip's transition is a fade from black: `fade`, which every build has). */
export function planFeatures(plan: Pick<ExportPlan, 'picture' | 'texts'>): PlanFeature[] {
  const features: PlanFeature[] = [];
  if (plan.picture.some((clip, i) => i > 0 && clip.transitionIn !== undefined)) features.push('transitions');
  if ((plan.texts ?? []).length > 0) features.push('text');
  const moving = (clip: ExportPlan['picture'][number]) =>
    clip.source.kind === 'image' && clip.motion !== undefined && clip.motion !== 'none';
  if (plan.picture.some(moving)) features.push('motion');
  const faster = (clip: ExportPlan['picture'][number]) =>
    clip.source.kind === 'video' && clip.speed !== undefined && clip.speed !== 1;
  if (plan.picture.some(faster)) features.push('speed');
  return features;
}

/** One effect of a plan that the build cannot render, and the filter it lacks. */
export interface UnsupportedFeature {
  feature: PlanFeature;
  filter: string;
}

/** The effects of `plan` whose filters `available` lacks (each with its first missing filter); empty if none. */
export function unsupportedFeatures(
  plan: Pick<ExportPlan, 'picture' | 'texts'>,
  available: ReadonlySet<string>,
): UnsupportedFeature[] {
  return planFeatures(plan).flatMap((feature) => {
    const filter = FEATURE_FILTERS[feature].find((name) => !available.has(name));
    return filter === undefined ? [] : [{ feature, filter }];
  });
}

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

/** Every filter the ffmpeg at `ffmpegPath` has (`ffmpeg -hide_banner -filters`, run once). */
export async function listFilters(ffmpegPath: string): Promise<Set<string>> {
  const { stdout } = await run(ffmpegPath, ['-hide_banner', '-filters'], {
    encoding: 'utf8',
    timeout: LIST_TIMEOUT_MS,
    killSignal: 'SIGKILL',
    maxBuffer: 4 * 1024 * 1024,
  });
  return parseFilterList(stdout);
}

/**
 * What the sound may use of `filters`; `missing` names every filter of `OPTIONAL_FILTERS` and
 * `REQUIRED_FILTERS` the build lacks, for the caller's single notice.
 */
export function soundFilterReport(filters: Set<string>): FilterSupport & { missing: string[] } {
  const missing = [...OPTIONAL_FILTERS, ...REQUIRED_FILTERS].filter((name) => !filters.has(name));
  return { ...filterSupport(filters), missing };
}

/** The filters of `FEATURE_FILTERS` that `filters` lacks (the effects that need them are refused). */
export const missingFeatureFilters = (filters: ReadonlySet<string>): string[] =>
  [...new Set(Object.values(FEATURE_FILTERS).flat())].filter((name) => !filters.has(name));

/**
 * Runs `ffmpeg -hide_banner -filters` once and reports what the sound may use (`soundFilterReport`). Rejects
 * when ffmpeg cannot be run or does not answer within the time limit.
 */
export async function detectFilterSupport(
  ffmpegPath: string,
): Promise<FilterSupport & { missing: string[] }> {
  return soundFilterReport(await listFilters(ffmpegPath));
}
