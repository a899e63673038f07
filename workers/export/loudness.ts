// The loudness of the export's sound in two passes (docs/editor.md, How the export mixes the sound): a measuring
// pass runs the mix into `loudnorm … print_format=json` and throws the sound away (measure-command.ts); the
// render then applies one constant gain computed from that measurement (what `loudnorm`'s linear mode does), so
// the programme lands on the target without the gain riding up through quiet passages. A programme measured
// quieter than LOUDNESS_SILENCE_LUFS is near-silence, not programme material: it is only limited, never raised.
// Pure: no ffmpeg here.
import {
  LOUDNESS_SILENCE_LUFS,
  LOUDNESS_TARGET_LUFS,
  LOUDNESS_TRUE_PEAK_DBTP,
} from '../../schemas/timeline-terms.ts';
import type { ExportPlan } from './plan.ts';
import type { MeasuredLoudness } from './work-order.ts';

/** Sample rate of every stream in the graph and of the output's AAC track. */
export const SOUND_SAMPLE_RATE = 48_000;

/** What the normalised programme aims at: integrated loudness, true peak, and the loudness range it keeps. */
export const LOUDNESS = {
  integrated: LOUDNESS_TARGET_LUFS,
  truePeak: LOUDNESS_TRUE_PEAK_DBTP,
  range: 11,
  /** Measured quieter than this, a programme is not raised (only limited). */
  silence: LOUDNESS_SILENCE_LUFS,
} as const;

/** The loudness range `loudnorm` takes as a target: 1–20 LU on every build (newer ones allow 50). */
const MAX_RANGE_LU = 20;

export const FORMAT = `aformat=sample_fmts=fltp:sample_rates=${SOUND_SAMPLE_RATE}:channel_layouts=stereo`;

// Without a normalising gain only the peaks are held under −1.5 dBFS (0.84): a sample-peak limiter without
// oversampling, so 0.5 dB under the true-peak ceiling leaves room for the peaks between samples. `level=0` turns
// off the auto-level that would otherwise raise the whole mix to 0 dBFS; the 1 ms attack is also the limiter's
// delay (neither build can compensate it the same way: `latency` is newer than 2018), 48 samples, far below a
// frame.
export const LIMITER = 'alimiter=limit=0.84:attack=1:release=50:level=0';

/**
 * The measuring pass's filter: `loudnorm` with the targets, printing what it measured as JSON on stderr when
 * the graph ends (`parseLoudnormJson`). It is put in linear mode with stand-in measurements (a programme already
 * at the target, no peak, a range it accepts), so it only measures, every sample once, with a gain of 1 on
 * sound that is thrown away. In its dynamic mode it would also measure, but it counts the last 3 s of the
 * programme twice (its look-ahead, flushed at the end): 1.2 LU off on a programme whose last seconds are 8 dB
 * quieter than the rest, and the render then misses the target by as much.
 */
export const MEASURE_FILTER = [
  `loudnorm=I=${LOUDNESS.integrated}`,
  `TP=${LOUDNESS.truePeak}`,
  `LRA=${LOUDNESS.range}`,
  `measured_I=${LOUDNESS.integrated}`,
  'measured_TP=-99',
  'measured_LRA=0.01',
  `measured_thresh=${LOUDNESS.integrated - 10}`,
  'linear=true',
  'print_format=json',
].join(':');

/** A number for an ffmpeg option: plain decimals, clamped to the option's range. */
function option(value: number, min: number, max: number): string {
  return String(Number(Math.min(max, Math.max(min, value)).toFixed(2)));
}

/** Whether a measurement is programme material to normalise (not near-silence, not unmeasurable). */
export function normalisable(measured: MeasuredLoudness): boolean {
  return (
    Number.isFinite(measured.integratedLufs) &&
    Number.isFinite(measured.truePeakDbtp) &&
    measured.integratedLufs >= LOUDNESS.silence
  );
}

/** The measurement as `loudnorm` reads it: each value as its option's text gives it (two decimals, clamped). */
function measuredOptions(measured: MeasuredLoudness) {
  return {
    integrated: option(measured.integratedLufs, -99, 0),
    truePeak: option(measured.truePeakDbtp, -99, 99),
    // loudnorm reads a measured range of 0 as "not given" and then leaves linear mode; a steady programme (a
    // tone, a hum) measures exactly 0, so it is given as the smallest range it reads.
    range: option(measured.rangeLu, 0.01, 99),
    threshold: option(measured.thresholdLufs, -99, 0),
  };
}

/**
 * The one gain (dB) of `loudnorm`'s linear mode for this measurement and target range, or undefined where
 * loudnorm would leave linear mode: the gain to the target would lift the true peak over the ceiling, or the
 * measured range is wider than the target. The same test on the same numbers (the options' texts, in doubles)
 * as loudnorm makes when it starts, so both always agree on the mode.
 */
