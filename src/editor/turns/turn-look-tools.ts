import { overlongTransitions, type ClipSource } from '../../../schemas/clip-bounds.ts';
import { TRANSITION_TOO_LONG_MESSAGE } from '../../../schemas/clip-effect-fields.ts';
import { TRANSITION_DEFAULT_SEC, type TransitionIn } from '../../../schemas/timeline-terms.ts';
import type { AgentToolArgs } from '../../../schemas/agent-tools.ts';
import type {
  AssetRecord,
  AssetsRepository,
  ClipRecord,
  ClipView,
  ProjectRecord,
} from '../../../actors/index.ts';
import { AppError, newId } from '../../platform/index.ts';
import type { ToolOutcome } from '../agents/agent-model.ts';
import type { TurnSession } from './turn-session.ts';

// The tools of the timeline's second edition that are not plain clip edits (docs/editor.md, The tools):
// `add_text` (a text clip: the `add_clip` command on the text track) and `set_transition` (the `update_clip`
// command's `transition_in`, on one clip or on every cut). The project actor checks each change as it checks
// the routes', so a refused change answers the routes' message.

function clipSource(asset: AssetRecord): ClipSource {
  const duration = asset.metadata.duration_sec;
  return { kind: asset.kind, durationSec: typeof duration === 'number' ? duration : null };
}

const sameTransition = (a: TransitionIn | null | undefined, b: TransitionIn | null) =>
  (a ?? null) === null ? b === null : b !== null && a!.type === b.type && a!.duration_sec === b.duration_sec;

const cutsPhrase = (n: number) => (n === 1 ? '1 cut' : `${n} cuts`);

/** What the look tools work with: a part of the turn's tool context (turn-tool-runners.ts). */
export interface LookToolsContext {
  deps: { assets: Pick<AssetsRepository, 'listByProject'> };
  session: TurnSession;
  results: { clips_created: ClipView[] };
  /** The project as stored now. */
  project(): Promise<ProjectRecord>;
}

/** The look tools by name. */
export interface LookTools {
  add_text(args: AgentToolArgs<'add_text'>): Promise<ToolOutcome>;
  set_transition(args: AgentToolArgs<'set_transition'>): Promise<ToolOutcome>;
}

/** `add_text` and `set_transition`. */
export function lookTools({ deps, session, results, project }: LookToolsContext): LookTools {
  const { commands, projectId, turnId, videoId } = session;

  /** One clip's `transition_in`, through the actor (its checks: the clip's track, the length against both neighbours). */
  async function setTransitionOf(clipId: string, transition: TransitionIn | null): Promise<ClipView> {
    const answer = await session.run((before) =>
      commands.update_clip(projectId, {
        clip_id: clipId,
        transition_in: transition,
        op_id: session.nextOpId('transition'),
        turn_id: turnId,
        before_events: before,
      }),
    );
    return answer.clip;
  }

  /**
   * The clips of the turn's video track after the first that `transition` would change, or the reason it may
   * not: every transition must fit half of both clips it joins (judged on the whole track before any change,
   * so that "all" changes every cut or none).
   */
  async function cutsToSet(transition: TransitionIn | null): Promise<ClipRecord[] | string> {
    const state = await project();
    const own = state.clips.filter((clip) => clip.video_id === videoId);
    const track = own.filter((clip) => clip.track === 'video').sort((a, b) => a.idx - b.idx);
    if (track.length < 2) {
      return `there is no cut: the video track has ${track.length === 1 ? '1 clip' : `${track.length} clips`}`;
    }
    const cuts = track.slice(1);
    if (transition) {
      const assets = await deps.assets.listByProject(projectId);
      const sources = new Map(assets.map((asset) => [asset.id, clipSource(asset)]));
      const cutIds = new Set(cuts.map((clip) => clip.id));
      const after = own.map((clip) => (cutIds.has(clip.id) ? { ...clip, transition_in: transition } : clip));
      const overlong = overlongTransitions(after, (assetId) => sources.get(assetId));
      const first = cuts.find((clip) => overlong.has(clip.id));
      if (first) return `${TRANSITION_TOO_LONG_MESSAGE} (clip ${first.idx + 1}, ${first.id})`;
    }
    return cuts.filter((clip) => !sameTransition(clip.transition_in, transition));
  }

  return {
    async add_text(args) {
      const answer = await session.run((before) =>
        commands.add_clip(projectId, {
          ...args,
          track: 'text',
          op_id: session.nextOpId('add_text'),
          turn_id: turnId,
          before_events: before,
          clip_id: newId('vc', 16),
          video_id: videoId,
        }),
      );
      results.clips_created.push(answer.clip);
      return { ok: true, result: { clip: answer.clip }, summary: `text clip ${answer.clip.id}` };
    },

    async set_transition(args) {
      const transition =
        args.type === 'none'
          ? null
          : { type: args.type, duration_sec: args.duration_sec ?? TRANSITION_DEFAULT_SEC };
      const what = transition ? `${transition.type} ${transition.duration_sec} s` : 'no transition';
      if (args.clip_id !== 'all') {
        const clip = await setTransitionOf(args.clip_id, transition);
        return { ok: true, result: { clips: [clip] }, summary: `${what} into clip ${clip.id}` };
      }
      const cuts = await cutsToSet(transition);
      if (typeof cuts === 'string') return { ok: false, error: cuts };
      const changed: ClipView[] = [];
      for (const clip of cuts) {
        try {
          changed.push(await setTransitionOf(clip.id, transition));
        } catch (error) {
          // Only a change made meanwhile by someone else can refuse one now: say how far it got.
          if (!(error instanceof AppError) || error.status >= 500 || changed.length === 0) throw error;
          return {
            ok: false,
            error: `${error.message} (clip ${clip.id}; ${cutsPhrase(changed.length)} already changed)`,
          };
        }
      }
      return {
        ok: true,
        result: { clips: changed },
        summary: `${what} on every cut (${cutsPhrase(changed.length)} changed)`,
      };
    },
  };
}
