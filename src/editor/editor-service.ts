import type { Readable } from 'node:stream';
import {
  orderedClips,
  toAssetView,
  toClipView,
  toProjectView,
  toVideoView,
  type ProjectCommands,
  type UserCredits,
  type AssetsRepository,
  type ProjectRecord,
  type ProjectsRepository,
  type VideoRecord,
  type ThreadRepository,
} from '../../actors/index.ts';
import type {
  AddClipRequest,
  CreateProjectRequest,
  PatchClipRequest,
  PatchProjectRequest,
  VideoRequest,
} from '../../schemas/editor.ts';
import {
  AppError,
  newId,
  type Clock,
  type IntakeResult,
  type MediaIntake,
  type MediaStore,
} from '../platform/index.ts';
import { DEFAULT_PROJECT_NAME, DEFAULT_VIDEO_NAME } from '../../schemas/editor-terms.ts';
import { metadataOf } from './turns/turn-references.ts';
import { refundDroppedTurn } from './turns/turn-refunds.ts';

export interface EditorServiceDeps {
  commands: ProjectCommands;
  /** Refunds of turns a deletion dropped before they began. */
  credits: Pick<UserCredits, 'refund'>;
  projects: ProjectsRepository;
  assets: AssetsRepository;
  thread: ThreadRepository;
  store: MediaStore;
  intake: MediaIntake;
  mediaUrl(mediaId: string): string;
  uploadMaxBytes: number;
  clock: Clock;
}

/** A direct edit's precondition (`If-Match`: docs/editor.md, Routes). */
export interface EditOptions {
  ifMatch?: number;
}

/** A direct edit's op id: each request is one change, applied once however the actor delivers it. */
const editOp = () => newId('op', 16);

/**
 * The editor's documents and direct edits (docs/editor.md, Routes). Reads go to the repositories; every
 * change goes through the project's actor, which bumps the revision and announces it.
 */
/** The user's project, or 404 (another user's project is not found either). */
export async function ownedProject(
  projects: ProjectsRepository,
  userId: string,
  projectId: string,
): Promise<ProjectRecord> {
  const project = await projects.get(projectId);
  if (!project || project.user_id !== userId) throw new AppError('not_found', 'Project not found');
  return project;
}

/** The project's video `videoId` (its first when undefined), or 404. */
export function videoOf(project: ProjectRecord, videoId: string | undefined): VideoRecord {
  const video = videoId === undefined ? project.videos[0] : project.videos.find((one) => one.id === videoId);
  if (!video) throw new AppError('not_found', 'Video not found');
  return video;
}

