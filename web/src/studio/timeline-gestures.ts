// Each gesture on the timeline (a drag, a key, a tap on a toolbar button) as the history entry it makes: the
// REST calls forward and back. Pure, so the view only tracks pointers and keys.
import type { AddClipRequest, PatchClipRequest, Track } from '../api-types.ts';
import {
  addEntry,
  deleteEntry,
  patchEntry,
  patchReAddedEntry,
  splitEntry,
  type HistoryEntry,
} from './edit-history.ts';
import type { PlacedClip } from './placements.ts';
import {
  clipAddBody,
  inversePatch,
  laneClips,
  movePatch,
  moveStepPatch,
  patchLosesNull,
  pxToSec,
  reorderIdx,
  snapTargets,
  snapTime,
  splitPlan,
  trimEndPatch,
  trimEndStepPatch,
  trimStartPatch,
} from './timeline-model.ts';

/** What a pointer drag on a clip does: its body moves it, its edges trim it. */
export type DragMode = 'move' | 'trim-start' | 'trim-end';

/**
 * A patch of a clip and its way back: the patch back, or, when the patch sets a field the clip left null (a
 * length to the asset's end), the clip added again as it was (docs/dashboard.md "Undo").
 */
export function clipPatchEntry(label: string, placed: PlacedClip, patch: PatchClipRequest): HistoryEntry {
  const { clip } = placed;
  if (!patchLosesNull(clip, patch)) return patchEntry(label, clip.id, patch, inversePatch(placed, patch));
  return patchReAddedEntry(label, clip.id, patch, {
    original: clipAddBody(clip),
    patched: clipAddBody({ ...clip, ...patch }),
  });
}

const patched = (label: string, placed: PlacedClip, patch: PatchClipRequest | null): HistoryEntry | null =>
  patch && Object.keys(patch).length > 0 ? clipPatchEntry(label, placed, patch) : null;

/** The edit a drag of `dxPx` pixels makes (null: none), snapping to edges and the playhead. */
export function dragEntry(
  all: readonly PlacedClip[],
  placed: PlacedClip,
  mode: DragMode,
  dxPx: number,
  pxPerSec: number,
  playheadSec: number,
): HistoryEntry | null {
  const dx = pxToSec(dxPx, pxPerSec);
  const targets = snapTargets(all, placed.clip.id, playheadSec);
  const snap = (sec: number): number => snapTime(sec, targets, pxPerSec);
  if (mode === 'trim-start')
    return patched('trim', placed, trimStartPatch(placed, snap(placed.startSec + dx)));
  if (mode === 'trim-end') return patched('trim', placed, trimEndPatch(placed, snap(placed.endSec + dx)));
  if (placed.clip.track === 'video') {
    const lane = laneClips(all, 'video');
    const idx = reorderIdx(lane, placed.clip.id, (placed.startSec + placed.endSec) / 2 + dx);
    return idx === placed.clip.idx ? null : patched('move', placed, movePatch(placed, { idx }));
  }
  // Either edge of a moved clip may meet a target: the start snaps first, else the end pulls it along.
  const length = placed.endSec - placed.startSec;
  const start = placed.startSec + dx;
  const snappedStart = snap(start);
  const startSec = snappedStart !== start ? snappedStart : snap(start + length) - length;
  const patch = movePatch(placed, { startSec });
  return patch.start_sec === Math.round(placed.startSec * 1000) / 1000
    ? null
    : patched('move', placed, patch);
}

/** Alt+Arrow / the Move buttons: one place (video lane) or half a second. */
export function moveStepEntry(all: readonly PlacedClip[], placed: PlacedClip, direction: -1 | 1) {
  const laneLength = laneClips(all, placed.clip.track).length;
  return patched('move', placed, moveStepPatch(placed, direction, laneLength));
}

/** Shift+Arrow / the Shorten and Lengthen buttons. */
export const trimStepEntry = (placed: PlacedClip, direction: -1 | 1) =>
  patched('trim', placed, trimEndStepPatch(placed, direction));

/** S / Split: at the playhead, when it is inside the clip. */
export function splitAtEntry(placed: PlacedClip, atSec: number): HistoryEntry | null {
  const plan = splitPlan(placed, atSec);
  return plan && splitEntry(placed.clip.id, plan);
}

/** Delete: undone by adding the clip again with the same fields. */
export const deleteClipEntry = (placed: PlacedClip): HistoryEntry =>
  deleteEntry(placed.clip.id, clipAddBody(placed.clip));

/** An asset dropped on a lane at `atSec`: a video clip goes where it was dropped among the others. */
export function dropEntry(
  all: readonly PlacedClip[],
  track: Track,
  assetId: string,
  videoId: string | null,
  atSec: number,
): HistoryEntry {
  const body: AddClipRequest = { track, asset_id: assetId };
  if (videoId) body.video_id = videoId;
  if (track === 'video') body.idx = reorderIdx(laneClips(all, 'video'), '', atSec);
  else body.start_sec = Math.max(0, Math.round(atSec * 10) / 10);
  return addEntry(body);
}

/** The clip the Split button works on: the selected one, else the video clip under the playhead. */
export function splitTarget(
  all: readonly PlacedClip[],
  selected: PlacedClip | undefined,
  atSec: number,
): PlacedClip | undefined {
  return selected ?? all.find((p) => p.clip.track === 'video' && p.startSec < atSec && atSec < p.endSec);
}
