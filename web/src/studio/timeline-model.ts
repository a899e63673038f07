// The studio timeline's arithmetic, free of the DOM so it can be unit-tested: its lanes and their names, each
// clip's accessible name, seconds and pixels at a zoom level, snapping, and the REST change each gesture makes
// (docs/editor.md, `PATCH /projects/<id>/clips/<clip_id>` and `POST /projects/<id>/clips`).
import {
  LOOK_FIELDS,
  type AddClipRequest,
  type Asset,
  type Clip,
  type PatchClipRequest,
  type Track,
} from '../api-types.ts';
import { assetNumber } from '../asset-metadata.ts';
import type { PlacedClip } from './placements.ts';

/** The lanes top to bottom: the pictures, the words over them, then the sound. */
export const LANES: readonly Track[] = ['video', 'text', 'voice', 'sfx', 'music'];

/** Each lane's group name (docs/dashboard.md "Accessible names"). */
export const LANE_NAMES: Record<Track, string> = {
  video: 'Video track',
  text: 'Text track',
  voice: 'Voice track',
  sfx: 'Sound effects track',
  music: 'Music track',
};

/** Pixels per second at each zoom step; the default is the middle one. */
export const ZOOM_LEVELS: readonly number[] = [10, 20, 40, 80, 160, 320];
export const DEFAULT_ZOOM = 3;
/** How far (in pixels) a dragged time is pulled to a clip edge or the playhead. */
export const SNAP_PX = 8;
/** One keyboard step of a clip in time, or of a trim. */
export const KEY_STEP_SEC = 0.5;
/** The playhead's arrow-key step: one frame at 30 fps. */
export const FRAME_SEC = 1 / 30;
/** The shortest clip a trim or split leaves (the text track's own minimum is 0.5 s). */
export const MIN_CLIP_SEC = 0.5;

export const secToPx = (sec: number, pxPerSec: number): number => sec * pxPerSec;
export const pxToSec = (px: number, pxPerSec: number): number => px / pxPerSec;
export const clampZoom = (level: number): number => Math.max(0, Math.min(ZOOM_LEVELS.length - 1, level));
export const pxPerSecAt = (level: number): number => ZOOM_LEVELS[clampZoom(level)] ?? 80;

/** Seconds rounded to a tenth, as names and patches carry them (floating sums never leak out as 2.4999999). */
export const roundTenth = (sec: number): number => Math.round(sec * 10) / 10;
/** Seconds rounded to a millisecond, for values sent to the API. */
const roundMs = (sec: number): number => Math.round(sec * 1000) / 1000;

/** How long a placed clip is on the timeline. */
export const placedSec = (placed: PlacedClip): number => placed.endSec - placed.startSec;

/** How the page names an asset (the library's `assetName`, passed in so this module stays free of Preact). */
export type AssetNamer = (asset: Asset | undefined) => string;

/** What a clip shows as its name: a text clip its text, any other its asset's name. */
export function clipTitle(placed: PlacedClip, nameOf: AssetNamer): string {
  return placed.clip.track === 'text' ? (placed.clip.text ?? '') : nameOf(placed.asset);
}

/** A clip's accessible name: `<n>: <asset name or text>, <duration> s`, n from 1 in its lane. */
export function clipLabel(placed: PlacedClip, n: number, nameOf: AssetNamer): string {
  const title = clipTitle(placed, nameOf).replace(/\s+/g, ' ').trim();
  return `${n}: ${title}, ${roundTenth(placedSec(placed))} s`;
}

/** The placed clips of one lane in its order (video: idx; others: by start time, then idx). */
export function laneClips(placed: readonly PlacedClip[], track: Track): PlacedClip[] {
  return placed
    .filter((p) => p.clip.track === track)
    .sort((a, b) => (track === 'video' ? 0 : a.startSec - b.startSec) || a.clip.idx - b.clip.idx);
}

/** The edges a dragged time snaps to: every clip's start and end but the dragged clip's own, and the playhead. */
export function snapTargets(placed: readonly PlacedClip[], exceptId: string, playheadSec: number): number[] {
  const edges = placed.filter((p) => p.clip.id !== exceptId).flatMap((p) => [p.startSec, p.endSec]);
  return [...edges, playheadSec];
}

/** `sec` pulled to the nearest target within SNAP_PX pixels, or unchanged. */
export function snapTime(sec: number, targets: readonly number[], pxPerSec: number): number {
  const reach = SNAP_PX / pxPerSec;
  let best = sec;
  let bestDistance = Infinity;
  for (const target of targets) {
    const distance = Math.abs(target - sec);
    if (distance <= reach && distance < bestDistance) {
      best = target;
      bestDistance = distance;
    }
  }
  return best;
}

/** Where a video clip dragged so its middle is at `middleSec` lands: the place among the others it passed. */
export function reorderIdx(videoLane: readonly PlacedClip[], clipId: string, middleSec: number): number {
  const others = videoLane.filter((p) => p.clip.id !== clipId);
  return others.filter((p) => (p.startSec + p.endSec) / 2 < middleSec).length;
}

