import type { Asset } from './api-types.ts';

// An asset's `metadata` is free-form (docs/editor.md "Asset" lists the keys it may hold): each key the pages
// show is read here and checked, so a missing or odd value shows as nothing rather than as garbage.

/** A text key of the asset's metadata (`name`, `prompt`, ...), or undefined. */
export function assetText(asset: Asset, key: string): string | undefined {
  const value = asset.metadata[key];
  return typeof value === 'string' ? value : undefined;
}

/** A number key of the asset's metadata (`duration_sec`, `width`, ...), or undefined. */
export function assetNumber(asset: Asset, key: string): number | undefined {
  const value = asset.metadata[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** The video an exported asset was rendered from (`metadata.exported_from.video_id`), or undefined. */
export function exportedFromVideo(asset: Asset): string | undefined {
  const from = asset.metadata.exported_from;
  if (!from || typeof from !== 'object') return undefined;
  const videoId = (from as Record<string, unknown>).video_id;
  return typeof videoId === 'string' ? videoId : undefined;
}

/**
 * The asset's poster (`metadata.poster_url`: a JPEG of its first frame or the image, longest side at most
 * 640 px; docs/editor.md "Pictures of assets"), or undefined while it has none (older assets get theirs later,
 * announced by `asset.updated`).
 */
export function assetPoster(asset: Asset): string | undefined {
  return assetText(asset, 'poster_url') || undefined;
}
