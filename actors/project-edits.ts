import Type, { type Static } from 'typebox';
import { literalUnion } from '../schemas/common.ts';
import { AppError } from '../src/platform/core/index.ts';
import { CONTEXT_MD_MAX, PROJECT_ASPECT_RATIOS, TRACKS, trackAccepts } from '../schemas/editor-terms.ts';
import { clipKind } from '../schemas/clip-applies.ts';
import type { AssetRecord } from './ports/assets-repository.ts';
import type { ClipRecord, ProjectRecord, VideoRecord } from './ports/projects-repository.ts';
import {
  checkRevision,
  commit,
  loadProject,
  replayed,
  type Committed,
  type EventDraft,
  type ProjectContext,
} from './project-commit.ts';
import { checkClipNumbers, checkTimeline } from './project-bounds.ts';
import {
  ClipLookCommandFields,
  ClipTimingCommandFields,
  changedClip,
  checkClipFields,
  newClip,
} from './project-clips.ts';
import { insertClip, moveClip, removeClip } from './project-timeline.ts';
import { toAssetView, toClipView, toProjectView, toVideoView } from './project-views.ts';

// The project actor's edit commands: every change of the timeline, the library, the context or the project,
// whether a direct edit (`turn_id` absent) or an agent's tool call (`turn_id` of the running turn).

const opId = Type.String({ minLength: 1, maxLength: 200 });
const ifMatch = Type.Optional(Type.Integer({ minimum: 0 }));
const turnId = Type.Optional(Type.String());
/** A running turn's events that change nothing, sent along with its next command (project-commit.ts). */
export const BeforeEvents = Type.Optional(
  Type.Array(
    Type.Object({
      type: Type.String(),
      video_id: Type.Union([Type.String(), Type.Null()]),
      data: Type.Record(Type.String(), Type.Unknown()),
    }),
  ),
);
const timing = ClipTimingCommandFields;

export const EditCommands = {
  patch_project: Type.Object({
    op_id: opId,
    if_match: ifMatch,
    name: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    context_md: Type.Optional(Type.String({ maxLength: CONTEXT_MD_MAX })),
  }),
  create_video: Type.Object({
    op_id: opId,
    if_match: ifMatch,
    video_id: Type.String(),
    name: Type.Optional(Type.String()),
    aspect_ratio: Type.Optional(literalUnion(PROJECT_ASPECT_RATIOS)),
  }),
  patch_video: Type.Object({
    op_id: opId,
    if_match: ifMatch,
    video_id: Type.String(),
    name: Type.Optional(Type.String()),
    aspect_ratio: Type.Optional(literalUnion(PROJECT_ASPECT_RATIOS)),
  }),
  add_clip: Type.Object({
    op_id: opId,
    if_match: ifMatch,
    turn_id: turnId,
    before_events: BeforeEvents,
    clip_id: Type.String(),
    video_id: Type.String(),
    track: literalUnion(TRACKS),
    /** Required off the text track (checked by the handler, with the request's message). */
    asset_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    idx: Type.Optional(Type.Integer({ minimum: 0 })),
    ...timing,
    ...ClipLookCommandFields,
  }),
  update_clip: Type.Object({
    op_id: opId,
    if_match: ifMatch,
    turn_id: turnId,
    before_events: BeforeEvents,
    clip_id: Type.String(),
    idx: Type.Optional(Type.Integer({ minimum: 0 })),
    ...timing,
    ...ClipLookCommandFields,
  }),
  remove_clip: Type.Object({
    op_id: opId,
    if_match: ifMatch,
    turn_id: turnId,
    before_events: BeforeEvents,
    clip_id: Type.String(),
  }),
  append_context: Type.Object({
    op_id: opId,
    turn_id: turnId,
    before_events: BeforeEvents,
    text: Type.String({ minLength: 1 }),
  }),
  set_aspect_ratio: Type.Object({
    op_id: opId,
    turn_id: turnId,
    before_events: BeforeEvents,
    video_id: Type.String(),
    aspect_ratio: literalUnion(PROJECT_ASPECT_RATIOS),
  }),
  /** A library item, already in the media store (an upload, an import, a generation, an export). */
  add_asset: Type.Object({
    op_id: opId,
    turn_id: turnId,
    before_events: BeforeEvents,
    asset: Type.Object({
      id: Type.String(),
      user_id: Type.String(),
      kind: literalUnion(['image', 'video', 'audio'] as const),
      source: literalUnion(['agent_generate', 'import', 'upload', 'export'] as const),
      media_id: Type.String(),
      content_type: Type.String(),
      metadata: Type.Record(Type.String(), Type.Unknown()),
    }),
  }),
};

