import { EventsQuery, ProjectParams } from '../../schemas/editor.ts';
import { ErrorSchema } from '../../schemas/common.ts';
import {
  AppError,
  isSessionPrincipal,
  defineRoute,
  reply,
  type RouteDefinition,
  SocketUpgrade,
} from '../platform/index.ts';
import type { ProjectRecord } from '../../actors/index.ts';
import { EVENTS_SOCKET_PATTERN, type EventSocketRequest } from './event-sockets.ts';
import { editorErrors } from '../editor/index.ts';

/**
 * The events WebSocket's handshake (docs/editor.md, Connecting): checked like any request — key (header or
 * `access_token`), scope `video-editor:read`, the caller's project and video (404) — plus the browser's
 * `Origin`, which must be one of `allowedOrigins` when sent (another site's page must not read a user's
 * project with a key it holds).
 */
export function eventsRoute(options: {
  /** The caller's project, or a 404. */
  owned(userId: string, projectId: string): Promise<ProjectRecord>;
  allowedOrigins: readonly string[];
}): RouteDefinition {
  return defineRoute({
    method: 'GET',
    path: EVENTS_SOCKET_PATTERN,
    auth: { kind: 'key', scope: 'video-editor:read' },
    tags: ['editor'],
    summary: 'WebSocket of the project’s events: replay after `since`, then live',
    params: ProjectParams,
    query: EventsQuery,
    responses: {
      101: { description: 'Switching to the WebSocket: one JSON event per message' },
      ...editorErrors(400, 404),
      403: { description: 'Missing scope, or an `Origin` that is not allowed', schema: ErrorSchema },
      426: { description: 'Not a WebSocket handshake', schema: ErrorSchema },
    },
    resource: (ctx) => options.owned(ctx.principal.userId, ctx.params.project_id),
    handle: async (ctx) => {
      if (ctx.headers.upgrade?.toLowerCase() !== 'websocket' || !ctx.headers['sec-websocket-key']) {
        throw new AppError(
          'upgrade_required',
          'This route is a WebSocket: connect with a WebSocket client',
          {},
          { upgrade: 'websocket', 'sec-websocket-version': '13' },
        );
      }
      // RFC 6455 §4.2.1: a handshake asks to upgrade the connection; one that also asks to close it is broken.
      const connection = (ctx.headers.connection ?? '')
        .toLowerCase()
        .split(',')
        .map((token) => token.trim());
      if (!connection.includes('upgrade') || connection.includes('close')) {
        throw new AppError('bad_request', 'A WebSocket handshake needs Connection: Upgrade');
      }
      const origin = ctx.headers.origin;
      if (origin !== undefined && !options.allowedOrigins.includes(origin)) {
        throw new AppError('forbidden', 'Origin not allowed');
      }
      const project = ctx.resource;
      const videoId = ctx.query.video_id ?? null;
      if (videoId !== null && !project.videos.some((video) => video.id === videoId)) {
        throw new AppError('not_found', 'Video not found');
      }
      const accepted: EventSocketRequest = {
        projectId: project.id,
        videoId,
        since: ctx.query.since ?? null,
        headSeq: project.seq,
        keyId: ctx.principal.keyId,
      };
      // A dashboard token (from the header or `access_token`) is what the socket's rechecks look at.
      const bearer = /^Bearer (\S+)$/.exec(ctx.headers.authorization ?? '')?.[1];
      if (isSessionPrincipal(ctx.principal) && bearer) accepted.sessionToken = bearer;
      return reply(101, new SocketUpgrade(accepted));
    },
  });
}
