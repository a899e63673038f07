// Where each clip's sound goes on the timeline and how it is shaped (docs/editor.md, How the export mixes the
// sound): its place and length in samples, its tempo, its gain and its fades — the clip's own, the cross-fades
// of transitions, the fade from silence of a first clip that fades in from black, and the de-click ramps at
// every edge that has none. Plain data, counted in samples at 48 kHz so that nothing drifts; sound-graph.ts
// turns it into filters. Segments that overlap (a transition) are put on separate lanes.
import { DECLICK_SEC } from '../../schemas/timeline-terms.ts';
import { SOUND_SAMPLE_RATE } from './loudness.ts';
import {
  overlapSec,
  pictureSoundInput,
  pictureTimeline,
  soundInput,
  type ExportPlan,
  type SoundClip,
} from './plan.ts';

export const toSamples = (seconds: number): number => Math.round(seconds * SOUND_SAMPLE_RATE);

/**
 * A gain ramp within a segment, in the segment's own samples. `tri` is linear in amplitude (the clip's fades
 * and the de-click ramps); `qsin` a quarter sine, so that a fade out (cos) and a fade in (sin) over the same
 * span keep the power constant (sin² + cos² = 1): the cross-fade of a transition.
 */
export interface Ramp {
  direction: 'in' | 'out';
  startSample: number;
  samples: number;
  curve: 'tri' | 'qsin';
}

/** One clip's sound, placed on the timeline. */
export interface SoundSegment {
  /** Its label in the graph (`pic<i>`, `voice<j>`…). */
  label: string;
  /** The video track's own sound, or the audio track it is on. */
  bus: 'picture' | SoundClip['track'];
  /** The ffmpeg input it reads (already seeked to the clip's trim point by the input args). */
  input: number;
  /** Where it starts on the timeline. */
  startSample: number;
  /** How long it is heard on the timeline (a clip running past the end of the picture is cut there). */
  samples: number;
  /** Source samples it plays (`samples` × speed). */
  sourceSamples: number;
  /** Source seconds per timeline second. */
  speed: number;
  volume: number;
  ramps: Ramp[];
}

const DECLICK = toSamples(DECLICK_SEC);

/** A ramp no longer than the segment, or none when it would be empty. */
function ramp(
  direction: Ramp['direction'],
  samples: number,
  of: number,
  curve: Ramp['curve'] = 'tri',
): Ramp[] {
  const length = Math.min(Math.max(0, samples), of);
  if (length <= 0) return [];
  return [{ direction, startSample: direction === 'in' ? 0 : of - length, samples: length, curve }];
}

/**
 * The edge of a clip: a cross-fade of `crossSamples` (a transition; 0 for none), and the clip's own fade of
 * `fadeSamples`. Without a cross-fade the edge gets the longer of its fade and the de-click ramp, so no edge
 * starts or stops the sound abruptly; with one, the clip's fade, if any, applies on top of it.
 */
function edge(direction: Ramp['direction'], crossSamples: number, fadeSamples: number, of: number): Ramp[] {
  if (crossSamples > 0)
    return [...ramp(direction, crossSamples, of, 'qsin'), ...ramp(direction, fadeSamples, of)];
  return ramp(direction, Math.max(fadeSamples, DECLICK), of);
}

/**
 * The video track's own sound, clip by clip (clips without audio are silence: no segment). Each clip's audio
 * starts at its picture start (`pictureTimeline`), lasts its duration on the timeline, and plays `duration ×
 * speed` seconds of its source at that speed. Across a transition the two clips cross-fade over the
 * transition's length; a first clip with a transition (a fade in from black) fades in from silence over it.
 */
export function pictureSegments(plan: ExportPlan): SoundSegment[] {
  const { starts } = pictureTimeline(plan);
  return plan.picture.flatMap((clip, i) => {
    const start = toSamples(starts[i]!);
    const samples = toSamples(starts[i]! + clip.durationSec) - start;
    const input = pictureSoundInput(plan, i);
    if (input === undefined || samples <= 0) return [];
    const speed = clip.speed ?? 1;
    const crossIn = toSamples(i === 0 ? (clip.transitionIn?.durationSec ?? 0) : overlapSec(plan, i));
    const crossOut = toSamples(overlapSec(plan, i + 1));
    return [
      {
        label: `pic${i}`,
        bus: 'picture',
        input,
        startSample: start,
        samples,
        sourceSamples: Math.round(samples * speed),
        speed,
        volume: clip.volume,
        ramps: [
          ...edge('in', crossIn, toSamples(clip.fadeInSec ?? 0), samples),
          ...edge('out', crossOut, toSamples(clip.fadeOutSec ?? 0), samples),
        ],
      },
    ];
  });
}

/**
 * The audio tracks' clips (voice, sfx, music), each at its start, with its fades and the de-click ramps. A clip
 * that runs past the end of the picture is cut there, with a de-click ramp at the cut. Clips without audio,
 * and clips starting at or after the end, are left out.
 */
export function trackSegments(plan: ExportPlan, totalSamples: number): SoundSegment[] {
  return plan.sounds.flatMap((clip, j) => {
    const start = toSamples(clip.startSec);
    const clipSamples = toSamples(clip.durationSec);
    const samples = Math.min(clipSamples, totalSamples - start);
    if (!clip.source.audio || start < 0 || samples <= 0) return [];
    const cut = samples < clipSamples;
    // The clip's ramps as if it played whole; those that start after the cut are never heard.
    const ramps = [
      ...edge('in', 0, toSamples(clip.fadeInSec ?? 0), clipSamples),
      ...edge('out', 0, toSamples(clip.fadeOutSec ?? 0), clipSamples),
    ].filter((r) => r.startSample < samples);
    if (cut) ramps.push(...ramp('out', DECLICK, samples));
    return [
      {
        label: `${clip.track}${j}`,
        bus: clip.track,
        input: soundInput(plan, j),
        startSample: start,
        samples,
        sourceSamples: samples,
        speed: 1,
        volume: clip.volume,
        ramps,
      },
    ];
  });
}

/**
 * Segments in lanes in which none overlaps another: each segment, in order of start, goes on the first lane that
 * is free by its start (two lanes for a track of transitions, one for butt cuts).
 */
export function lanes(segments: SoundSegment[]): SoundSegment[][] {
  const result: { end: number; segments: SoundSegment[] }[] = [];
  const ordered = [...segments].sort((a, b) => a.startSample - b.startSample);
  for (const segment of ordered) {
    const lane = result.find((l) => l.end <= segment.startSample);
    if (lane) {
      lane.segments.push(segment);
      lane.end = segment.startSample + segment.samples;
    } else {
      result.push({ end: segment.startSample + segment.samples, segments: [segment] });
    }
  }
  return result.map((lane) => lane.segments);
}
