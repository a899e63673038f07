import type { AgentToolArgs, AgentToolName } from '../../../schemas/agent-tools.ts';
import { LOOK_FIELDS } from '../../../schemas/clip-applies.ts';
import {
  toClipViews,
  type AssetView,
  type ClipView,
  type AssetRecord,
  type AssetsRepository,
  type ClipRecord,
  type ProjectRecord,
  type ProjectsRepository,
  type VideoRecord,
} from '../../../actors/index.ts';
import { AppError, newId } from '../../platform/index.ts';
import type { AgentClip, AgentLibraryItem, ToolOutcome } from '../agents/agent-model.ts';
import type { ExportRequest } from '../../../schemas/editor.ts';
import type { VideoExporter } from '../ports/video-exporter.ts';
import { lookTools } from './turn-look-tools.ts';
import type { TurnMedia } from './turn-media.ts';
import { TurnLost, type TurnSession } from './turn-session.ts';

/** An asset as the agent sees it in its library (the system prompt and `list_assets`). */
export function libraryItem(asset: AssetRecord): AgentLibraryItem {
  const { prompt, duration_sec } = asset.metadata;
  return {
    id: asset.id,
    kind: asset.kind,
    source: asset.source,
    prompt: typeof prompt === 'string' ? prompt : null,
    duration_sec: typeof duration_sec === 'number' ? duration_sec : null,
  };
}

/** The second edition's fields a clip may carry, as the agent sees them. */
const AGENT_LOOK_FIELDS = LOOK_FIELDS satisfies readonly (keyof AgentClip)[];

/** A clip as the agent sees it in the system prompt: its timing, and the look fields it has. */
export function agentClip(clip: ClipRecord): AgentClip {
  const { id, track, idx, asset_id, start_sec, trim_start_sec, duration_sec, volume } = clip;
  const looks: Partial<AgentClip> = {};
  for (const field of AGENT_LOOK_FIELDS) {
    if (clip[field] !== undefined) Object.assign(looks, { [field]: clip[field] });
  }
  return { id, track, idx, asset_id, start_sec, trim_start_sec, duration_sec, volume, ...looks };
}

/** What a turn did, for instruct's answer (docs/editor.md, Routes). */
export interface TurnResults {
  assets_created: AssetView[];
  clips_created: ClipView[];
  context_appended: boolean;
  aspect_ratio_changed: { video_id: string; from: string; to: string } | null;
  media_gen_done: boolean;
  /** Credits of the turn's media generation (0 when none was charged). */
  media_credits: number;
}

/** What a turn's tools read and call. */
export interface TurnToolsDeps {
  projects: Pick<ProjectsRepository, 'get'>;
  assets: Pick<AssetsRepository, 'get' | 'listByProject'>;
  media: TurnMedia;
  /** The export service `POST .../export` uses (`export_video`). */
  exports: VideoExporter;
  mediaUrl(mediaId: string): string;
}

/** What each tool does with its checked arguments, by name. */
export type ToolRunners = { [Name in AgentToolName]: (args: AgentToolArgs<Name>) => Promise<ToolOutcome> };

/** What every tool of one turn works with. */
export interface TurnToolContext {
  deps: TurnToolsDeps;
  session: TurnSession;
  /** What the turn did so far: the tools add to it. */
  results: TurnResults;
  /** The project as stored now (`TurnLost` when it is gone). */
  project(): Promise<ProjectRecord>;
  /** An asset the agent named, when it is this project's (404 otherwise). */
  ownAsset(id: string): Promise<AssetRecord>;
  /** The turn's video as stored now (the project's first, should it be gone). */
  currentVideo(): Promise<VideoRecord>;
  /** An asset's media URL, as clients and providers fetch it. */
  urlOf(asset: AssetRecord): string;
}

