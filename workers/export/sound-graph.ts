// The export's sound as one `-filter_complex` fragment (docs/editor.md, How the export mixes the sound): the
// video track's own audio in place (read from each picture clip's input, beside the picture graph, which
// makes video only), voice/sfx/music clips at their start, every clip at its speed, gain and fades, transitions
// cross-faded, de-click ramps at every other edge, music ducked under voice, then the loudness stage
// (loudness.ts). Pure: no ffmpeg here.
//
// The graph must parse on every ffmpeg the resolver may pick, including the registry's 2018 4.x fallback,
// which lacks `amix=normalize`, `adelay=all` and `alimiter=latency`, and whose `atempo` takes 0.5–2 only. So it
// only uses options both have. Positions and lengths are counted in samples at 48 kHz so nothing drifts: each
// clip is cut and padded to its exact length, and the clips of a lane are joined by `concat` with silence of
// the exact gap between them.
import { FORMAT, SOUND_SAMPLE_RATE, loudnessFilters, MEASURE_FILTER } from './loudness.ts';
import { pictureTimeline, type ExportPlan } from './plan.ts';
import { lanes, pictureSegments, toSamples, trackSegments, type SoundSegment } from './sound-segments.ts';

export { LOUDNESS, SOUND_SAMPLE_RATE } from './loudness.ts';

/** Label of the graph's single output: the caller maps it (`-map [aout]`). */
export const SOUND_OUT = 'aout';
/** Label of the measuring graph's output (`measureGraph`), mapped to the null muxer. */
export const MEASURED_OUT = 'measured';
/** Label of the mixdown's output (`mixdownGraph`): the mix before its loudness stage, written as PCM. */
export const MIXDOWN_OUT = 'mixdown';

// Ducking: music is pulled down by ~12 dB under speech at −20 dBFS RMS (threshold −34 dBFS, ratio 8), fast
// enough to clear the first syllable (20 ms) and slow enough in release not to pump between words (300 ms).
const DUCKING = 'sidechaincompress=threshold=0.02:ratio=8:attack=20:release=300';

// Every decoded stream enters the graph through this: `first_pts=0` pads with silence an audio stream that starts
// after its input's zero (and drops samples before it), `async=1` fills gaps in its timestamps, so the samples
// keep the positions the timestamps give them instead of being pulled early. Then 48 kHz stereo float.
const NORMALISE_INPUT = `aresample=${SOUND_SAMPLE_RATE}:async=1:first_pts=0,${FORMAT}`;

/** An endless silent source (a chain without input label), cut by the `atrim` after it. */
const SILENCE = `anullsrc=r=${SOUND_SAMPLE_RATE}:cl=stereo`;

/** Timestamps from the sample count, so that `afade` (which places itself by timestamps) and `concat` count true. */
const RESTAMP = 'asetpts=N/SR/TB';

/** A gain without exponent notation (ffmpeg's expression parser would read `1e-7` fine, but keep it plain). */
function gain(volume: number): string {
  const clamped = Math.min(2, Math.max(0, Number.isFinite(volume) ? volume : 1));
  return String(Number(clamped.toFixed(4)));
}

/**
 * Exactly `samples` long: the input's `-t` stops at a whole decoded frame (1024 samples for AAC), a file can end
 * early and a tempo change rounds, so the stream is cut (`atrim`) and padded (`apad`) to the sample — otherwise
 * every later position on its lane would shift by the error.
 */
const exactly = (samples: number): string[] => [`atrim=end_sample=${samples}`, `apad=whole_len=${samples}`];

/**
 * `atempo` stages for `speed` (pitch kept): the 2018 build takes 0.5–2 per stage, so 4 is 2 × 2 and 0.25 is
 * 0.5 × 0.5 — as few equal stages as keep each within that range. None at speed 1.
 */
export function tempoFilters(speed: number): string[] {
  if (!Number.isFinite(speed) || speed <= 0 || Math.abs(speed - 1) < 1e-9) return [];
  const stages = Math.max(1, Math.ceil(Math.abs(Math.log2(speed)) - 1e-9));
  const factor = String(Number(Math.pow(speed, 1 / stages).toFixed(6)));
  return Array.from({ length: stages }, () => `atempo=${factor}`);
}

