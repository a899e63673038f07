import {
  AGENT_TOOLS,
  MEDIA_TOOLS,
  type AgentToolArgs,
  type AgentToolName,
} from '../../../schemas/agent-tools.ts';
import { addClipRules, patchClipRules, type ClipTarget } from '../../../schemas/clip-rules.ts';
import { createChecker, type FieldRule } from '../../../schemas/validate.ts';
import {
  toClipView,
  type AssetView,
  type ClipView,
  type AssetRecord,
  type AssetsRepository,
  type ClipRecord,
  type ProjectRecord,
  type ProjectsRepository,
} from '../../../actors/index.ts';
import { AppError, newId } from '../../platform/index.ts';
import type { AgentClip, AgentLibraryItem, AgentTools, ToolOutcome } from '../agents/agent-model.ts';
import type { VideoExporter } from '../ports/video-exporter.ts';
import type { TurnMedia } from './turn-media.ts';
import { TurnAborted, TurnLost, type TurnSession } from './turn-session.ts';

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

/** A clip as the agent sees it in the system prompt. */
export function agentClip(clip: ClipRecord): AgentClip {
  const { id, track, idx, asset_id, start_sec, trim_start_sec, duration_sec, volume } = clip;
  return { id, track, idx, asset_id, start_sec, trim_start_sec, duration_sec, volume };
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

export interface TurnToolsDeps {
  projects: Pick<ProjectsRepository, 'get'>;
  assets: Pick<AssetsRepository, 'get' | 'listByProject'>;
  media: TurnMedia;
  /** The export service `POST .../export` uses (`export_video`). */
  exports: VideoExporter;
  mediaUrl(mediaId: string): string;
}

/** The clip tools' bounds, as the clip routes check them (docs/editor.md#bounds). */
const toolRules: Partial<Record<AgentToolName, readonly FieldRule<never, ClipTarget>[]>> = {
  add_clip: addClipRules(),
  update_clip: patchClipRules(),
};

const checkers = Object.fromEntries(
  Object.entries(AGENT_TOOLS).map(([name, schema]) => [
    name,
    createChecker(schema, { rules: toolRules[name as AgentToolName] ?? [] }),
  ]),
) as unknown as Record<
  AgentToolName,
  { check(input: unknown, context?: ClipTarget): ReturnType<ReturnType<typeof createChecker>['check']> }
>;

/**
 * The tools of one turn (docs/editor.md, The tools): the same operations as the direct-edit routes, sent to
 * the project actor under the turn's id. The runtime, not the agent, enforces the rules: arguments are
 * checked against the tool's schema, ids must belong to the project, and a second media generation in a turn
 * is refused. Each call is announced (`tool.started`, `tool.finished`).
 */
export function createTurnTools(deps: TurnToolsDeps, session: TurnSession) {
  const results: TurnResults = {
    assets_created: [],
    clips_created: [],
    context_appended: false,
    aspect_ratio_changed: null,
    media_gen_done: false,
    media_credits: 0,
  };
  let generations = 0;
  let calls = 0;
  const { commands, projectId, turnId, videoId } = session;
  const urlOf = (asset: AssetRecord) => deps.mediaUrl(asset.media_id);

  async function project(): Promise<ProjectRecord> {
    const found = await deps.projects.get(projectId);
    if (!found) throw new TurnLost();
    return found;
  }

  async function ownAsset(id: string): Promise<AssetRecord> {
    const asset = await deps.assets.get(id);
    if (!asset || asset.project_id !== projectId)
      throw new AppError('not_found', `asset ${id} is not in this project`);
    return asset;
  }

  const run: { [Name in AgentToolName]: (args: AgentToolArgs<Name>) => Promise<ToolOutcome> } = {
    async list_assets() {
      const assets = await deps.assets.listByProject(projectId);
      const result = assets.map((asset) => ({ ...libraryItem(asset), url: urlOf(asset) }));
      return { ok: true, result: { assets: result }, summary: `${assets.length} assets` };
    },
    async get_timeline(args) {
      const state = await project();
      const target = args.video_id ?? videoId;
      if (!state.videos.some((video) => video.id === target)) {
        return { ok: false, error: `video ${target} is not in this project` };
      }
      const clips = state.clips
        .filter((clip) => clip.video_id === target)
        .sort((a, b) => a.track.localeCompare(b.track) || a.idx - b.idx)
        .map(toClipView);
      const tracks = { video: [], voice: [], sfx: [], music: [] } as Record<string, ClipView[]>;
      for (const clip of clips) tracks[clip.track]!.push(clip);
      return { ok: true, result: { video_id: target, tracks }, summary: `${clips.length} clips` };
    },
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
    // The REST export of the target video as it is now (the turn's own edits included): the same checks, rate
    // limit, cache and `export.*` events. Not a media generation, and nothing is charged for it.
    async export_video(args) {
      const state = await project();
      const video = state.videos.find((one) => one.id === videoId);
      if (!video) throw new TurnLost();
      try {
        const answer = await deps.exports.export(session.principal.userId, state, video, {
          ...(args.fit ? { fit: args.fit } : {}),
        });
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

  /** The clip an `update_clip` names (its track sets the `duration_sec` bound), before its arguments are checked. */
  async function clipTarget(args: unknown): Promise<ClipTarget> {
    const clipId = (args as { clip_id?: unknown } | null)?.clip_id;
    if (typeof clipId !== 'string') return { track: undefined };
    return { track: (await project()).clips.find((clip) => clip.id === clipId)?.track };
  }

  async function currentVideo() {
    const state = await project();
    return state.videos.find((video) => video.id === videoId) ?? state.videos[0]!;
  }

  function counted(outcome: ToolOutcome): ToolOutcome {
    if (outcome.ok) {
      const { asset, credits } = outcome.result as { asset: AssetView; credits: number };
      results.assets_created.push(asset);
      results.media_gen_done = true;
      results.media_credits += credits;
    }
    return outcome;
  }

  /** Runs one call between its `tool.started` and `tool.finished` events. */
  async function announced(name: string, args: unknown, run: () => Promise<ToolOutcome>) {
    calls += 1;
    const callId = `call_${calls}`;
    session.note({
      type: 'tool.started',
      video_id: videoId,
      data: { call_id: callId, name, arguments: args ?? null },
    });
    const outcome = await run();
    session.note({
      type: 'tool.finished',
      video_id: videoId,
      data: {
        call_id: callId,
        name,
        ok: outcome.ok,
        summary: outcome.ok ? outcome.summary : outcome.error,
      },
    });
    return outcome;
  }

  const tools: AgentTools = {
    call: (name, args) => announced(name, args, () => runChecked(name, args)),
    refuse: (name, error) => announced(name, null, () => Promise.resolve({ ok: false, error })),
  };

  async function runChecked(name: string, args: unknown): Promise<ToolOutcome> {
    if (!Object.hasOwn(run, name)) return { ok: false, error: `unknown tool ${name}` };
    const tool = name as AgentToolName;
    const checked = checkers[tool].check(
      args ?? {},
      tool === 'update_clip' ? await clipTarget(args) : undefined,
    );
    if (!checked.ok) return { ok: false, error: `invalid arguments: ${checked.message}` };
    if (MEDIA_TOOLS.includes(tool)) {
      if (generations >= 1) return { ok: false, error: 'only one media generation per turn' };
      generations += 1;
    }
    try {
      return await (run[tool] as (value: unknown) => Promise<ToolOutcome>)(checked.value);
    } catch (error) {
      if (error instanceof TurnLost || error instanceof TurnAborted) throw error;
      if (error instanceof AppError && error.status < 500) return { ok: false, error: error.message };
      throw error;
    }
  }

  return { tools, results };
}
