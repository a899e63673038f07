// What the editor says of an asset: the tracks it may go on and its short name (the studio's library grid
// draws the library itself: web/src/studio/library-grid.tsx).
import { TRACKS, trackAccepts, type Asset, type Track } from '../api-types.ts';
import { assetText } from '../asset-metadata.ts';

/** The tracks an asset can go on (docs/editor.md, POST /clips). */
export function tracksFor(asset: Asset): Track[] {
  return TRACKS.filter((track) => trackAccepts(track, asset.kind));
}

/** A short human name of an asset. */
export function assetName(asset: Asset | undefined): string {
  if (!asset) return 'Missing asset';
  return assetText(asset, 'name') || assetText(asset, 'prompt')?.slice(0, 60) || `${asset.kind} ${asset.id}`;
}