type Msg<Name extends keyof typeof EditCommands> = Static<(typeof EditCommands)[Name]>;

/** A turn's command must come from the turn that holds the project; anything else is a lost turn. */
function checkTurn(project: ProjectRecord, turnId: string | undefined): string | null {
  if (turnId === undefined) return null;
  if (project.turn?.turn_id !== turnId) {
    throw new AppError('conflict', 'The turn is no longer running', { turn_lost: true });
  }
  return turnId;
}

function findVideo(project: ProjectRecord, videoId: string): VideoRecord {
  const video = project.videos.find((candidate) => candidate.id === videoId);
  if (!video) throw new AppError('not_found', 'Video not found');
  return video;
}

function findClip(project: ProjectRecord, clipId: string): ClipRecord {
  const clip = project.clips.find((candidate) => candidate.id === clipId);
  if (!clip) throw new AppError('not_found', 'Clip not found');
  return clip;
}

async function findAsset(context: ProjectContext, assetId: string): Promise<AssetRecord> {
  const asset = await context.ports.assets.get(assetId);
  if (!asset || asset.project_id !== context.key) throw new AppError('not_found', 'Asset not found');
  return asset;
}

/** Loads the project and answers a redelivered command as the first time; else runs `change`. */
async function edit<Result>(
  context: ProjectContext,
  run: (project: ProjectRecord) => Promise<Committed<Result>>,
): Promise<Committed<Result>> {
  const project = await loadProject(context);
  return replayed<Committed<Result>>(project, context.opId) ?? run(project);
}

/** The project as its change will leave it (`commit` sets the revision and the time): what its event shows. */
const shownAfter = (context: ProjectContext, next: ProjectRecord): ProjectRecord => ({
  ...next,
  revision: next.revision + 1,
  updated_at: new Date(context.clock.now()),
});

const projectUpdated = (project: ProjectRecord, extra: Record<string, unknown> = {}): EventDraft => ({
  type: 'project.updated',
  video_id: null,
  data: { project: toProjectView(project), ...extra },
});

