// The preview's sound as a schedule (docs/editor.md "How the export mixes the sound"): one entry per clip
// with sound — video-track videos' own sound, and every voice, sfx and music clip — with where it plays on
// the timeline, where in its source, how fast, and its gain over time (volume × fades × the transitions'
// equal-power cross-fades × 10 ms de-click ramps at cuts). Pure: preview-mixer.ts plays it on WebAudio.
import { DECLICK_SEC } from '../api-types.ts';
import { clipFrames, PREVIEW_FPS, videoLengthSec } from './preview-frame.ts';
import type { PlacedClip } from './placements.ts';

/** A point of a gain envelope: the gain at a timeline second (linear between points). */
export interface GainPoint {
  sec: number;
  gain: number;
}

/** One clip's sound on the timeline. */
export interface SoundEntry {
  clipId: string;
  /** The track it plays on (a video clip's own sound: `video`). */
  track: PlacedClip['clip']['track'];
  assetId: string;
  url: string;
  /** Timeline seconds it plays from and to (cut at the video's end). */
  startSec: number;
  endSec: number;
  /** The source second heard at `startSec`. */
  sourceStartSec: number;
  /** Source seconds per timeline second (video-track clips' speed; 1 elsewhere). */
  rate: number;
  /** The gain over the entry, points in time order from `startSec` to `endSec`. */
  envelope: GainPoint[];
}

/**
 * Music under voice (the export's side-chain compressor: about 12 dB quieter while someone speaks, 20 ms
 * attack, back within 300 ms). The preview ducks over the voice clips' spans, not the voice's level: a pause
 * inside a voice clip keeps the music down.
 */
const DUCK_GAIN = 10 ** (-12 / 20);
const DUCK_ATTACK_SEC = 0.02;
const DUCK_RELEASE_SEC = 0.3;

/** Points of the quarter-sine cross-fade curves: enough for a smooth curve from linear ramps. */
const CROSSFADE_STEPS = 8;

/** Whether the asset can have sound: videos and audio (a silent video is silence, found when decoded). */
const hasSound = (placed: PlacedClip): boolean =>
  placed.asset !== undefined && (placed.asset.kind === 'video' || placed.asset.kind === 'audio');

/** One side of a clip's sound: a curve `shape(x)` from 0 to 1 over `sec` seconds. */
interface Ramp {
  sec: number;
  shape: (x: number) => number;
}

const linear = (x: number): number => x;
/** The equal-power cross-fade (a quarter sine; the other side is its mirror, the cosine). */
const quarterSine = (x: number): number => Math.sin((x * Math.PI) / 2);

/**
 * One edge of a clip, as the export's sound-segments.ts `edge`: a cross-fade (a transition, quarter sine) with
 * the clip's own fade on top, else the longer of its fade and the de-click ramp (linear).
 */
function edge(crossSec: number, fadeSec: number): Ramp[] {
  if (crossSec > 0)
    return [{ sec: crossSec, shape: quarterSine }, ...(fadeSec > 0 ? [{ sec: fadeSec, shape: linear }] : [])];
  return [{ sec: Math.max(fadeSec, DECLICK_SEC), shape: linear }];
}

/** The gain at `sec` of a clip with `volume`, each of its ramps rising from `start` or falling to `end`. */
function gainAt(sec: number, start: number, end: number, volume: number, ins: Ramp[], outs: Ramp[]): number {
  let gain = volume;
  for (const ramp of ins)
    if (ramp.sec > 0) gain *= ramp.shape(Math.min(1, Math.max(0, (sec - start) / ramp.sec)));
  for (const ramp of outs)
    if (ramp.sec > 0) gain *= ramp.shape(Math.min(1, Math.max(0, (end - sec) / ramp.sec)));
  return gain;
}

/** The envelope's points: the ends, each ramp's corners, and steps along the curved ones. */
function envelopeOf(start: number, end: number, volume: number, ins: Ramp[], outs: Ramp[]): GainPoint[] {
  const times = new Set<number>([start, end]);
  const add = (sec: number) => {
    if (sec >= start && sec <= end) times.add(sec);
  };
  for (const ramp of ins) {
    const steps = ramp.shape === linear ? 1 : CROSSFADE_STEPS;
    for (let i = 1; i <= steps; i++) add(start + (ramp.sec * i) / steps);
  }
  for (const ramp of outs) {
    const steps = ramp.shape === linear ? 1 : CROSSFADE_STEPS;
    for (let i = 1; i <= steps; i++) add(end - (ramp.sec * i) / steps);
  }
  return [...times]
    .sort((a, b) => a - b)
    .map((sec) => ({ sec, gain: gainAt(sec, start, end, volume, ins, outs) }));
}

