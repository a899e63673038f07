// The export's sound when the picture is made apart from it — in segments, or copied by the fast path
// (docs/editor.md, How the export mixes the sound). A final export's loudness is measured before its sound is
// encoded, and both passes used to mix every source: on the bench's 60 s programme the mix is about half a
// second of each. So the mix is made once, into 32-bit float PCM (its loudness measured in the same pass), and
// the sound is encoded from that file through the loudness stage: the same samples into the same encoder, so
// the same sound, sample for sample, as one command mixing and encoding it.
// Pure: no ffmpeg here.
import { NO_USER_METADATA, soundAndFileArgs } from './command.ts';
import { inputArgs, ownInput } from './input-args.ts';
import { FORMAT, loudnessFilters } from './loudness.ts';
import { QUIET_GLOBALS } from './parallel-render.ts';
import type { ExportPlan } from './plan.ts';
import { MEASURED_OUT, MIXDOWN_OUT, mixdownGraph, totalSamplesOf } from './sound-graph.ts';

/**
 * The mixdown: every input of the plan (so the graph's numbering holds) mixed by the export's sound graph into
 * float PCM at `mixdownPath`, exactly the picture's length, before the loudness stage; with `measure`, the
 * loudness measurement in the log too (`measuredLoudness` reads it). Reports no progress.
 */
export function mixdownCommand(plan: ExportPlan, mixdownPath: string, measure: boolean): string[] {
  return [
    ...QUIET_GLOBALS,
    ...inputArgs(plan),
    ...['-filter_complex', mixdownGraph(plan, measure)],
    ...['-map', `[${MIXDOWN_OUT}]`, ...NO_USER_METADATA, '-c:a', 'pcm_f32le', '-rf64', 'auto'],
    ...['-f', 'wav', `file:${mixdownPath}`],
    ...(measure ? ['-map', `[${MEASURED_OUT}]`, '-f', 'null', '-'] : []),
  ];
}

/**
 * The sound from the mixdown: through the loudness stage (`loudnessFilters`, with the plan's measurement),
 * encoded as every export's sound is (`soundAndFileArgs`), to the mp4 at `soundPath`. Reports no progress.
 */
export function soundFromMixdownCommand(plan: ExportPlan, mixdownPath: string, soundPath: string): string[] {
  const total = totalSamplesOf(plan);
  const filters = [
    ...loudnessFilters(plan),
    // The resampling and the limiter's delay may leave a few samples more or less: the length is cut again.
    FORMAT,
    `apad=whole_len=${total}`,
    `atrim=end_sample=${total}`,
  ];
  return [
    ...QUIET_GLOBALS,
    ...ownInput('wav', mixdownPath),
    ...['-af', filters.join(','), '-vn'],
    ...NO_USER_METADATA,
    ...soundAndFileArgs({ ...plan, output: { ...plan.output, path: soundPath } }),
  ];
}
