import { ExportBody, ExportResponse, ProjectParams } from '../../schemas/editor.ts';
import { ErrorSchema } from '../../schemas/common.ts';
import type { ProjectRecord, VideoRecord } from '../../actors/index.ts';
import type { ExportService } from './export-service.ts';
import { defineRoute, reply, type RouteDefinition } from '../platform/index.ts';
import { editorErrors } from '../editor/index.ts';

/** The body's `video_id` when it is a string (the 404 for it comes before the body's 400s). */
const videoIdOf = (json: unknown): string | undefined =>
  json && typeof (json as { video_id?: unknown }).video_id === 'string'
    ? (json as { video_id: string }).video_id
    : undefined;

/** `POST /projects/<id>/export` (docs/editor.md, Export): one mp4 of the video's tracks, text included. */
export function exportRoute(
  exports: ExportService,
  editor: {
    owned(userId: string, projectId: string): Promise<ProjectRecord>;
    videoOf(project: ProjectRecord, videoId: string | undefined): VideoRecord;
  },
): RouteDefinition {
  const failure = (description: string) => ({ description, schema: ErrorSchema });
  return defineRoute({
    method: 'POST',
    path: '/api/v1/media-studio/projects/:project_id/export',
    auth: { kind: 'key', scope: 'video-editor:write' },
    tags: ['editor'],
    summary:
      'Export a video: its clips, transitions, text and sound rendered into one mp4, final or preview (synchronous)',
    params: ProjectParams,
    body: ExportBody,
    // 404 for the project and for a `video_id` it does not have, before any 400 (as instruct).
    resource: async (ctx, json) => {
      const project = await editor.owned(ctx.principal.userId, ctx.params.project_id);
      return { project, video: editor.videoOf(project, videoIdOf(json)) };
    },
    responses: {
      200: { description: 'The stored mp4 and what it holds', schema: ExportResponse },
      ...editorErrors(400, 404),
      422: failure(
        "`corrupt_source`: a source cannot be probed or decoded; `unsupported_feature`: the server's ffmpeg lacks a filter an effect of the video needs",
      ),
      500: failure('`ffmpeg_failed` or `export_failed`'),
      502: failure('`source_fetch_failed`: a source cannot be read from the media store'),
      503: failure('`storage_unconfigured`: the media store cannot take the result'),
      504: failure('`export_timeout` or `ffmpeg_timeout` (EXPORT_TIMEOUT_MS)'),
    },
    handle: async (ctx) => {
      const { project, video } = ctx.resource;
      return reply(200, await exports.export(ctx.principal.userId, project, video, ctx.body));
    },
  });
}
