import type { VideoExporter } from '../editor/index.ts';
import { exportErrorCode } from './export-errors.ts';
import type { ExportService } from './export-service.ts';

/** The editor's view of the export service: what the agents' `export_video` calls. */
export function videoExporter(service: Pick<ExportService, 'export'>): VideoExporter {
  return {
    export: (userId, project, video, body) => service.export(userId, project, video, body),
    failureCode: exportErrorCode,
  };
}