/** The context of one turn's tools: its session, its results so far, and the reads they share. */
export function turnToolContext(
  deps: TurnToolsDeps,
  session: TurnSession,
  results: TurnResults,
): TurnToolContext {
  const { projectId, videoId } = session;
  async function project(): Promise<ProjectRecord> {
    const found = await deps.projects.get(projectId);
    if (!found) throw new TurnLost();
    return found;
  }
  return {
    deps,
    session,
    results,
    project,
    async ownAsset(id) {
      const asset = await deps.assets.get(id);
      if (!asset || asset.project_id !== projectId)
        throw new AppError('not_found', `asset ${id} is not in this project`);
      return asset;
    },
    async currentVideo() {
      const state = await project();
      return state.videos.find((video) => video.id === videoId) ?? state.videos[0]!;
    },
    urlOf: (asset) => deps.mediaUrl(asset.media_id),
  };
}

/** What each of the turn's tools does (docs/editor.md, The tools), by name. */
export function toolRunners(context: TurnToolContext): ToolRunners {
  return {
    ...readingTools(context),
    ...mediaTools(context),
    ...editingTools(context),
    ...lookTools(context),
    ...exportTool(context),
  };
}

/** The library and the timeline, read as they are now. */
function readingTools({
  deps,
  session,
  project,
  urlOf,
}: TurnToolContext): Pick<ToolRunners, 'list_assets' | 'get_timeline'> {
  return {
    async list_assets() {
      const assets = await deps.assets.listByProject(session.projectId);
      const result = assets.map((asset) => ({ ...libraryItem(asset), url: urlOf(asset) }));
      return { ok: true, result: { assets: result }, summary: `${assets.length} assets` };
    },
    async get_timeline(args) {
      const state = await project();
      const target = args.video_id ?? session.videoId;
      if (!state.videos.some((video) => video.id === target)) {
        return { ok: false, error: `video ${target} is not in this project` };
      }
      const assets = await deps.assets.listByProject(session.projectId);
      const clips = toClipViews(
        state.clips
          .filter((clip) => clip.video_id === target)
          .sort((a, b) => a.track.localeCompare(b.track) || a.idx - b.idx),
        assets,
      );
      const tracks = { video: [], voice: [], sfx: [], music: [], text: [] } as Record<string, ClipView[]>;
      for (const clip of clips) tracks[clip.track]!.push(clip);
      return { ok: true, result: { video_id: target, tracks }, summary: `${clips.length} clips` };
    },
  };
}

/**
 * The media generations (turn-media.ts): references and the start image must be the project's images; the
 * aspect ratio follows the turn's video. A delivered one counts in the turn's results, its credits included.
 */
function mediaTools(context: TurnToolContext): Pick<ToolRunners, 'generate_image' | 'generate_video'> {
  const { deps, session, results, ownAsset, currentVideo, urlOf } = context;
  function counted(outcome: ToolOutcome): ToolOutcome {
    if (outcome.ok) {
      const { asset, credits } = outcome.result as { asset: AssetView; credits: number };
      results.assets_created.push(asset);
      results.media_gen_done = true;
      results.media_credits += credits;
    }
    return outcome;
  }
  return {
    async generate_image(args) {
      const references = await Promise.all((args.reference_asset_ids ?? []).map(ownAsset));
      const notImage = references.find((asset) => asset.kind !== 'image');
      if (notImage) return { ok: false, error: `asset ${notImage.id} is not an image` };
      const ratio = (await currentVideo()).aspect_ratio;
      return counted(await deps.media.image(session, args, ratio, references, urlOf));
    },
    async generate_video(args) {
      const image = args.image_asset_id ? await ownAsset(args.image_asset_id) : undefined;
      if (image && image.kind !== 'image') return { ok: false, error: `asset ${image.id} is not an image` };
      if (image && args.fast) return { ok: false, error: 'fast mode supports text-to-video only' };
      const ratio = (await currentVideo()).aspect_ratio;
      return counted(await deps.media.video(session, args, ratio, image, urlOf));
    },
  };
}

