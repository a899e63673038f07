import Type from 'typebox';
import {
  AddClipBody,
  AssetSchema,
  ClipParams,
  ClipSchema,
  CreateProjectBody,
  ImportAssetBody,
  InstructBody,
  InstructResponse,
  MessagesQuery,
  MessagesResponse,
  PatchClipBody,
  PatchProjectBody,
  ProjectListResponse,
  ProjectParams,
  ProjectResponse,
  StateQuery,
  StateResponse,
  VideoBody,
  VideoParams,
  VideoResponse,
  importAssetRules,
  instructRules,
} from '../../schemas/editor.ts';
import {
  addClipFieldRules,
  addClipRules,
  patchClipFieldRules,
  patchClipRules,
} from '../../schemas/clip-rules.ts';
import { ErrorSchema } from '../../schemas/common.ts';
import { InsufficientCreditsResponse } from '../../schemas/jobs.ts';
import {
  AppError,
  defineRoute,
  reply,
  type RequestContext,
  type ResponseSpec,
  type RouteDefinition,
} from '../platform/index.ts';
import type { ProjectRecord } from '../../actors/index.ts';
import type { EditorService } from './editor-service.ts';
import type { EditorTurns } from './turns/editor-turns.ts';
import { UPLOAD_CONTENT_TYPES } from '../../schemas/vocabulary.ts';

const READ = { kind: 'key', scope: 'video-editor:read' } as const;
const WRITE = { kind: 'key', scope: 'video-editor:write' } as const;
const P = '/api/v1/media-studio/projects';

/** The error answers of editor routes: 401, 403 and 429 always, plus `statuses`. */
export const editorErrors = (...statuses: number[]): Record<number, ResponseSpec> => {
  const all: Record<number, ResponseSpec> = {
    400: { description: 'Validation error (the message names the field)', schema: ErrorSchema },
    401: { description: 'Missing or invalid API key', schema: ErrorSchema },
    402: { description: 'Insufficient credits', schema: InsufficientCreditsResponse },
    403: { description: 'Missing scope', schema: ErrorSchema },
    404: { description: 'Project (or an id in it) not found, or another user’s', schema: ErrorSchema },
    409: { description: 'Stale If-Match: `{ error, revision }`', schema: ErrorSchema },
    413: { description: 'Larger than UPLOAD_MAX_BYTES', schema: ErrorSchema },
    415: {
      description: '`unsupported_media`: not an image, video or audio file we read',
      schema: ErrorSchema,
    },
    429: { description: 'Rate limit, or too many turns waiting', schema: ErrorSchema },
    502: { description: 'Agent runtime or upstream error', schema: ErrorSchema },
    503: {
      description: "The agent's model credentials are not configured, or the LLM server refused them",
      schema: ErrorSchema,
    },
  };
  return Object.fromEntries([401, 403, 429, ...statuses].map((status) => [status, all[status]!])) as Record<
    number,
    ResponseSpec
  >;
};

/** `If-Match: 5` or `"5"` (docs/editor.md, Routes); anything else is a 400. */
export function ifMatchOf(headers: Record<string, string>): { ifMatch?: number } {
  const raw = headers['if-match'];
  if (raw === undefined) return {};
  const match = /^\s*(?:W\/)?"?(\d{1,15})"?\s*$/.exec(raw);
  if (!match) throw new AppError('bad_request', 'If-Match must be a project revision, e.g. "5"');
  return { ifMatch: Number(match[1]) };
}

const TAGS = ['editor'];

/** What the library route accepts. */
interface LibraryOptions {
  acceptsUrl: (url: string) => boolean;
  uploadMaxBytes: number;
}

/** The caller's project (404 otherwise), loaded before the body is checked (a route's `resource`). */
type ProjectLoader = (ctx: RequestContext<{ kind: 'key' }, { project_id: string }>) => Promise<ProjectRecord>;

/**
 * The editor's routes (docs/editor.md; export comes with its own feature): projects, videos and their
 * threads, the library, clips, then the agent's turn.
 */
export function editorRoutes(
  editor: EditorService,
  turns: EditorTurns,
  options: LibraryOptions,
): RouteDefinition[] {
  const project: ProjectLoader = (ctx) => editor.owned(ctx.principal.userId, ctx.params.project_id);
  return [
    ...projectRoutes(editor, project),
    ...videoRoutes(editor, project),
    libraryRoute(editor, project, options),
    ...clipRoutes(editor, project),
    instructRoute(editor, turns, project, options),
  ];
}

