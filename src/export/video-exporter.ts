import type { VideoExporter } from '../editor/index.ts';
import { exportErrorCode } from './export-errors.ts';
import type { ExportService } from './export-service.ts';
import type { SegmentCache } from './segment-cache.ts';

/** The editor's view of the export: what the agents' `export_video` calls, and a deleted project's cleanup. */
export function videoExporter(
  service: Pick<ExportService, 'export'>,
  segments: Pick<SegmentCache, 'forgetProject'>,
): VideoExporter {
  return {
    export: (userId, project, video, body) => service.export(userId, project, video, body),
    failureCode: exportErrorCode,
    forgetProject: (projectId) => segments.forgetProject(projectId),
  };
}
