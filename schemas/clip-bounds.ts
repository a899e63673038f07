import { IMAGE_CLIP_DEFAULT_SEC, type AssetKind, type Track } from './editor-terms.ts';
import {
  TEXT_DURATION_DEFAULT_SEC,
  TEXT_DURATION_MAX_SEC,
  TEXT_DURATION_MIN_SEC,
  type TransitionIn,
} from './timeline-terms.ts';

// The bounds on a clip's numbers and on a video's timeline (docs/editor.md#bounds): pure arithmetic, shared
// by the request checks (the first, friendlier answer) and the project actor (the final authority).

/** The longest `duration_sec` of a clip, by track. */
export const CLIP_DURATION_MAX_SEC: Readonly<Record<Track, number>> = {
  video: 600,
  voice: 3600,
  sfx: 3600,
  music: 3600,
  text: TEXT_DURATION_MAX_SEC,
};

/** The shortest `duration_sec` of a clip, by track: only text clips have one beyond `> 0`. */
export const CLIP_DURATION_MIN_SEC: Readonly<Partial<Record<Track, number>>> = {
  text: TEXT_DURATION_MIN_SEC,
};

/** The largest `start_sec` and `trim_start_sec` of any clip. */
export const CLIP_OFFSET_MAX_SEC = 86_400;

/** The clip fields these bounds apply to; an absent (or null) field is not checked. */
export interface ClipNumbers {
  start_sec?: number | null;
  trim_start_sec?: number;
  duration_sec?: number | null;
}

/** The message for a clip number above its bound (JSON's `1e400` arrives as Infinity: above every bound). */
export const atMostMessage = (field: keyof ClipNumbers, max: number) => `${field} must be at most ${max}`;

/** The message for a `duration_sec` above 0 but under its track's shortest (text clips: 0.5). */
export const atLeastMessage = (field: keyof ClipNumbers, min: number) => `${field} must be at least ${min}`;

/** Each field's range: its lowest value (`duration_sec` excludes 0), its bound, the message below the range. */
const ranges = (track: Track) =>
  [
    { field: 'start_sec', lowest: 0, max: CLIP_OFFSET_MAX_SEC, below: 'start_sec must be a number >= 0' },
    {
      field: 'trim_start_sec',
      lowest: 0,
      max: CLIP_OFFSET_MAX_SEC,
      below: 'trim_start_sec must be a number >= 0',
    },
    {
      field: 'duration_sec',
      lowest: Number.MIN_VALUE,
      max: CLIP_DURATION_MAX_SEC[track],
      below: 'duration_sec must be a number > 0',
    },
  ] as const;

/**
 * The first problem of `numbers` for a clip on `track`, in field order, or null. A number is refused when it
 * is not finite or outside its range; the messages below the range are the ones the request schemas use.
 */
export function clipNumberProblem(track: Track, numbers: ClipNumbers): string | null {
  for (const { field, lowest, max, below } of ranges(track)) {
    const value = numbers[field];
    if (value === undefined || value === null) continue;
    // Written so that NaN fails both comparisons.
    if (!(value >= lowest)) return below;
    const shortest = field === 'duration_sec' ? CLIP_DURATION_MIN_SEC[track] : undefined;
    if (shortest !== undefined && value < shortest) return atLeastMessage(field, shortest);
    if (!(value <= max)) return atMostMessage(field, max);
  }
  return null;
}

/** A clip as the timeline needs it (a `ClipRecord` is one). */
export interface TimelineClip extends ClipNumbers {
  track: Track;
  idx: number;
  /** null: a text clip (no asset). */
  asset_id: string | null;
  trim_start_sec: number;
  /** Video clips of the video track: source seconds per timeline second (absent: 1). */
  speed?: number;
  /** Video-track clips: the overlap with the clip before (absent or null: a cut). */
  transition_in?: TransitionIn | null;
}

/** What the timeline needs of a clip's asset: its kind and, for timed media, its length when known. */
export interface ClipSource {
  kind: AssetKind;
  durationSec: number | null;
}

/** Sums of decimal seconds carry rounding noise: a timeline within this of the bound is at the bound. */
const TOLERANCE_SEC = 1e-6;

const AUDIO_TRACKS = ['voice', 'sfx', 'music'] as const satisfies readonly Track[];

/**
 * How long a clip plays on the timeline, as the export plays it: a text clip for its `duration_sec` (default
 * 3 s); an image for its `duration_sec` (default 5 s); timed media from the trim for `duration_sec` or to its
 * end, never past its end. `duration_sec` is timeline time: a video clip of the video track at speed `s` uses
 * `s` seconds of its source per second, so without `duration_sec` it lasts (source − trim) / s. A clip whose
 * asset is unknown, or whose length neither the clip nor the asset gives, plays nothing.
 */
export function playedSec(clip: TimelineClip, source: ClipSource | undefined): number {
  if (clip.track === 'text') return clip.duration_sec ?? TEXT_DURATION_DEFAULT_SEC;
  if (!source) return 0;
  if (source.kind === 'image') return clip.duration_sec ?? IMAGE_CLIP_DEFAULT_SEC;
  const speed = clip.track === 'video' && source.kind === 'video' ? (clip.speed ?? 1) : 1;
  const remaining =
    source.durationSec === null ? null : Math.max(0, source.durationSec - clip.trim_start_sec) / speed;
  const wanted = clip.duration_sec ?? remaining ?? 0;
  return remaining === null ? wanted : Math.min(wanted, remaining);
}