/** Projects: create, list, read the state, change, delete. */
function projectRoutes(editor: EditorService, project: ProjectLoader): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path: P,
      auth: WRITE,
      tags: TAGS,
      summary: 'Create a project (with its default video, `Main video`)',
      body: CreateProjectBody,
      responses: {
        200: { description: 'Created', schema: ProjectResponse },
        ...editorErrors(400),
      },
      handle: async (ctx) => reply(200, await editor.createProject(ctx.principal.userId, ctx.body)),
    }),
    defineRoute({
      method: 'GET',
      path: P,
      auth: READ,
      tags: TAGS,
      summary: "The key's user's projects",
      responses: { 200: { description: 'Projects', schema: ProjectListResponse } },
      handle: async (ctx) => reply(200, await editor.listProjects(ctx.principal.userId)),
    }),
    defineRoute({
      method: 'GET',
      path: `${P}/:project_id`,
      auth: READ,
      tags: TAGS,
      summary: 'The project: videos, assets and clips (`video_id` narrows the clips)',
      params: ProjectParams,
      query: StateQuery,
      responses: { 200: { description: 'State', schema: StateResponse }, ...editorErrors(404) },
      handle: async (ctx) =>
        reply(200, await editor.state(ctx.principal.userId, ctx.params.project_id, ctx.query.video_id)),
    }),
    defineRoute({
      method: 'PATCH',
      path: `${P}/:project_id`,
      auth: WRITE,
      tags: TAGS,
      summary: 'Rename, describe or rewrite the context of a project (If-Match: revision)',
      params: ProjectParams,
      body: PatchProjectBody,
      resource: project,
      responses: {
        200: { description: 'Updated', schema: ProjectResponse },
        ...editorErrors(400, 404, 409),
      },
      handle: async (ctx) =>
        reply(200, await editor.patchProject(ctx.resource, ctx.body, ifMatchOf(ctx.headers))),
    }),
    defineRoute({
      method: 'DELETE',
      path: `${P}/:project_id`,
      auth: WRITE,
      tags: TAGS,
      summary: 'Delete a project: its videos, clips, thread and events (exported media stay)',
      params: ProjectParams,
      resource: project,
      responses: {
        200: {
          description: 'Deleted',
          schema: Type.Object({ id: Type.String(), deleted: Type.Literal(true) }),
        },
        ...editorErrors(404),
      },
      handle: async (ctx) => reply(200, await editor.deleteProject(ctx.resource)),
    }),
  ];
}

/** A project's videos, and each video's chat thread. */
function videoRoutes(editor: EditorService, project: ProjectLoader): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path: `${P}/:project_id/videos`,
      auth: WRITE,
      tags: TAGS,
      summary: 'Add a video (its own timeline and thread)',
      params: ProjectParams,
      body: VideoBody,
      resource: project,
      responses: {
        200: { description: 'Created', schema: VideoResponse },
        ...editorErrors(400, 404, 409),
      },
      handle: async (ctx) =>
        reply(200, await editor.createVideo(ctx.resource, ctx.body, ifMatchOf(ctx.headers))),
    }),
    defineRoute({
      method: 'PATCH',
      path: `${P}/:project_id/videos/:video_id`,
      auth: WRITE,
      tags: TAGS,
      summary: 'Rename a video or change its aspect ratio',
      params: VideoParams,
      body: VideoBody,
      resource: project,
      responses: {
        200: { description: 'Updated', schema: VideoResponse },
        ...editorErrors(400, 404, 409),
      },
      handle: async (ctx) =>
        reply(
          200,
          await editor.patchVideo(ctx.resource, ctx.params.video_id, ctx.body, ifMatchOf(ctx.headers)),
        ),
    }),
    defineRoute({
      method: 'GET',
      path: `${P}/:project_id/videos/:video_id/messages`,
      auth: READ,
      tags: TAGS,
      summary: "A video's chat thread, oldest first",
      params: VideoParams,
      query: MessagesQuery,
      resource: project,
      responses: {
        200: { description: 'Messages', schema: MessagesResponse },
        ...editorErrors(400, 404),
      },
      handle: async (ctx) => reply(200, await editor.messages(ctx.resource, ctx.params.video_id, ctx.query)),
    }),
  ];
}

