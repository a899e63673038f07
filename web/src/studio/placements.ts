// Where each clip of one video sits on its timeline, for the studio's timeline and its preview player alike:
// the same arithmetic as the export (schemas/clip-bounds.ts `timelinePlacements`, docs/editor.md
// "Transitions"), fed with each asset's kind and length from its metadata.
import { timelinePlacements, type Asset, type Clip, type ClipSource } from '../api-types.ts';
import { assetNumber } from '../asset-metadata.ts';

/** A clip placed on the timeline, with its asset (undefined for a text clip or a missing asset). */
export interface PlacedClip {
  clip: Clip;
  asset: Asset | undefined;
  /** Timeline second it starts at (a transition starts it before the clip before it ends). */
  startSec: number;
  /** Timeline second it ends at. */
  endSec: number;
  /** Video-track clips: seconds it overlaps the clip before (its transition); 0 elsewhere. */
  overlapSec: number;
}

/** What the timeline needs of an asset: its kind, and its length when it has one (`metadata.duration_sec`). */
export function clipSourceOf(asset: Asset): ClipSource {
  return {
    kind: asset.kind,
    durationSec: asset.kind === 'image' ? null : (assetNumber(asset, 'duration_sec') ?? null),
  };
}

/**
 * The placed clips of one video (`clips` already filtered to it), in each track's order; clips that play
 * nothing (see `timelinePlacements`) are left out.
 */
export function placeClips(clips: readonly Clip[], assets: readonly Asset[]): PlacedClip[] {
  const byId = new Map(assets.map((asset) => [asset.id, asset]));
  const sourceOf = (assetId: string) => {
    const asset = byId.get(assetId);
    return asset && clipSourceOf(asset);
  };
  // A clip as it reads back says null where a field does not apply; the arithmetic reads those as absent.
  const timed = clips.map((clip) => ({
    clip,
    track: clip.track,
    idx: clip.idx,
    asset_id: clip.asset_id,
    start_sec: clip.start_sec,
    trim_start_sec: clip.trim_start_sec ?? 0,
    duration_sec: clip.duration_sec,
    speed: clip.speed ?? undefined,
    transition_in: clip.transition_in,
  }));
  return timelinePlacements(timed, sourceOf).map(({ clip: { clip }, startSec, sec, overlapSec }) => ({
    clip,
    asset: clip.asset_id === null ? undefined : byId.get(clip.asset_id),
    startSec,
    endSec: startSec + sec,
    overlapSec,
  }));
}

/** The video's length: the end of its last placed clip. */
export const timelineLengthSec = (placed: readonly PlacedClip[]): number =>
  placed.reduce((end, one) => Math.max(end, one.endSec), 0);