/** The longest a clip may be on the timeline: what is left of its asset after the trim, at its speed. */
function maxSecOf(placed: PlacedClip, trimStartSec: number): number {
  const length =
    placed.asset && placed.asset.kind !== 'image' ? assetNumber(placed.asset, 'duration_sec') : undefined;
  if (length === undefined) return Infinity;
  return (length - trimStartSec) / (placed.clip.speed ?? 1);
}

/** Moving a clip: a video clip to a new place (`idx`), any other to a new start (`start_sec`). */
export function movePatch(placed: PlacedClip, to: { idx?: number; startSec?: number }): PatchClipRequest {
  if (placed.clip.track === 'video') return { idx: Math.max(0, to.idx ?? placed.clip.idx) };
  return { start_sec: roundMs(Math.max(0, to.startSec ?? placed.startSec)) };
}

/** The keyboard's move: one place in the video lane, KEY_STEP_SEC elsewhere. */
export function moveStepPatch(
  placed: PlacedClip,
  direction: -1 | 1,
  laneLength: number,
): PatchClipRequest | null {
  if (placed.clip.track === 'video') {
    const idx = placed.clip.idx + direction;
    return idx < 0 || idx >= laneLength ? null : { idx };
  }
  const startSec = Math.max(0, roundTenth(placed.startSec + direction * KEY_STEP_SEC));
  return startSec === placed.startSec ? null : { start_sec: startSec };
}

/** Trimming the end edge to `endSec`: a new `duration_sec`, kept within the asset and above MIN_CLIP_SEC. */
export function trimEndPatch(placed: PlacedClip, endSec: number): PatchClipRequest | null {
  const max = maxSecOf(placed, placed.clip.trim_start_sec ?? 0);
  const duration = roundMs(Math.min(max, Math.max(MIN_CLIP_SEC, endSec - placed.startSec)));
  return Math.abs(duration - placedSec(placed)) < 0.001 ? null : { duration_sec: duration };
}

/**
 * Trimming the start edge to `startSec` keeps the end where it is: a media clip skips more (or less) of its
 * asset (`trim_start_sec`, at its speed) and an image, which has nothing to skip, just gets shorter; a text
 * clip starts later. Audio clips also move their `start_sec` so the end stays put.
 */
export function trimStartPatch(placed: PlacedClip, startSec: number): PatchClipRequest | null {
  const { clip } = placed;
  const speed = clip.speed ?? 1;
  const trim = clip.trim_start_sec ?? 0;
  const hasMedia = placed.asset !== undefined && placed.asset.kind !== 'image' && clip.track !== 'text';
  // How far the start moves: not past the end less the minimum, not before the asset's own start.
  let delta = Math.min(startSec - placed.startSec, placedSec(placed) - MIN_CLIP_SEC);
  if (hasMedia) delta = Math.max(delta, -trim / speed);
  if (clip.track !== 'video') delta = Math.max(delta, -placed.startSec);
  if (Math.abs(delta) < 0.001) return null;
  const patch: PatchClipRequest = { duration_sec: roundMs(placedSec(placed) - delta) };
  if (hasMedia) patch.trim_start_sec = roundMs(trim + delta * speed);
  if (clip.track !== 'video') patch.start_sec = roundMs(placed.startSec + delta);
  return patch;
}

/** Keyboard trim of the end edge by one step (direction -1 shortens). */
export const trimEndStepPatch = (placed: PlacedClip, direction: -1 | 1): PatchClipRequest | null =>
  trimEndPatch(placed, placed.endSec + direction * KEY_STEP_SEC);

/** The fields of a clip a copy of it needs to be added again (`POST .../clips`), at its place. */
export function clipAddBody(clip: Clip): AddClipRequest {
  const body: AddClipRequest = { video_id: clip.video_id, track: clip.track, idx: clip.idx };
  if (clip.asset_id !== null) body.asset_id = clip.asset_id;
  const copy = <K extends keyof AddClipRequest & keyof Clip>(key: K): void => {
    const value = clip[key];
    if (value !== null && value !== undefined) (body as Record<string, unknown>)[key] = value;
  };
  for (const key of ['start_sec', 'trim_start_sec', 'duration_sec', 'volume', ...LOOK_FIELDS] as const)
    copy(key);
  if (clip.track === 'video') delete body.start_sec;
  return body;
}

/** A split at the playhead: the clip shortened to it, and a new clip added after it with the rest. */
export interface SplitPlan {
  /** The patch shortening the clip to the playhead. */
  shorten: PatchClipRequest;
  /** The patch giving the clip its old length back (the split's inverse). */
  restore: PatchClipRequest;
  /** The new clip holding the rest. */
  add: AddClipRequest;
}