/** The library: an import by URL or an upload. */
function libraryRoute(
  editor: EditorService,
  project: ProjectLoader,
  options: LibraryOptions,
): RouteDefinition {
  return defineRoute({
    method: 'POST',
    path: `${P}/:project_id/assets`,
    auth: WRITE,
    tags: TAGS,
    summary: 'Add to the library: JSON `{ url, name? }` imports, a raw media body uploads',
    params: ProjectParams,
    body: ImportAssetBody,
    bodyRules: importAssetRules(options.acceptsUrl),
    upload: { contentTypes: UPLOAD_CONTENT_TYPES, maxBytes: options.uploadMaxBytes },
    resource: project,
    responses: {
      200: { description: 'Added', schema: Type.Object({ asset: AssetSchema }) },
      ...editorErrors(400, 404, 413, 415),
    },
    handle: async (ctx) => {
      if (ctx.upload) {
        const name = ctx.headers['x-asset-name'];
        return reply(200, await editor.upload(ctx.resource, ctx.upload.stream, name?.slice(0, 120)));
      }
      if (ctx.body === undefined) throw new AppError('bad_request', 'url must be a https URL');
      return reply(200, await editor.importUrl(ctx.resource, ctx.body.url, ctx.body.name));
    },
  });
}

/** Clips: place, change, remove. */
function clipRoutes(editor: EditorService, project: ProjectLoader): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path: `${P}/:project_id/clips`,
      auth: WRITE,
      tags: TAGS,
      summary: 'Place an asset on a track, or a text clip on the text track',
      params: ProjectParams,
      body: AddClipBody,
      bodyRules: [...addClipRules(), ...addClipFieldRules()],
      // The kind of the asset the body names decides which fields apply (an asset that is not the project's is
      // the actor's 404).
      resource: async (ctx, json) => {
        const found = await project(ctx);
        const assetId = (json as { asset_id?: unknown } | null)?.asset_id;
        return { project: found, ...(await editor.clipTarget(found, { assetId })) };
      },
      responses: {
        200: { description: 'Placed', schema: Type.Object({ clip: ClipSchema }) },
        ...editorErrors(400, 404, 409),
      },
      handle: async (ctx) =>
        reply(200, await editor.addClip(ctx.resource.project, ctx.body, ifMatchOf(ctx.headers))),
    }),
    defineRoute({
      method: 'PATCH',
      path: `${P}/:project_id/clips/:clip_id`,
      auth: WRITE,
      tags: TAGS,
      summary: 'Move, trim, re-time or restyle a clip, or change its effects or volume',
      params: ClipParams,
      body: PatchClipBody,
      bodyRules: [...patchClipRules(), ...patchClipFieldRules()],
      // The clip's track sets its `duration_sec` bound, its kind which fields apply (a clip that does not exist
      // is the actor's 404).
      resource: async (ctx) => {
        const found = await project(ctx);
        return { project: found, ...(await editor.clipTarget(found, { clipId: ctx.params.clip_id })) };
      },
      responses: {
        200: { description: 'Updated', schema: Type.Object({ clip: ClipSchema }) },
        ...editorErrors(400, 404, 409),
      },
      handle: async (ctx) =>
        reply(
          200,
          await editor.patchClip(ctx.resource.project, ctx.params.clip_id, ctx.body, ifMatchOf(ctx.headers)),
        ),
    }),
    defineRoute({
      method: 'DELETE',
      path: `${P}/:project_id/clips/:clip_id`,
      auth: WRITE,
      tags: TAGS,
      summary: 'Remove a clip; the rest of its track closes up',
      params: ClipParams,
      resource: project,
      responses: {
        200: {
          description: 'Removed',
          schema: Type.Object({ id: Type.String(), deleted: Type.Literal(true) }),
        },
        ...editorErrors(404, 409),
      },
      handle: async (ctx) =>
        reply(200, await editor.deleteClip(ctx.resource, ctx.params.clip_id, ifMatchOf(ctx.headers))),
    }),
  ];
}

/** One agent turn. */
function instructRoute(
  editor: EditorService,
  turns: EditorTurns,
  project: ProjectLoader,
  options: Pick<LibraryOptions, 'acceptsUrl'>,
): RouteDefinition {
  return defineRoute({
    method: 'POST',
    path: `${P}/:project_id/instruct`,
    auth: WRITE,
    tags: TAGS,
    summary: 'Drive the agent for one turn (5 credits plus any media it generates)',
    params: ProjectParams,
    body: InstructBody,
    bodyRules: instructRules(options.acceptsUrl),
    // 404 for the project and for a `video_id` of another project, before any 400 (docs/editor.md, routes).
    resource: async (ctx, json) => {
      const found = await project(ctx);
      const videoId =
        json && typeof (json as { video_id?: unknown }).video_id === 'string'
          ? (json as { video_id: string }).video_id
          : undefined;
      if (videoId !== undefined) editor.videoOf(found, videoId);
      return found;
    },
    responses: {
      200: { description: 'The turn', schema: InstructResponse },
      ...editorErrors(400, 402, 404, 502, 503),
    },
    handle: async (ctx) => reply(200, await turns.instruct(ctx.principal, ctx.resource, ctx.body)),
  });
}
