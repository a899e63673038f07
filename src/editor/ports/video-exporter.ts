import type { Static } from 'typebox';
import type { ExportRequest, ExportResponse } from '../../../schemas/editor.ts';
import type { ProjectRecord, VideoRecord } from '../../../actors/index.ts';

/** What an export answers (the body of `POST …/export`). */
export type ExportedVideo = Static<typeof ExportResponse>;

/**
 * Exports a video as `POST …/export` does (port: the export slice implements it), for the agents'
 * `export_video`: the same checks, rate limit, cache and `export.*` events.
 */
export interface VideoExporter {
  export(
    userId: string,
    project: ProjectRecord,
    video: VideoRecord,
    body: ExportRequest,
  ): Promise<ExportedVideo>;
  /** The export's error code (docs/editor.md, export errors) a failure of `export` carries, if it is one. */
  failureCode(error: unknown): string | undefined;
  /** Removes what the export keeps of a deleted project for its re-exports (its cached segments). */
  forgetProject(projectId: string): Promise<void>;
}