/** Filter chains joined by `;`, with the labels they define. */
class Graph {
  readonly chains: string[] = [];
  private gaps = 0;

  /** Appends `inputs` (labels, or '' for a source chain) → `filters` → `[output]`; returns the output label. */
  add(inputs: string, filters: string[], output: string): string {
    this.chains.push(`${inputs}${filters.join(',')}[${output}]`);
    return `[${output}]`;
  }

  /** `samples` of silence, as a segment of a lane. */
  silence(samples: number): string {
    return this.add('', [SILENCE, `atrim=end_sample=${samples}`, FORMAT], `gap${this.gaps++}`);
  }

  /**
   * One stream summing `labels`. `amix` divides every input by the number of inputs still playing; every input
   * here lasts the whole timeline, so that divisor is the constant N and `volume=N` undoes it exactly — the
   * 2018 build has no `normalize=0`, and the result is the same on both. Nothing is normalised: two clips
   * cross-fading sum to the power of one.
   */
  mixed(labels: string[], output: string): string {
    if (labels.length === 1) return labels[0]!;
    return this.add(labels.join(''), [`amix=inputs=${labels.length}`, `volume=${labels.length}`], output);
  }
}

/**
 * One clip's sound as a segment of exactly its samples: its source at 48 kHz stereo (at a speed: `duration ×
 * speed` source seconds of it, then its tempo), its gain, its ramps (`afade`, placed by sample).
 */
function segmentChain(graph: Graph, segment: SoundSegment): string {
  const tempo = tempoFilters(segment.speed);
  const filters = [
    NORMALISE_INPUT,
    ...(tempo.length > 0 ? [...exactly(segment.sourceSamples), ...tempo] : []),
    ...exactly(segment.samples),
    RESTAMP,
    `volume=${gain(segment.volume)}`,
    ...segment.ramps.map(
      (r) => `afade=t=${r.direction}:ss=${r.startSample}:ns=${r.samples}:curve=${r.curve}`,
    ),
  ];
  return graph.add(`[${segment.input}:a:0]`, filters, segment.label);
}

/**
 * A lane as one stream of the whole timeline: its segments in order, with silence in every gap, joined by one
 * `concat` (which places each where the one before ended, to the sample), padded to the end.
 */
function laneStream(graph: Graph, lane: SoundSegment[], name: string, totalSamples: number): string {
  const parts: string[] = [];
  let at = 0;
  for (const segment of lane) {
    if (segment.startSample > at) parts.push(graph.silence(segment.startSample - at));
    parts.push(segmentChain(graph, segment));
    at = segment.startSample + segment.samples;
  }
  const filters: string[] = [];
  if (parts.length > 1) filters.push(`concat=n=${parts.length}:v=0:a=1`);
  if (at < totalSamples) filters.push(`apad=whole_len=${totalSamples}`);
  if (filters.length === 0) return parts[0]!;
  return graph.add(parts.join(''), filters, name);
}

/** Each lane of `segments` as a stream of the whole timeline, labelled `<name>_lane<k>`. */
function laneStreams(graph: Graph, segments: SoundSegment[], name: string, totalSamples: number): string[] {
  return lanes(segments).map((lane, k) => laneStream(graph, lane, `${name}_lane${k}`, totalSamples));
}

/** The timeline's length in samples (the picture's), refusing a timeline without picture. */
export function totalSamplesOf(plan: ExportPlan): number {
  const total = toSamples(pictureTimeline(plan).totalSec);
  if (total <= 0) throw new RangeError('the export has no picture: its duration is zero');
  return total;
}

/** Whether anything of the programme has sound (a picture clip's own audio or an audio clip that is heard). */
export function programmeHasSound(plan: ExportPlan): boolean {
  const total = toSamples(pictureTimeline(plan).totalSec);
  return pictureSegments(plan).length > 0 || trackSegments(plan, total).length > 0;
}

/**
 * Every sound of the plan mixed at its place, cut and padded to the timeline's length, before any loudness
 * stage: the chains, and the mix's label (undefined when nothing is heard).
 */
