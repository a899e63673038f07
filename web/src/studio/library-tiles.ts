// What the studio's library grid shows of an asset, kept pure (no DOM) so it is unit-tested on its own.
import type { Asset } from '../api-types.ts';
import { assetNumber, assetText } from '../asset-metadata.ts';

/** The drag data type a library tile carries (its asset id); the studio's timeline lanes accept it. */
export const ASSET_DRAG_TYPE = 'application/x-mediaforge-asset';

/**
 * A duration as a clock: `0:05`, `1:02`, `1:02:03` (whole seconds, rounded). Anything not a finite,
 * non-negative number gives undefined, so the badge is left out rather than showing garbage.
 */
export function formatClock(seconds: number | undefined): string | undefined {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return undefined;
  const total = Math.round(seconds);
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const secs = String(total % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${secs}` : `${minutes}:${secs}`;
}

/** The clock of an asset's length (`metadata.duration_sec`), or undefined for stills and unknown lengths. */
export function assetClock(asset: Asset): string | undefined {
  return formatClock(assetNumber(asset, 'duration_sec'));
}

/**
 * Whether an asset matches what was typed in the library's search: every word of the query, ignoring case,
 * somewhere in its shown name or its prompt. An empty query matches everything.
 */
export function matchesSearch(asset: Asset, shownName: string, query: string): boolean {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return true;
  const haystack = [shownName, assetText(asset, 'name') ?? '', assetText(asset, 'prompt') ?? '']
    .join('\n')
    .toLowerCase();
  return words.every((word) => haystack.includes(word));
}