/**
 * The direct edits, as the edit routes make them: each a command of the project's actor under the turn's id
 * and its own op id, carrying the turn's noted events.
 */
function editingTools({
  session,
  results,
}: TurnToolContext): Pick<
  ToolRunners,
  'add_clip' | 'update_clip' | 'remove_clip' | 'append_context' | 'set_aspect_ratio'
> {
  const { commands, projectId, turnId, videoId } = session;
  return {
    async add_clip(args) {
      const answer = await session.run((before) =>
        commands.add_clip(projectId, {
          ...args,
          op_id: session.nextOpId('add_clip'),
          turn_id: turnId,
          before_events: before,
          clip_id: newId('vc', 16),
          video_id: videoId,
        }),
      );
      results.clips_created.push(answer.clip);
      return { ok: true, result: { clip: answer.clip }, summary: `clip ${answer.clip.id} on ${args.track}` };
    },
    async update_clip(args) {
      const answer = await session.run((before) =>
        commands.update_clip(projectId, {
          ...args,
          op_id: session.nextOpId('update_clip'),
          turn_id: turnId,
          before_events: before,
        }),
      );
      return { ok: true, result: { clip: answer.clip }, summary: `clip ${args.clip_id} updated` };
    },
    async remove_clip(args) {
      await session.run((before) =>
        commands.remove_clip(projectId, {
          ...args,
          op_id: session.nextOpId('remove_clip'),
          turn_id: turnId,
          before_events: before,
        }),
      );
      return {
        ok: true,
        result: { id: args.clip_id, deleted: true },
        summary: `clip ${args.clip_id} removed`,
      };
    },
    async append_context(args) {
      await session.run((before) =>
        commands.append_context(projectId, {
          ...args,
          op_id: session.nextOpId('context'),
          turn_id: turnId,
          before_events: before,
        }),
      );
      results.context_appended = true;
      return { ok: true, result: { appended: true }, summary: 'context appended' };
    },
    async set_aspect_ratio(args) {
      const answer = await session.run((before) =>
        commands.set_aspect_ratio(projectId, {
          ...args,
          op_id: session.nextOpId('aspect_ratio'),
          turn_id: turnId,
          before_events: before,
          video_id: videoId,
        }),
      );
      if (answer.changed) {
        const first = results.aspect_ratio_changed;
        results.aspect_ratio_changed = { ...answer.changed, from: first?.from ?? answer.changed.from };
      }
      return { ok: true, result: { changed: answer.changed }, summary: `aspect ratio ${args.aspect_ratio}` };
    },
  };
}

/** `export_video`'s arguments as the export route's body (the same fields, the same defaults). */
function exportBody(args: AgentToolArgs<'export_video'>): ExportRequest {
  const { fit, quality } = args;
  return { ...(fit ? { fit } : {}), ...(quality ? { quality } : {}) };
}

/**
 * The REST export of the target video as it is now (the turn's own edits included): the same checks, rate
 * limit, cache and `export.*` events. Not a media generation, and nothing is charged for it.
 */
function exportTool({ deps, session, project }: TurnToolContext): Pick<ToolRunners, 'export_video'> {
  return {
    async export_video(args) {
      const state = await project();
      const video = state.videos.find((one) => one.id === session.videoId);
      if (!video) throw new TurnLost();
      try {
        const answer = await deps.exports.export(session.principal.userId, state, video, exportBody(args));
        return {
          ok: true,
          result: answer,
          summary: `exported ${answer.duration_sec} s: ${answer.video_url}`,
        };
      } catch (error) {
        // Every export failure is the agent's to report (the turn goes on): its code and message.
        const code = deps.exports.failureCode(error);
        if (!code) throw error;
        const { message } = (error as AppError).toBody() as { message?: string };
        return { ok: false, error: message ? `${code}: ${message}` : code };
      }
    },
  };
}