export function linearGainDb(measured: MeasuredLoudness, targetRange: string): number | undefined {
  const given = measuredOptions(measured);
  const integrated = Number(given.integrated);
  const truePeak = Number(given.truePeak);
  const range = Number(given.range);
  const gain = LOUDNESS.integrated - integrated;
  // loudnorm's own test: the values are all given (none at its "not given" default), the peak stays under the
  // ceiling after the gain, and the range fits the target.
  const allGiven = truePeak !== 99 && Number(given.threshold) !== -70 && range !== 0 && integrated !== 0;
  return allGiven && truePeak + gain <= LOUDNESS.truePeak && range <= Number(targetRange) ? gain : undefined;
}

/**
 * The render's loudness stage for a mix (after the mix, before the final format and length):
 * - one gain for the whole programme, to −14 LUFS, when the plan carries a measurement of programme material
 *   and that gain leaves the true peak under −1 dBTP and the range within the target (the target range is
 *   raised to the measured one, up to 20 LU, so that a wide programme keeps its dynamics). That is exactly what
 *   `loudnorm`'s linear mode does — a constant gain, no limiter — but loudnorm works at 192 kHz, so it would
 *   cost a resampling there and back (and their small error) for a multiplication: `volume` applies the
 *   same gain at 48 kHz (`linearGainDb`).
 * - otherwise `loudnorm`'s dynamic mode with the same measurement, which holds the peak by limiting. (The
 *   measuring pass's `offsetLu` is its gain to the target, which is computed again here: it is not passed on.)
 * - the limiter alone: a preview (no measuring pass: its loudness is the mix's own, approximate), an ffmpeg
 *   without `loudnorm`, a plan without a measurement, or a programme measured as near-silence.
 */
export function loudnessFilters(plan: Pick<ExportPlan, 'filters' | 'measuredLoudness' | 'output'>): string[] {
  const measured = plan.measuredLoudness;
  if (!plan.filters.loudnorm || plan.output.quality === 'preview' || !measured || !normalisable(measured)) {
    return [LIMITER];
  }
  const range = option(
    Math.min(MAX_RANGE_LU, Math.max(LOUDNESS.range, Math.ceil(measured.rangeLu * 10) / 10)),
    1,
    MAX_RANGE_LU,
  );
  const gain = linearGainDb(measured, range);
  if (gain !== undefined) return [`volume=${Number(gain.toFixed(2))}dB`];
  const m = measuredOptions(measured);
  const loudnorm = [
    `loudnorm=I=${LOUDNESS.integrated}`,
    `TP=${LOUDNESS.truePeak}`,
    `LRA=${range}`,
    `measured_I=${m.integrated}`,
    `measured_TP=${m.truePeak}`,
    `measured_LRA=${m.range}`,
    `measured_thresh=${m.threshold}`,
    'print_format=none',
  ].join(':');
  // loudnorm resamples to 192 kHz internally and outputs that rate: back to 48 kHz.
  return [loudnorm, `aresample=${SOUND_SAMPLE_RATE}`];
}

/** A `loudnorm` JSON value: a number as a string, or `-inf`/`inf` (a silent programme). */
function jsonNumber(fields: Record<string, unknown>, key: string): number {
  const value = fields[key];
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : '';
  if (text === '-inf') return -Infinity;
  if (text === 'inf' || text === '+inf') return Infinity;
  const number = text === '' ? NaN : Number(text);
  if (Number.isNaN(number)) throw new SyntaxError(`loudnorm printed no number for ${key}: ${String(value)}`);
  return number;
}

/**
 * What a measuring pass printed: the last `loudnorm` JSON object in ffmpeg's log (stderr). Throws a
 * SyntaxError when there is none or it lacks a field.
 */
export function parseLoudnormJson(stderr: string): MeasuredLoudness {
  const key = stderr.lastIndexOf('"input_i"');
  const open = key < 0 ? -1 : stderr.lastIndexOf('{', key);
  const close = key < 0 ? -1 : stderr.indexOf('}', key);
  if (open < 0 || close < 0) throw new SyntaxError('the measuring pass printed no loudnorm measurement');
  const fields = JSON.parse(stderr.slice(open, close + 1)) as Record<string, unknown>;
  return {
    integratedLufs: jsonNumber(fields, 'input_i'),
    truePeakDbtp: jsonNumber(fields, 'input_tp'),
    rangeLu: jsonNumber(fields, 'input_lra'),
    thresholdLufs: jsonNumber(fields, 'input_thresh'),
    offsetLu: jsonNumber(fields, 'target_offset'),
  };
}