/** The split of a clip at `atSec`, or null when the playhead is not inside it with MIN_CLIP_SEC either side. */
export function splitPlan(placed: PlacedClip, atSec: number): SplitPlan | null {
  const { clip } = placed;
  const head = roundMs(atSec - placed.startSec);
  const tail = roundMs(placed.endSec - atSec);
  if (head < MIN_CLIP_SEC || tail < MIN_CLIP_SEC) return null;
  const add = clipAddBody(clip);
  add.duration_sec = tail;
  if (clip.track === 'video') {
    add.idx = clip.idx + 1;
    // The rest follows on at once: a cut, not the transition that brought the clip in.
    delete add.transition_in;
  } else {
    add.start_sec = roundMs(atSec);
    add.idx = clip.idx + 1;
  }
  if (clip.asset_id !== null && placed.asset?.kind !== 'image')
    add.trim_start_sec = roundMs((clip.trim_start_sec ?? 0) + head * (clip.speed ?? 1));
  // Fades belong to the ends: the first part keeps the fade in, the rest the fade out.
  if (add.fade_in_sec !== undefined) add.fade_in_sec = 0;
  const shorten: PatchClipRequest = { duration_sec: head };
  if (clip.fade_out_sec !== null && clip.fade_out_sec > 0) shorten.fade_out_sec = 0;
  const restore: PatchClipRequest = { duration_sec: roundMs(placedSec(placed)) };
  if (shorten.fade_out_sec !== undefined) restore.fade_out_sec = clip.fade_out_sec ?? 0;
  return { shorten, restore, add };
}

/** The values a patch changes, as the clip had them: the patch back (numbers only; null cannot be sent). */
export function inversePatch(placed: PlacedClip, patch: PatchClipRequest): PatchClipRequest {
  const back: Record<string, unknown> = {};
  for (const key of Object.keys(patch) as (keyof PatchClipRequest)[]) {
    if (key === 'duration_sec') back[key] = roundMs(placedSec(placed));
    else if (key === 'start_sec') back[key] = roundMs(placed.startSec);
    else if (key === 'trim_start_sec') back[key] = placed.clip.trim_start_sec ?? 0;
    else back[key] = placed.clip[key];
  }
  return back as PatchClipRequest;
}

/**
 * The fields a PATCH may set back to null (docs/editor.md, `PATCH /projects/<id>/clips/<clip_id>`:
 * `transition_in: null` removes a transition, `position` and `background` null go back to the style's).
 */
const PATCH_NULLABLE: ReadonlySet<string> = new Set(['transition_in', 'position', 'background']);

/**
 * Whether `patch` sets a field the clip leaves null that no PATCH can make null again — a `duration_sec` to
 * the asset's end, a `start_sec` right after the clip before (docs/editor.md "Clip"): its undo must add the
 * clip again without it, since the patch back would pin the computed number.
 */
export function patchLosesNull(clip: Clip, patch: PatchClipRequest): boolean {
  return Object.keys(patch).some(
    (key) => !PATCH_NULLABLE.has(key) && (clip[key as keyof Clip] ?? null) === null,
  );
}

/** What a key press asks of the timeline (null: not the timeline's key). */
export type KeyCommand =
  | { kind: 'move'; direction: -1 | 1 }
  | { kind: 'trim-end'; direction: -1 | 1 }
  | { kind: 'split' }
  | { kind: 'delete' }
  | { kind: 'step'; frames: -1 | 1 }
  | { kind: 'play-pause' }
  | { kind: 'undo' }
  | { kind: 'redo' };

/** The key's command; clip commands only with a clip focused. */
export function keyCommand(
  key: { key: string; altKey: boolean; shiftKey: boolean; ctrlKey: boolean; metaKey: boolean },
  clipFocused: boolean,
): KeyCommand | null {
  const arrow = key.key === 'ArrowLeft' ? -1 : key.key === 'ArrowRight' ? 1 : null;
  if ((key.ctrlKey || key.metaKey) && key.key.toLowerCase() === 'z')
    return { kind: key.shiftKey ? 'redo' : 'undo' };
  if (key.ctrlKey || key.metaKey) return null;
  if (arrow !== null) {
    if (key.altKey) return clipFocused ? { kind: 'move', direction: arrow } : null;
    if (key.shiftKey) return clipFocused ? { kind: 'trim-end', direction: arrow } : null;
    return { kind: 'step', frames: arrow };
  }
  if (key.altKey) return null;
  if (key.key === ' ') return { kind: 'play-pause' };
  if (key.key === 's' || key.key === 'S') return clipFocused ? { kind: 'split' } : null;
  if (key.key === 'Delete' || key.key === 'Backspace') return clipFocused ? { kind: 'delete' } : null;
  return null;
}

/** The playhead one frame on or back, within the video. */
export const stepPlayhead = (sec: number, frames: number, lengthSec: number): number =>
  Math.max(0, Math.min(lengthSec, roundMs(sec + frames * FRAME_SEC)));

/** Ruler ticks: a step in seconds that keeps labels at least ~60 px apart at this zoom. */
export function rulerStepSec(pxPerSec: number): number {
  for (const step of [0.5, 1, 2, 5, 10, 15, 30, 60]) if (step * pxPerSec >= 60) return step;
  return 120;
}
