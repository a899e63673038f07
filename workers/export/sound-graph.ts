// The export's sound as one `-filter_complex` fragment (docs/editor.md, The sound): the video track's own
// audio in place, voice/sfx/music clips at their start, music ducked under voice, the mix normalised. Pure:
// no ffmpeg here.
//
// The graph must parse on every ffmpeg the resolver may pick, including the registry's 2018 4.x fallback,
// which lacks `amix=normalize`, `adelay=all` and `alimiter=latency`. So it only uses options both have:
// per-channel sample delays (`adelay=delays=NS|NS`, every stream is stereo by then) and `amix` followed by
// `volume=N` (see `mixed`). Positions and lengths are counted in samples at 48 kHz so nothing drifts.
import { clipFrames } from './picture-graph.ts';
import {
  PICTURE_SOUND,
  pictureCarriesSound,
  pictureInput,
  pictureSoundLabel,
  pictureTimeline,
  soundInput,
  type ExportPlan,
  type SoundClip,
} from './plan.ts';

/** Sample rate of every stream in the graph and of the output's AAC track. */
export const SOUND_SAMPLE_RATE = 48_000;

/** Integrated loudness, true peak and loudness range of the normalised mix (spec 4.7: −14 LUFS). */
export const LOUDNESS = { integrated: -14, truePeak: -1.5, range: 11 } as const;

/** Label of the graph's single output: the caller maps it (`-map [aout]`). */
export const SOUND_OUT = 'aout';

// Ducking: music is pulled down by ~12 dB under speech at −20 dBFS RMS (threshold −34 dBFS, ratio 8), fast
// enough to clear the first syllable (20 ms) and slow enough in release not to pump between words (300 ms).
const DUCKING = 'sidechaincompress=threshold=0.02:ratio=8:attack=20:release=300';

// Without loudnorm only the peaks are held under −1.5 dBFS (0.84). `level=0` turns off the auto-level that
// would otherwise raise the whole mix to 0 dBFS; the 1 ms attack is also the limiter's delay (neither build
// can compensate it the same way: `latency` is newer than 2018), 48 samples, far below a frame.
const LIMITER = 'alimiter=limit=0.84:attack=1:release=50:level=0';

const FORMAT = `aformat=sample_fmts=fltp:sample_rates=${SOUND_SAMPLE_RATE}:channel_layouts=stereo`;

// Every decoded stream enters the graph through this: `first_pts=0` pads with silence an audio stream that starts
// after its input's zero (and drops samples before it), `async=1` fills gaps in its timestamps, so the samples
// keep the positions the timestamps give them instead of being pulled early. Then 48 kHz stereo float.
const NORMALISE_INPUT = `aresample=${SOUND_SAMPLE_RATE}:async=1:first_pts=0,${FORMAT}`;

/** An endless silent source (a chain without input label), cut by the `atrim` after it. */
const SILENCE = `anullsrc=r=${SOUND_SAMPLE_RATE}:cl=stereo`;

const toSamples = (seconds: number): number => Math.round(seconds * SOUND_SAMPLE_RATE);

/** A gain without exponent notation (ffmpeg's expression parser would read `1e-7` fine, but keep it plain). */
function gain(volume: number): string {
  const clamped = Math.min(2, Math.max(0, Number.isFinite(volume) ? volume : 1));
  return String(Number(clamped.toFixed(4)));
}

/**
 * Exactly `samples` long: the input's `-t` stops at a whole decoded frame (1024 samples for AAC) and a file can
 * end early, so the clip is cut (`atrim`) and padded (`apad`) to the sample — otherwise every later position on
 * the track would shift by the error.
 */
const exactly = (samples: number): string => `atrim=end_sample=${samples},apad=whole_len=${samples}`;

/** Filter chains joined by `;`, with the labels they define. */
class Graph {
  readonly chains: string[] = [];