function mixGraph(plan: ExportPlan): { graph: Graph; mix: string | undefined; total: number } {
  const total = totalSamplesOf(plan);
  const graph = new Graph();
  const picture = laneStreams(graph, pictureSegments(plan), 'picture', total);
  const tracks = trackSegments(plan, total);
  const ofTrack = (bus: SoundSegment['bus']) => tracks.filter((s) => s.bus === bus);
  const voiceLanes = laneStreams(graph, ofTrack('voice'), 'voice', total);
  const sfx = laneStreams(graph, ofTrack('sfx'), 'sfx', total);
  const musicLanes = laneStreams(graph, ofTrack('music'), 'music', total);

  const voice = voiceLanes.length > 0 ? graph.mixed(voiceLanes, 'voice') : undefined;
  let music = musicLanes.length > 0 ? graph.mixed(musicLanes, 'music') : undefined;
  let heardVoice = voice;
  if (voice && music && plan.filters.sidechaincompress) {
    // The voice bus is both heard and the compressor's key; the compressor works in doubles, so back to fltp.
    graph.chains.push(`${voice}asplit=2[voice_out][voice_key]`);
    heardVoice = '[voice_out]';
    music = graph.add(`${music}[voice_key]`, [DUCKING, FORMAT], 'music_ducked');
  }
  const streams = [...picture, heardVoice, ...sfx, music].filter((s): s is string => s !== undefined);
  return { graph, mix: streams.length > 0 ? graph.mixed(streams, 'mix') : undefined, total };
}

/**
 * The `-filter_complex` fragment for the export's sound, ending in `[aout]`: 48 kHz stereo float, exactly the
 * picture's total duration (`pictureTimeline`). Inputs are numbered as in plan.ts: each picture clip's own audio
 * is `[pictureSoundInput(plan, i):a:0]` (its file opened again for the sound alone; silence for images and
 * silent videos), each sound clip's
 * `[soundInput(j):a:0]`, every input already seeked to its trim point by the input args.
 *
 * The loudness stage is `loudnessFilters`: the measured programme normalised in linear mode when the plan
 * carries `measuredLoudness` (the measuring pass, measure-command.ts), else limited only.
 */
export function soundGraph(plan: ExportPlan): string {
  const { graph, mix, total } = mixGraph(plan);
  if (mix === undefined) {
    // The output always carries an AAC stereo track, silent if need be.
    graph.add('', [SILENCE, `atrim=end_sample=${total}`, FORMAT], SOUND_OUT);
    return graph.chains.join(';');
  }
  const master = [
    `apad=whole_len=${total}`,
    `atrim=end_sample=${total}`,
    ...loudnessFilters(plan),
    // The resampling and the limiter's delay may leave a few samples more or less: the length is cut once more.
    FORMAT,
    `apad=whole_len=${total}`,
    `atrim=end_sample=${total}`,
  ];
  graph.add(mix, master, SOUND_OUT);
  return graph.chains.join(';');
}

/**
 * The measuring pass's graph: the same mix as `soundGraph`'s, into `loudnorm … print_format=json`, ending in
 * `[measured]` (for the null muxer). On a plan without sound it measures silence.
 */
export function measureGraph(plan: ExportPlan): string {
  const { graph, mix, total } = mixGraph(plan);
  const source = mix ?? graph.add('', [SILENCE, FORMAT], 'silence');
  graph.add(source, [`apad=whole_len=${total}`, `atrim=end_sample=${total}`, MEASURE_FILTER], MEASURED_OUT);
  return graph.chains.join(';');
}

/**
 * The mixdown's graph: the same mix as `soundGraph`'s, exactly the picture's length and before any loudness
 * stage, ending in `[mixdown]` (for the PCM file the sound is encoded from, mixdown.ts);
 * with `measure`, also split into `[measured]`, `measureGraph`'s measurement, so one pass mixes and measures.
 */
export function mixdownGraph(plan: ExportPlan, measure: boolean): string {
  const { graph, mix, total } = mixGraph(plan);
  const source = mix ?? graph.add('', [SILENCE, FORMAT], 'silence');
  const exact = [`apad=whole_len=${total}`, `atrim=end_sample=${total}`];
  if (!measure) {
    graph.add(source, exact, MIXDOWN_OUT);
    return graph.chains.join(';');
  }
  graph.chains.push(`${source}${exact.join(',')},asplit=2[${MIXDOWN_OUT}][to_measure]`);
  graph.add('[to_measure]', [MEASURE_FILTER], MEASURED_OUT);
  return graph.chains.join(';');
}
