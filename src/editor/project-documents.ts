import {
  orderedClips,
  toAssetView,
  toClipViews,
  toProjectView,
  toVideoView,
  type AssetsRepository,
  type AssetView,
  type ClipView,
  type ProjectCommands,
  type ProjectRecord,
  type ProjectsRepository,
  type ProjectSummary,
  type ProjectView,
  type UserCredits,
  type VideoRecord,
  type VideoView,
} from '../../actors/index.ts';
import type { CreateProjectRequest, PatchProjectRequest, VideoRequest } from '../../schemas/editor.ts';
import { DEFAULT_PROJECT_NAME, DEFAULT_VIDEO_NAME } from '../../schemas/editor-terms.ts';
import { AppError, newId, type Clock, type MediaStore } from '../platform/index.ts';
import { refundDroppedTurn } from './turns/turn-refunds.ts';
import { editOp, ifMatchField, type EditOptions } from './direct-edit.ts';
import type { AssetPictures } from './asset-pictures.ts';
import type { VideoExporter } from './ports/video-exporter.ts';

/** A project as the list of a user's projects shows it. */
export type ProjectListItem = Omit<ProjectSummary, 'updated_at'> & { updated_at: string };

/**
 * A project's state: the project, its videos, its library and its clips in timeline order. (A type, not an
 * interface: MCP tools answer it as their structured content, a plain record.)
 */
export type ProjectState = {
  project: ProjectView;
  videos: VideoView[];
  assets: AssetView[];
  clips: ClipView[];
};

/** The editor's documents: projects and their videos. */
export interface ProjectDocuments {
  /** The user's project, or 404 (another user's project is not found either). */
  owned(userId: string, projectId: string): Promise<ProjectRecord>;
  /** The project's video `videoId` (its first when undefined), or 404. */
  videoOf(project: ProjectRecord, videoId: string | undefined): VideoRecord;
  /** Creates a project with one empty video. */
  createProject(userId: string, body: CreateProjectRequest): Promise<{ project: ProjectView }>;
  /** The user's projects, most recently updated first. */
  listProjects(userId: string): Promise<{ projects: ProjectListItem[] }>;
  /** The user's project's state; with `videoId`, only that video's clips (404 for an unknown video). */
  state(userId: string, projectId: string, videoId?: string): Promise<ProjectState>;
  /** Changes the project's name, description or context. */
  patchProject(
    project: ProjectRecord,
    body: PatchProjectRequest,
    options: EditOptions,
  ): Promise<{ project: ProjectView }>;
  /** Deletes the project; refunds the turns it dropped and removes its media, except its exports. */
  deleteProject(project: ProjectRecord): Promise<{ id: string; deleted: true }>;
  /** Adds a video to the project. */
  createVideo(
    project: ProjectRecord,
    body: VideoRequest,
    options: EditOptions,
  ): Promise<{ video: VideoView }>;
  /** Renames a video or changes its aspect ratio. */
  patchVideo(
    project: ProjectRecord,
    videoId: string,
    body: VideoRequest,
    options: EditOptions,
  ): Promise<{ video: VideoView }>;
}

/** What the documents' part works with. */
export interface ProjectDocumentsDeps {
  commands: ProjectCommands;
  /** Refunds of turns a deletion dropped before they began. */
  credits: Pick<UserCredits, 'refund'>;
  projects: ProjectsRepository;
  assets: AssetsRepository;
  store: MediaStore;
  mediaUrl(mediaId: string): string;
  clock: Clock;
  /** Pictures of assets: an older asset's are made when it is read, and go with its file. */
  pictures?: Pick<AssetPictures, 'backfill' | 'mediaIdsOf'>;
  /** What the export keeps of a project for its re-exports, removed with it. */
  exports?: Pick<VideoExporter, 'forgetProject'>;
}

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

/**
 * Projects and videos: reads go to the repositories; every change goes through the project's actor, which
 * bumps the revision and announces it.
 */
export function createProjectDocuments(deps: ProjectDocumentsDeps): ProjectDocuments {
  const { commands, projects } = deps;
  const owned = (userId: string, projectId: string) => ownedProject(projects, userId, projectId);

  return {
    owned,
    videoOf,

    async createProject(userId, body) {
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

    async listProjects(userId) {
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

    async state(userId, projectId, videoId) {
      const project = await owned(userId, projectId);
      if (videoId !== undefined) videoOf(project, videoId);
      const assets = await deps.assets.listByProject(project.id);
      // Answered at once: the missing pictures follow as `asset.updated` (docs/editor.md, Pictures of assets).
      deps.pictures?.backfill(project.id, assets);
      return {
        project: toProjectView(project),
        videos: project.videos.map(toVideoView),
        assets: assets.map((asset) => toAssetView(asset, deps.mediaUrl)),
        clips: toClipViews(orderedClips(project, videoId), assets),
      };
    },

    async patchProject(project, body, options) {
      const answer = await commands.patch_project(project.id, {
        ...body,
        op_id: editOp(),
        ...ifMatchField(options),
      });
      return { project: answer.project };
    },

    async deleteProject(project) {
      const answer = await commands.delete_project(project.id, { op_id: editOp() });
      for (const turnId of answer.dropped) await refundDroppedTurn(deps.credits, project.user_id, turnId);
      // Exported media stay: a `video_url` is permanent (docs/editor.md, export). The rest are the project's own copies.
      const removable = answer.assets.filter((asset) => asset.source !== 'export');
      const files = removable.flatMap((asset) => [
        asset.media_id,
        ...(deps.pictures?.mediaIdsOf(asset) ?? []),
      ]);
      await Promise.all(files.map((mediaId) => deps.store.delete(mediaId).catch(() => undefined)));
      await deps.exports?.forgetProject(project.id);
      return { id: project.id, deleted: true as const };
    },

    async createVideo(project, body, options) {
      const answer = await commands.create_video(project.id, {
        ...body,
        op_id: editOp(),
        video_id: newId('vv', 16),
        ...ifMatchField(options),
      });
      return { video: answer.video };
    },

    async patchVideo(project, videoId, body, options) {
      videoOf(project, videoId);
      const answer = await commands.patch_video(project.id, {
        ...body,
        op_id: editOp(),
        video_id: videoId,
        ...ifMatchField(options),
      });
      return { video: answer.video };
    },
  };
}
