// The export of the selected video: its latest exported asset, and the request that starts a new one (its
// progress then comes by the project's export.* events, docs/editor.md, `POST /projects/<id>/export`).
import { describeError, v1 } from '../api.ts';
import type { Asset, ExportFit, ExportQuality, ExportRequest } from '../api-types.ts';
import { exportedFromVideo } from '../asset-metadata.ts';
import type { ProjectLive } from './use-project-live.ts';

/** The newest export of `videoId` among the project's assets. */
export function latestExport(assets: Asset[], videoId: string | null): Asset | undefined {
  return assets
    .filter((a) => a.source === 'export' && a.kind === 'video' && exportedFromVideo(a) === videoId)
    .sort((a, b) => b.created_at.localeCompare(a.created_at))[0];
}

/** Exports the selected video; the run shows its error, and the project is re-read when it is done. */
export async function runExport(live: ProjectLive, fit: ExportFit, quality: ExportQuality): Promise<void> {
  const { base, videoId, setExportRun, reloadState } = live;
  setExportRun({ running: true, fraction: null, error: null });
  try {
    const body: ExportRequest = { fit, quality };
    if (videoId) body.video_id = videoId;
    await v1('POST', base + '/export', { json: body });
    setExportRun({ running: false, fraction: null, error: null });
    await reloadState();
  } catch (err) {
    setExportRun({ running: false, fraction: null, error: describeError(err) });
  }
}