export function createEditorService(deps: EditorServiceDeps) {
  const { commands, projects } = deps;

  const owned = (userId: string, projectId: string) => ownedProject(projects, userId, projectId);

  async function addTaken(
    userId: string,
    projectId: string,
    taken: IntakeResult,
    source: 'upload' | 'import',
    extra: Record<string, unknown>,
  ) {
    try {
      const answer = await commands.add_asset(projectId, {
        op_id: editOp(),
        asset: {
          id: newId('va', 16),
          user_id: userId,
          kind: taken.probed.kind,
          source,
          media_id: taken.media.id,
          content_type: taken.probed.contentType,
          metadata: metadataOf(taken.probed, extra),
        },
      });
      return { asset: answer.asset };
    } catch (error) {
      await deps.store.delete(taken.media.id).catch(() => undefined);
      throw error;
    }
  }

  return {
    owned,
    videoOf,

    async createProject(userId: string, body: CreateProjectRequest) {
      const now = new Date(deps.clock.now());
      const project: ProjectRecord = {
        id: newId('vp', 16),
        user_id: userId,
        name: body.name ?? DEFAULT_PROJECT_NAME,
        description: body.description ?? '',
        aspect_ratio: body.aspect_ratio,
        context_md: '',
        videos: [
          { id: newId('vv', 16), name: DEFAULT_VIDEO_NAME, aspect_ratio: body.aspect_ratio, created_at: now },
        ],
        clips: [],
        revision: 0,
        seq: 0,
        version: 0,
        turn: null,
        queue: [],
        applied_ops: [],
        created_at: now,
        updated_at: now,
      };
      await projects.insert(project);
      return { project: toProjectView(project) };
    },

    async listProjects(userId: string) {
      const list = await projects.listByUser(userId);
      return {
        projects: list.map((one) => ({
          id: one.id,
          name: one.name,
          aspect_ratio: one.aspect_ratio,
          updated_at: one.updated_at.toISOString(),
        })),
      };
    },

    async state(userId: string, projectId: string, videoId?: string) {
      const project = await owned(userId, projectId);
      if (videoId !== undefined) videoOf(project, videoId);
      const assets = await deps.assets.listByProject(project.id);
      return {
        project: toProjectView(project),
        videos: project.videos.map(toVideoView),
        assets: assets.map((asset) => toAssetView(asset, deps.mediaUrl)),
        clips: orderedClips(project, videoId).map(toClipView),
      };
    },

    async patchProject(project: ProjectRecord, body: PatchProjectRequest, options: EditOptions) {
      const answer = await commands.patch_project(project.id, {
        ...body,
        op_id: editOp(),
        ...(options.ifMatch !== undefined ? { if_match: options.ifMatch } : {}),
      });
      return { project: answer.project };
    },

    async deleteProject(project: ProjectRecord) {
      const answer = await commands.delete_project(project.id, { op_id: editOp() });
      for (const turnId of answer.dropped) await refundDroppedTurn(deps.credits, project.user_id, turnId);
      // Exported media stay: a `video_url` is permanent (docs/editor.md). The rest are the project's copies.
      const removable = answer.assets.filter((asset) => asset.source !== 'export');
      await Promise.all(removable.map((asset) => deps.store.delete(asset.media_id).catch(() => undefined)));
      return { id: project.id, deleted: true as const };
    },

    async createVideo(project: ProjectRecord, body: VideoRequest, options: EditOptions) {
      const answer = await commands.create_video(project.id, {
        ...body,
        op_id: editOp(),
        video_id: newId('vv', 16),
        ...(options.ifMatch !== undefined ? { if_match: options.ifMatch } : {}),
      });
      return { video: answer.video };
    },

    async patchVideo(project: ProjectRecord, videoId: string, body: VideoRequest, options: EditOptions) {
      videoOf(project, videoId);
      const answer = await commands.patch_video(project.id, {
        ...body,
        op_id: editOp(),
        video_id: videoId,
        ...(options.ifMatch !== undefined ? { if_match: options.ifMatch } : {}),
      });
      return { video: answer.video };
    },

    async addClip(project: ProjectRecord, body: AddClipRequest, options: EditOptions) {
      const video = videoOf(project, body.video_id);
      const answer = await commands.add_clip(project.id, {
        ...body,
        op_id: editOp(),
        clip_id: newId('vc', 16),
        video_id: video.id,
        ...(options.ifMatch !== undefined ? { if_match: options.ifMatch } : {}),
      });
      return { clip: answer.clip };
    },

    async patchClip(project: ProjectRecord, clipId: string, body: PatchClipRequest, options: EditOptions) {
      const answer = await commands.update_clip(project.id, {
        ...body,
        op_id: editOp(),
        clip_id: clipId,
        ...(options.ifMatch !== undefined ? { if_match: options.ifMatch } : {}),
      });
      return { clip: answer.clip };
    },

    async deleteClip(project: ProjectRecord, clipId: string, options: EditOptions) {
      await commands.remove_clip(project.id, {
        op_id: editOp(),
        clip_id: clipId,
        ...(options.ifMatch !== undefined ? { if_match: options.ifMatch } : {}),
      });
      return { id: clipId, deleted: true as const };
    },

    /** An upload: the raw file, streamed to a private file, probed, then stored (docs/editor.md). */
    async upload(project: ProjectRecord, body: Readable, name: string | undefined) {
      const taken = await deps.intake.fromStream(body, { maxBytes: deps.uploadMaxBytes });
      return addTaken(project.user_id, project.id, taken, 'upload', name ? { name } : {});
    },

    /** An import by URL, through the guarded fetch. */
    async importUrl(project: ProjectRecord, url: string, name: string | undefined) {
      const taken = await deps.intake.fromUrl(url, { maxBytes: deps.uploadMaxBytes, field: 'url' });
      return addTaken(project.user_id, project.id, taken, 'import', {
        source_url: url,
        ...(name ? { name } : {}),
      });
    },

    async messages(project: ProjectRecord, videoId: string, query: { limit: number; cursor?: string }) {
      videoOf(project, videoId);
      const after = query.cursor ? decodeCursor(query.cursor) : undefined;
      const page = await deps.thread.list(project.id, videoId, {
        limit: query.limit + 1,
        ...(after ? { after } : {}),
      });
      const shown = page.slice(0, query.limit);
      const last = shown.at(-1);
      return {
        messages: shown.map((message) => ({
          id: message.id,
          role: message.role,
          text: message.text,
          ...(message.image_urls ? { image_urls: message.image_urls } : {}),
          ...(message.usage ? { usage: message.usage } : {}),
          turn_id: message.turn_id,
          created_at: message.created_at.toISOString(),
        })),
        next_cursor:
          page.length > query.limit && last
            ? Buffer.from(`${last.created_at.getTime()}:${last.id}`).toString('base64url')
            : null,
      };
    },
  };
}

export type EditorService = ReturnType<typeof createEditorService>;

function decodeCursor(cursor: string) {
  const match = /^(\d{1,15}):(msg_[0-9A-Za-z_]{1,80})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match) throw new AppError('bad_request', 'cursor is invalid');
  return { created_at: new Date(Number(match[1])), id: match[2]! };
}