  /** Appends `inputs` (labels, or '' for a source chain) → `filters` → `[output]`; returns the output label. */
  add(inputs: string, filters: string[], output: string): string {
    this.chains.push(`${inputs}${filters.join(',')}[${output}]`);
    return `[${output}]`;
  }

  /**
   * One stream summing `labels`. `amix` divides every input by the number of inputs still playing; every input
   * here lasts the whole timeline, so that divisor is the constant N and `volume=N` undoes it exactly — the
   * 2018 build has no `normalize=0`, and the result is the same on both.
   */
  mixed(labels: string[], output: string): string {
    if (labels.length === 1) return labels[0]!;
    return this.add(labels.join(''), [`amix=inputs=${labels.length}`, `volume=${labels.length}`], output);
  }
}

/**
 * How the video track's own sound reaches the mix. `separate`: the sound graph concatenates it itself (the
 * fast path, whose picture is copied, and tests of the sound alone). `with-picture`: it only makes each clip's
 * segment, exactly as long as the clip's frames, and the picture graph's `concat` joins them with the frames
 * into `[picture]` (pictureGraph's `withSound`).
 */
export type PictureSound = 'separate' | 'with-picture';

/**
 * The video track's audio as one stream of exactly the timeline's length: each clip's own audio (at its volume,
 * cut to its duration) or, for an image or a silent video, silence of its duration, concatenated in order. One
 * `concat` places every clip at its `pictureTimeline` start to the sample, whatever the number of clips, and
 * costs the final mix a single input. Undefined when no clip has audio (the bus would be pure silence).
 * With the picture, each segment lasts its clip's frames (to the sample: a frame is 1600 samples at 30 fps),
 * so the picture's concat, which starts each segment where the longer of its streams ended, never drifts.
 */
function pictureBus(graph: Graph, plan: ExportPlan, mode: PictureSound): string | undefined {
  if (!pictureCarriesSound(plan)) return undefined;
  const lengths = mode === 'with-picture' ? frameLengths(plan) : timeLengths(plan);
  const segments = plan.picture.flatMap((clip, i) => {
    const samples = lengths[i]!;
    if (mode === 'with-picture' && samples <= 0) return []; // no frame: not a segment of the picture either
    const label = pictureSoundLabel(i);
    if (!clip.source.audio) return [graph.add('', [SILENCE, `atrim=end_sample=${samples}`, FORMAT], label)];
    const filters = [NORMALISE_INPUT, `volume=${gain(clip.volume)}`, exactly(samples)];
    return [graph.add(`[${pictureInput(i)}:a:0]`, filters, label)];
  });
  if (mode === 'with-picture') return `[${PICTURE_SOUND}]`;
  if (segments.length === 1) return segments[0];
  return graph.add(segments.join(''), [`concat=n=${segments.length}:v=0:a=1`], PICTURE_SOUND);
}

/** Each picture clip's samples from its place on the timeline: rounded ends, so rounding never accumulates. */
function timeLengths(plan: ExportPlan): number[] {
  const { starts } = pictureTimeline(plan);
  return plan.picture.map((clip, i) => toSamples(starts[i]! + clip.durationSec) - toSamples(starts[i]!));
}

/** Each picture clip's samples from its frames (`clipFrames`), ends rounded from the frame count. */
function frameLengths(plan: ExportPlan): number[] {
  const { fps } = plan.output;
  let frame = 0;
  return clipFrames(plan).map((count) => {
    const start = Math.round((frame * SOUND_SAMPLE_RATE) / fps);
    frame += Math.max(0, count);
    return Math.round((frame * SOUND_SAMPLE_RATE) / fps) - start;
  });
}

/**
 * One audio-track clip as a stream of the whole timeline: its audio (which the input args already start at the
 * trim point) at its volume, exactly its duration, delayed to `startSec` and padded to the end — so every input
 * of a mix lasts equally long (see `Graph.mixed`). Undefined when nothing of it is heard.
 */
