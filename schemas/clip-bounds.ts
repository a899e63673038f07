import { IMAGE_CLIP_DEFAULT_SEC, type AssetKind, type Track } from './editor-terms.ts';

// The bounds on a clip's numbers and on a video's timeline (docs/editor.md#bounds): pure arithmetic, shared
// by the request checks (the first, friendlier answer) and the project actor (the final authority).

/** The longest `duration_sec` of a clip, by track. */
export const CLIP_DURATION_MAX_SEC: Readonly<Record<Track, number>> = {
  video: 600,
  voice: 3600,
  sfx: 3600,
  music: 3600,
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
    if (!(value <= max)) return atMostMessage(field, max);
  }
  return null;
}

/** A clip as the timeline needs it (a `ClipRecord` is one). */
export interface TimelineClip extends ClipNumbers {
  track: Track;
  idx: number;
  asset_id: string;
  trim_start_sec: number;
}

/** What the timeline needs of a clip's asset: its kind and, for timed media, its length when known. */
export interface ClipSource {
  kind: AssetKind;
  durationSec: number | null;
}

const AUDIO_TRACKS = ['voice', 'sfx', 'music'] as const satisfies readonly Track[];

/**
 * How long a clip plays, as the export plays it: an image for its `duration_sec` (default 5 s); timed media
 * from the trim for `duration_sec` or to its end, never past its end. A clip whose asset is unknown, or whose
 * length neither the clip nor the asset gives, plays nothing.
 */
function playedSec(clip: TimelineClip, source: ClipSource | undefined): number {
  if (!source) return 0;
  if (source.kind === 'image') return clip.duration_sec ?? IMAGE_CLIP_DEFAULT_SEC;
  const remaining =
    source.durationSec === null ? null : Math.max(0, source.durationSec - clip.trim_start_sec);
  const wanted = clip.duration_sec ?? remaining ?? 0;
  return remaining === null ? wanted : Math.min(wanted, remaining);
}

const byIdx = (clips: readonly TimelineClip[], track: Track) =>
  clips.filter((clip) => clip.track === track).sort((a, b) => a.idx - b.idx);

/**
 * The length of one video's timeline in seconds: the end of its last clip on any track. The video track's
 * clips play one after the other; an audio clip starts at its `start_sec`, or where the previous clip of its
 * track ended. `clips` are the video's own; `sourceOf` answers each clip's asset.
 */
export function timelineEndSec(
  clips: readonly TimelineClip[],
  sourceOf: (assetId: string) => ClipSource | undefined,
): number {
  let end = 0;
  for (const clip of byIdx(clips, 'video')) {
    const source = sourceOf(clip.asset_id);
    // Sound has no picture: the video track skips it, as the export does.
    if (source?.kind !== 'audio') end += playedSec(clip, source);
  }
  for (const track of AUDIO_TRACKS) {
    let cursor = 0;
    for (const clip of byIdx(clips, track)) {
      const source = sourceOf(clip.asset_id);
      // A picture has no sound to place: the export skips it without moving the track on.
      if (!source || source.kind === 'image') continue;
      cursor = (clip.start_sec ?? cursor) + playedSec(clip, source);
      end = Math.max(end, cursor);
    }
  }
  return end;
}

/** Sums of decimal seconds carry rounding noise: a timeline within this of the bound is at the bound. */
const TOLERANCE_SEC = 1e-6;

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