export const editHandlers = {
  patch_project: (context: ProjectContext, message: Msg<'patch_project'>) =>
    edit(context, async (project) => {
      checkRevision(project, message.if_match);
      const next: ProjectRecord = {
        ...project,
        ...(message.name !== undefined ? { name: message.name } : {}),
        ...(message.description !== undefined ? { description: message.description } : {}),
        ...(message.context_md !== undefined ? { context_md: message.context_md } : {}),
      };
      const shown = shownAfter(context, next);
      return commit(context, project, {
        next,
        turnId: null,
        events: [projectUpdated(shown)],
        result: { project: toProjectView(shown) },
      });
    }),

  create_video: (context: ProjectContext, message: Msg<'create_video'>) =>
    edit(context, async (project) => {
      checkRevision(project, message.if_match);
      const video: VideoRecord = {
        id: message.video_id,
        name: message.name ?? `Video ${project.videos.length + 1}`,
        aspect_ratio: message.aspect_ratio ?? project.aspect_ratio,
        created_at: new Date(context.clock.now()),
      };
      const next = { ...project, videos: [...project.videos, video] };
      return commit(context, project, {
        next,
        turnId: null,
        events: [projectUpdated(shownAfter(context, next), { video: toVideoView(video) })],
        result: { video: toVideoView(video) },
      });
    }),

  patch_video: (context: ProjectContext, message: Msg<'patch_video'>) =>
    edit(context, async (project) => {
      checkRevision(project, message.if_match);
      const video = findVideo(project, message.video_id);
      const changed: VideoRecord = {
        ...video,
        ...(message.name !== undefined ? { name: message.name } : {}),
        ...(message.aspect_ratio !== undefined ? { aspect_ratio: message.aspect_ratio } : {}),
      };
      const next = {
        ...project,
        videos: project.videos.map((one) => (one.id === video.id ? changed : one)),
      };
      const events = [projectUpdated(shownAfter(context, next), { video: toVideoView(changed) })];
      if (changed.aspect_ratio !== video.aspect_ratio) {
        events.push(ratioChanged(video, changed.aspect_ratio));
      }
      return commit(context, project, {
        next,
        turnId: null,
        events,
        result: { video: toVideoView(changed) },
      });
    }),

  add_clip: (context: ProjectContext, message: Msg<'add_clip'>) =>
    edit(context, async (project) => {
      const turnId = checkTurn(project, message.turn_id);
      checkRevision(project, message.if_match);
      findVideo(project, message.video_id);
      const { track } = message;
      // What the track alone decides (`asset_id` given or not, a text clip's fields), then the numbers, then
      // the asset and what its kind decides: the order of the request table.
      checkClipFields(message, track, track === 'text' ? 'text' : undefined, true);
      checkClipNumbers(track, message);
      const asset = track === 'text' ? null : await findAsset(context, message.asset_id!);
      if (asset && !trackAccepts(track, asset.kind)) {
        throw new AppError(
          'bad_request',
          track === 'video'
            ? `asset ${asset.id} is ${asset.kind}: the video track takes image or video assets`
            : `asset ${asset.id} is ${asset.kind}: the ${track} track takes audio or video assets`,
        );
      }
      if (asset) checkClipFields(message, track, asset.kind, true);
      const clip = newClip(
        {
          id: message.clip_id,
          video_id: message.video_id,
          track,
          asset: asset && { id: asset.id, kind: asset.kind },
          created_at: new Date(context.clock.now()),
        },
        message,
      );
      const clips = insertClip(project.clips, clip, message.idx);
      await checkTimeline(context, clip.video_id, project.clips, clips, clip.id);
      const placed = clips.find((one) => one.id === clip.id)!;
      const view = toClipView(placed, asset?.kind);
      return commit(context, project, {
        next: { ...project, clips },
        turnId,
        before: message.before_events,
        events: [{ type: 'clip.created', video_id: clip.video_id, data: { clip: view } }],
        result: { clip: view },
      });
    }),

  update_clip: (context: ProjectContext, message: Msg<'update_clip'>) =>
    edit(context, async (project) => {
      const turnId = checkTurn(project, message.turn_id);
      checkRevision(project, message.if_match);
      const clip = findClip(project, message.clip_id);
      checkClipNumbers(clip.track, message);
      const asset = clip.asset_id === null ? null : await context.ports.assets.get(clip.asset_id);
      checkClipFields(message, clip.track, clipKind(clip.track, asset?.kind), false);
      const changed = changedClip(clip, message);
      const clips = moveClip(project.clips, changed, message.idx ?? clip.idx);
      const setsTransition = message.transition_in !== undefined ? clip.id : undefined;
      await checkTimeline(context, clip.video_id, project.clips, clips, setsTransition);
      const placed = clips.find((one) => one.id === clip.id)!;
      const view = toClipView(placed, asset?.kind);
      return commit(context, project, {
        next: { ...project, clips },
        turnId,
        before: message.before_events,
        events: [{ type: 'clip.updated', video_id: clip.video_id, data: { clip: view } }],
        result: { clip: view },
      });
    }),

  remove_clip: (context: ProjectContext, message: Msg<'remove_clip'>) =>
    edit(context, async (project) => {
      const turnId = checkTurn(project, message.turn_id);
      checkRevision(project, message.if_match);
      const clip = findClip(project, message.clip_id);
      const clips = removeClip(project.clips, clip);
      // The clips either side of it become neighbours: their transition must still fit.
      await checkTimeline(context, clip.video_id, project.clips, clips);
      return commit(context, project, {
        next: { ...project, clips },
        turnId,
        before: message.before_events,
        events: [{ type: 'clip.removed', video_id: clip.video_id, data: { clip_id: clip.id } }],
        result: { id: clip.id, deleted: true as const },
      });
    }),

  append_context: (context: ProjectContext, message: Msg<'append_context'>) =>
    edit(context, async (project) => {
      const turnId = checkTurn(project, message.turn_id);
      const text = project.context_md === '' ? message.text : message.text.replace(/^\n+/, '');
      const separator = project.context_md === '' || project.context_md.endsWith('\n\n') ? '' : '\n\n';
      const context_md = `${project.context_md}${separator}${text}`;
      if (context_md.length > CONTEXT_MD_MAX) {
        throw new AppError('bad_request', `context_md would exceed ${CONTEXT_MD_MAX} characters`);
      }
      return commit(context, project, {
        next: { ...project, context_md },
        turnId,
        before: message.before_events,
        events: [{ type: 'context.appended', video_id: null, data: { text: message.text } }],
        result: { appended: true as const },
      });
    }),

  set_aspect_ratio: (context: ProjectContext, message: Msg<'set_aspect_ratio'>) =>
    edit(context, async (project) => {
      const turnId = checkTurn(project, message.turn_id);
      const video = findVideo(project, message.video_id);
      if (video.aspect_ratio === message.aspect_ratio) {
        return unchanged(context, project, turnId, message.before_events, { changed: null });
      }
      const changed = { ...video, aspect_ratio: message.aspect_ratio };
      return commit(context, project, {
        next: { ...project, videos: project.videos.map((one) => (one.id === video.id ? changed : one)) },
        turnId,
        before: message.before_events,
        events: [ratioChanged(video, message.aspect_ratio)],
        result: { changed: { video_id: video.id, from: video.aspect_ratio, to: message.aspect_ratio } },
      });
    }),

  add_asset: (context: ProjectContext, message: Msg<'add_asset'>) =>
    edit(context, async (project) => {
      // A turn's media may arrive after the turn failed (docs/editor.md, Agent turns): it still joins the
      // library, so an asset is never refused for a lost turn; its event names the turn only while that turn
      // holds the project.
      const turnId = message.turn_id && project.turn?.turn_id === message.turn_id ? message.turn_id : null;
      const existing = await context.ports.assets.get(message.asset.id);
      const asset: AssetRecord = existing ?? {
        ...message.asset,
        project_id: project.id,
        created_at: new Date(context.clock.now()),
      };
      if (asset.project_id !== project.id)
        throw new AppError('conflict', 'Asset id belongs to another project');
      const view = toAssetView(asset, context.ports.mediaUrl);
      if (existing) return unchanged(context, project, turnId, message.before_events, { asset: view });
      return commit(context, project, {
        next: project,
        turnId,
        before: message.before_events,
        assets: [asset],
        events: [{ type: 'asset.created', video_id: null, data: { asset: view } }],
        result: { asset: view },
      });
    }),
};

/** A command that changes nothing still commits the turn's events it carries. */
async function unchanged<Result>(
  context: ProjectContext,
  project: ProjectRecord,
  turnId: string | null,
  before: readonly EventDraft[] | undefined,
  result: Result,
): Promise<Committed<Result>> {
  if (turnId === null || !before?.length) return { ...result, events: [], revision: project.revision };
  return commit(context, project, {
    next: project,
    turnId,
    before,
    events: [],
    result,
    bumpsRevision: false,
  });
}

function ratioChanged(video: VideoRecord, to: string): EventDraft {
  return {
    type: 'aspect_ratio.changed',
    video_id: video.id,
    data: { video_id: video.id, from: video.aspect_ratio, to },
  };
}