function placedSound(
  graph: Graph,
  plan: ExportPlan,
  clip: SoundClip,
  index: number,
  totalSamples: number,
): string | undefined {
  const start = toSamples(clip.startSec);
  const samples = Math.min(toSamples(clip.durationSec), totalSamples - start);
  if (!clip.source.audio || start < 0 || samples <= 0) return undefined;
  const filters = [NORMALISE_INPUT, `volume=${gain(clip.volume)}`, exactly(samples)];
  // Sample delays, one per channel: `all=1` and fractional milliseconds are not in every build.
  if (start > 0) filters.push(`adelay=delays=${start}S|${start}S`);
  if (start + samples < totalSamples) filters.push(`apad=whole_len=${totalSamples}`);
  return graph.add(`[${soundInput(plan, index)}:a:0]`, filters, `${clip.track}${index}`);
}

/**
 * The `-filter_complex` fragment for the export's sound, ending in `[aout]`: 48 kHz stereo float, exactly the
 * picture's total duration. Inputs are numbered as in plan.ts (`pictureInput`, `soundInput`) and are expected
 * to be trimmed already (`-ss trimStartSec -t durationSec` on each input).
 *
 * Loudness normalisation is single-pass `loudnorm` (dynamic mode: it measures as it goes, within about 1 LU of
 * the target on programme material; a two-pass measure-then-apply would double the export time). Without
 * `loudnorm` the mix is only peak-limited; without `sidechaincompress` music plays at its own volume.
 */
export function soundGraph(plan: ExportPlan, pictureSound: PictureSound = 'separate'): string {
  const { totalSec } = pictureTimeline(plan);
  const total = toSamples(totalSec);
  if (total <= 0) throw new RangeError('the export has no picture: its duration is zero');
  const graph = new Graph();

  const picture = pictureBus(graph, plan, pictureSound);
  const byTrack = { voice: [] as string[], sfx: [] as string[], music: [] as string[] };
  plan.sounds.forEach((clip, i) => {
    const label = placedSound(graph, plan, clip, i, total);
    if (label) byTrack[clip.track].push(label);
  });

  const voice = byTrack.voice.length > 0 ? graph.mixed(byTrack.voice, 'voice') : undefined;
  let music = byTrack.music.length > 0 ? graph.mixed(byTrack.music, 'music') : undefined;
  let heardVoice = voice;
  if (voice && music && plan.filters.sidechaincompress) {
    // The voice bus is both heard and the compressor's key; the compressor works in doubles, so back to fltp.
    graph.chains.push(`${voice}asplit=2[voice_out][voice_key]`);
    heardVoice = '[voice_out]';
    music = graph.add(`${music}[voice_key]`, [DUCKING, FORMAT], 'music_ducked');
  }

  const streams = [picture, heardVoice, ...byTrack.sfx, music].filter((s): s is string => s !== undefined);
  if (streams.length === 0) {
    // The output always carries an AAC stereo track, silent if need be.
    graph.add('', [SILENCE, `atrim=end_sample=${total}`, FORMAT], SOUND_OUT);
    return graph.chains.join(';');
  }

  const mix = graph.mixed(streams, 'mix');
  const master = [`apad=whole_len=${total}`, `atrim=end_sample=${total}`];
  if (plan.filters.loudnorm) {
    // loudnorm resamples to 192 kHz internally and outputs that rate: back to 48 kHz.
    const { integrated, truePeak, range } = LOUDNESS;
    master.push(`loudnorm=I=${integrated}:TP=${truePeak}:LRA=${range}`, `aresample=${SOUND_SAMPLE_RATE}`);
  } else {
    master.push(LIMITER);
  }
  // The resampling and the limiter's delay may leave a few samples more or less: the length is cut once more.
  master.push(FORMAT, `apad=whole_len=${total}`, `atrim=end_sample=${total}`);
  graph.add(mix, master, SOUND_OUT);
  return graph.chains.join(';');
}