/**
 * The sound schedule of a video: `placed` is `placeClips`' answer. Video-track clips take the frame grid's
 * places (their sound stays with their picture); a transition's two clips cross-fade over its overlap (equal
 * power), the first clip's transition fades its sound in; a clip's own fades apply on top; a start or an end
 * without a fade of at least 10 ms gets a 10 ms ramp. Everything stops at the video's end.
 */
export function soundSchedule(placed: readonly PlacedClip[]): SoundEntry[] {
  const videoEnd = videoLengthSec(placed);
  const pictures = placed.filter((one) => one.clip.track === 'video');
  const entries: SoundEntry[] = [];
  for (const one of placed) {
    if (one.clip.track === 'text' || !hasSound(one) || !one.asset) continue;
    const onVideoTrack = one.clip.track === 'video';
    const frames = onVideoTrack ? clipFrames(one) : undefined;
    const start = frames ? frames.first / PREVIEW_FPS : one.startSec;
    const ownEnd = frames ? frames.end / PREVIEW_FPS : one.endSec;
    const end = Math.min(ownEnd, videoEnd);
    if (end <= start) continue;
    let crossIn = 0;
    let crossOut = 0;
    if (onVideoTrack) {
      const index = pictures.indexOf(one);
      const next = pictures[index + 1];
      if (index === 0 && one.clip.transition_in) crossIn = one.clip.transition_in.duration_sec;
      else if (index > 0 && one.clip.transition_in)
        crossIn = clipFrames(pictures[index - 1]!).end / PREVIEW_FPS - start;
      if (next?.clip.transition_in) crossOut = ownEnd - clipFrames(next).first / PREVIEW_FPS;
    }
    const cutByEnd = end < ownEnd;
    const ins = edge(crossIn, one.clip.fade_in_sec ?? 0);
    // A fade out meant for the clip's own end is not heard when the video's end cuts it first.
    const outs = cutByEnd ? edge(0, 0) : edge(crossOut, one.clip.fade_out_sec ?? 0);
    const rate = onVideoTrack ? (one.clip.speed ?? 1) : 1;
    entries.push({
      clipId: one.clip.id,
      track: one.clip.track,
      assetId: one.asset.id,
      url: one.asset.url,
      startSec: start,
      endSec: end,
      sourceStartSec: one.clip.trim_start_sec ?? 0,
      rate,
      envelope: envelopeOf(start, end, one.clip.volume ?? 1, ins, outs),
    });
  }
  const voices = entries.filter((entry) => entry.track === 'voice');
  if (voices.length === 0) return entries;
  return entries.map((entry) => (entry.track === 'music' ? duckedUnder(entry, voices) : entry));
}

/** How much of the ducking applies at `sec` (0 none, 1 fully ducked) for the voice spans. */
function duckDepth(voices: readonly SoundEntry[], sec: number): number {
  let depth = 0;
  for (const voice of voices) {
    if (sec >= voice.startSec && sec <= voice.endSec)
      depth = Math.max(depth, Math.min(1, (sec - voice.startSec) / DUCK_ATTACK_SEC));
    else if (sec > voice.endSec && sec < voice.endSec + DUCK_RELEASE_SEC)
      depth = Math.max(depth, 1 - (sec - voice.endSec) / DUCK_RELEASE_SEC);
  }
  return depth;
}

/** A music entry with its gain lowered while the voice track speaks. */
function duckedUnder(music: SoundEntry, voices: readonly SoundEntry[]): SoundEntry {
  const times = new Set(music.envelope.map((point) => point.sec));
  for (const voice of voices) {
    const corners = [
      voice.startSec,
      voice.startSec + DUCK_ATTACK_SEC,
      voice.endSec,
      voice.endSec + DUCK_RELEASE_SEC,
    ];
    for (const sec of corners) if (sec > music.startSec && sec < music.endSec) times.add(sec);
  }
  const envelope = [...times]
    .sort((a, b) => a - b)
    .map((sec) => ({
      sec,
      gain: envelopeGain(music, sec) * (1 - (1 - DUCK_GAIN) * duckDepth(voices, sec)),
    }));
  return { ...music, envelope };
}

/** The envelope's gain at a timeline second (linear between points; 0 outside the entry). */
export function envelopeGain(entry: Pick<SoundEntry, 'envelope'>, sec: number): number {
  const points = entry.envelope;
  if (points.length === 0 || sec < points[0]!.sec || sec > points.at(-1)!.sec) return 0;
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1]!;
    const b = points[i]!;
    if (sec <= b.sec)
      return b.sec === a.sec ? b.gain : a.gain + ((b.gain - a.gain) * (sec - a.sec)) / (b.sec - a.sec);
  }
  return points.at(-1)!.gain;
}
