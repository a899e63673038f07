import type { AssetsRepository, ClipView, ProjectCommands, ProjectRecord } from '../../actors/index.ts';
import type { ClipTarget } from '../../schemas/clip-rules.ts';
import type { AddClipRequest, PatchClipRequest } from '../../schemas/editor.ts';
import { newId } from '../platform/index.ts';
import { editOp, ifMatchField, type EditOptions } from './direct-edit.ts';
import { videoOf } from './project-documents.ts';

/** Direct edits of a video's timeline: its clips. */
export interface TimelineEdits {
  /**
   * What the clip rules need of a clip (docs/editor.md, Which field applies to which clip): a clip's track and
   * its asset's kind (`clipId`), or the kind of an asset a new clip names (`assetId`). Unknown ids answer
   * undefined parts: the project's actor answers their 404.
   */
  clipTarget(project: ProjectRecord, ids: { clipId?: string; assetId?: unknown }): Promise<ClipTarget>;
  /** Adds a clip of a library asset to a track of the video (the project's first video by default). */
  addClip(project: ProjectRecord, body: AddClipRequest, options: EditOptions): Promise<{ clip: ClipView }>;
  /** Moves, trims or re-times a clip, or changes its volume. */
  patchClip(
    project: ProjectRecord,
    clipId: string,
    body: PatchClipRequest,
    options: EditOptions,
  ): Promise<{ clip: ClipView }>;
  /** Removes a clip from its track. */
  deleteClip(
    project: ProjectRecord,
    clipId: string,
    options: EditOptions,
  ): Promise<{ id: string; deleted: true }>;
}

/** Clip edits, each one command of the project's actor. */
export function createTimelineEdits(
  commands: ProjectCommands,
  assets: Pick<AssetsRepository, 'get'>,
): TimelineEdits {
  /** The kind of the project's asset `id`; undefined when it is not one. */
  async function kindOf(project: ProjectRecord, id: unknown) {
    if (typeof id !== 'string' || id === '') return undefined;
    const asset = await assets.get(id);
    return asset?.project_id === project.id ? asset.kind : undefined;
  }
  return {
    async clipTarget(project, ids) {
      if (ids.clipId === undefined) return { track: undefined, kind: await kindOf(project, ids.assetId) };
      const clip = project.clips.find((one) => one.id === ids.clipId);
      return { track: clip?.track, kind: await kindOf(project, clip?.asset_id) };
    },

    async addClip(project, body, options) {
      const video = videoOf(project, body.video_id);
      const answer = await commands.add_clip(project.id, {
        ...body,
        op_id: editOp(),
        clip_id: newId('vc', 16),
        video_id: video.id,
        ...ifMatchField(options),
      });
      return { clip: answer.clip };
    },

    async patchClip(project, clipId, body, options) {
      const answer = await commands.update_clip(project.id, {
        ...body,
        op_id: editOp(),
        clip_id: clipId,
        ...ifMatchField(options),
      });
      return { clip: answer.clip };
    },

    async deleteClip(project, clipId, options) {
      await commands.remove_clip(project.id, {
        op_id: editOp(),
        clip_id: clipId,
        ...ifMatchField(options),
      });
      return { id: clipId, deleted: true as const };
    },
  };
}
