import type { AssetRecord } from '../../actors/index.ts';
import type { MediaStore } from '../platform/index.ts';
import type { ExportedVideo } from '../editor/index.ts';
import type { ExportQuality } from '../../schemas/timeline-terms.ts';

/** What an export asset's metadata records: where it came from and what the answer said. */
export interface ExportedFrom {
  video_id: string;
  revision: number;
  fit: 'fit' | 'fill';
  /** Absent on exports stored before previews existed: those are `final`. */
  quality: ExportQuality;
}

const isExportOf = (asset: AssetRecord, wanted: ExportedFrom): boolean => {
  const from = asset.metadata.exported_from as Partial<ExportedFrom> | undefined;
  return (
    asset.source === 'export' &&
    from?.video_id === wanted.video_id &&
    from.revision === wanted.revision &&
    from.fit === wanted.fit &&
    (from.quality ?? 'final') === wanted.quality
  );
};

/** A stored export of exactly this timeline, fit and quality, if there is one whose file is still there (the newest). */
export async function storedExport(
  library: AssetRecord[],
  wanted: ExportedFrom,
  deps: { store: MediaStore; mediaUrl(mediaId: string): string },
): Promise<ExportedVideo | undefined> {
  for (const asset of [...library].reverse()) {
    if (!isExportOf(asset, wanted) || !(await deps.store.stat(asset.media_id))) continue;
    const { metadata } = asset;
    return {
      asset_id: asset.id,
      video_url: deps.mediaUrl(asset.media_id),
      duration_sec: Number(metadata.duration_sec),
      video_clip_count: Number(metadata.video_clip_count),
      audio_overlay_count: Number(metadata.audio_overlay_count),
    };
  }
  return undefined;
}
