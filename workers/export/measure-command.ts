// The measuring pass of the export's loudness (docs/editor.md, How the export mixes the sound): the same inputs
// and the same mix as the render, into `loudnorm`'s measurement, the sound thrown away (null muxer). It decodes
// only the audio: no picture stream is used, so ffmpeg decodes none. Its log ends with the JSON that
// `parseLoudnormJson` (loudness.ts) reads, and the render takes it as `ExportPlan.measuredLoudness`.
import { RENDER_GLOBALS } from './command.ts';
import { inputArgs } from './input-args.ts';
import { parseLoudnormJson } from './loudness.ts';
import type { ExportPlan } from './plan.ts';
import { MEASURED_OUT, measureGraph, programmeHasSound } from './sound-graph.ts';
import type { MeasuredLoudness } from './work-order.ts';

/**
 * Whether an export of `plan` runs the measuring pass first: a final export (not a preview, whose loudness is
 * approximate) with sound, on an ffmpeg with `loudnorm`.
 */
export function needsMeasuring(plan: ExportPlan): boolean {
  return plan.filters.loudnorm && plan.output.quality !== 'preview' && programmeHasSound(plan);
}

/**
 * The ffmpeg arguments (without the binary) of the measuring pass: progress on stdout like the render's, the
 * measurement in the log on stderr, no output file.
 */
export function measureCommand(plan: ExportPlan): string[] {
  return [
    ...RENDER_GLOBALS,
    ...inputArgs(plan),
    '-filter_complex',
    measureGraph(plan),
    '-map',
    `[${MEASURED_OUT}]`,
    '-f',
    'null',
    '-',
  ];
}

/** What the measuring pass measured, from its log (throws a SyntaxError when the log holds no measurement). */
export const measuredLoudness = (stderr: string): MeasuredLoudness => parseLoudnormJson(stderr);