const byIdx = <Clip extends TimelineClip>(clips: readonly Clip[], track: Track) =>
  clips.filter((clip) => clip.track === track).sort((a, b) => a.idx - b.idx);

/** The clips of the video track that show a picture, in order, with how long each plays. */
function pictureClips<Clip extends TimelineClip>(
  clips: readonly Clip[],
  sourceOf: (assetId: string) => ClipSource | undefined,
): { clip: Clip; source: ClipSource | undefined; sec: number }[] {
  return byIdx(clips, 'video')
    .map((clip) => {
      const source = clip.asset_id === null ? undefined : sourceOf(clip.asset_id);
      return { clip, source, sec: playedSec(clip, source) };
    })
    .filter(({ source, sec }) => source?.kind !== 'audio' && sec > 0);
}

/** Where a clip plays on its video's timeline (`timelinePlacements`). */
export interface Placement<Clip extends TimelineClip = TimelineClip> {
  clip: Clip;
  /** Timeline second it starts at; a video-track clip with a transition starts that much before the last ended. */
  startSec: number;
  /** How long it plays (`playedSec`). */
  sec: number;
  /** Video-track clips: seconds it overlaps the clip before (its transition; 0 for a cut or the first clip). */
  overlapSec: number;
}

/**
 * Where each clip of one video plays, as the export plays it: the video track's clips one after another, each
 * transition overlapping its clip with the end of the one before (the first clip's transition fades in from
 * black and overlaps nothing); an audio clip at its `start_sec`, or where the previous clip of its track
 * ended; a text clip likewise, after the previous text clip. Clips that play nothing (an unknown asset, a
 * picture on an audio track, an audio asset on the video track, a clip trimmed past its end) are left out.
 * `clips` are the video's own; `sourceOf` answers each clip's asset.
 */
export function timelinePlacements<Clip extends TimelineClip>(
  clips: readonly Clip[],
  sourceOf: (assetId: string) => ClipSource | undefined,
): Placement<Clip>[] {
  const placed: Placement<Clip>[] = [];
  let end = 0;
  pictureClips(clips, sourceOf).forEach(({ clip, sec }, index) => {
    const overlapSec = index === 0 ? 0 : (clip.transition_in?.duration_sec ?? 0);
    const startSec = Math.max(0, end - overlapSec);
    placed.push({ clip, startSec, sec, overlapSec });
    end = startSec + sec;
  });
  for (const track of AUDIO_TRACKS) {
    let cursor = 0;
    for (const clip of byIdx(clips, track)) {
      const source = clip.asset_id === null ? undefined : sourceOf(clip.asset_id);
      // A picture has no sound to place: the export skips it without moving the track on.
      if (!source || source.kind === 'image') continue;
      const startSec = clip.start_sec ?? cursor;
      const sec = playedSec(clip, source);
      placed.push({ clip, startSec, sec, overlapSec: 0 });
      cursor = startSec + sec;
    }
  }
  let textCursor = 0;
  for (const clip of byIdx(clips, 'text')) {
    const startSec = clip.start_sec ?? textCursor;
    const sec = playedSec(clip, undefined);
    placed.push({ clip, startSec, sec, overlapSec: 0 });
    textCursor = startSec + sec;
  }
  return placed;
}

/**
 * The length of one video's timeline in seconds: the end of its last clip on any track (`timelinePlacements`:
 * Σ durations − Σ transitions on the video track).
 */
export function timelineEndSec(
  clips: readonly TimelineClip[],
  sourceOf: (assetId: string) => ClipSource | undefined,
): number {
  return timelinePlacements(clips, sourceOf).reduce(
    (end, { startSec, sec }) => Math.max(end, startSec + sec),
    0,
  );
}

/**
 * The video-track clips whose `transition_in` is longer than half of a clip it joins — itself, and the clip
 * before it unless it is the first — by id. Clips are the ones that show, as the export plays them; a clip
 * that shows nothing (trimmed past its source's end, or a video of unknown length) is not judged.
 */
export function overlongTransitions<Clip extends TimelineClip & { id: string }>(
  clips: readonly Clip[],
  sourceOf: (assetId: string) => ClipSource | undefined,
): Set<string> {
  const overlong = new Set<string>();
  const shown = pictureClips(clips, sourceOf);
  shown.forEach(({ clip, sec }, index) => {
    const transition = clip.transition_in;
    if (!transition) return;
    const joined = index === 0 ? [sec] : [sec, shown[index - 1]!.sec];
    if (joined.some((length) => transition.duration_sec > length / 2 + TOLERANCE_SEC)) overlong.add(clip.id);
  });
  return overlong;
}

/**
 * Whether a change may take a timeline from `beforeSec` to `afterSec` under the bound `maxSec`: it may end
 * anywhere up to the bound, and a timeline already past the bound (stored before the bound, or under a larger
 * one) may still get shorter or stay as long, so that it can be repaired.
 */
export function timelineChangeAllowed(beforeSec: number, afterSec: number, maxSec: number): boolean {
  return afterSec <= maxSec + TOLERANCE_SEC || afterSec <= beforeSec + TOLERANCE_SEC;
}

/** The answer to a change refused by `timelineChangeAllowed`. */
export const timelineTooLongMessage = (maxSec: number) => `timeline would be longer than ${maxSec} seconds`;
