import { AGENT_TOOLS, MEDIA_TOOLS, type AgentToolName } from '../../../schemas/agent-tools.ts';
import { addClipRules, patchClipRules, type ClipTarget } from '../../../schemas/clip-rules.ts';
import { createChecker, type FieldRule } from '../../../schemas/validate.ts';
import { AppError } from '../../platform/index.ts';
import type { AgentTools, ToolOutcome } from '../agents/agent-model.ts';
import { TurnAborted, TurnLost, type TurnSession } from './turn-session.ts';
import { toolRunners, turnToolContext, type TurnResults, type TurnToolsDeps } from './turn-tool-runners.ts';

/** One turn's tools, and what they did. */
export interface TurnTools {
  /** What the agent calls (and refuses). */
  tools: AgentTools;
  /** What the turn did so far, for instruct's answer; the tools add to it as they run. */
  results: TurnResults;
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
 * the project actor under the turn's id (turn-tool-runners.ts). The runtime, not the agent, enforces the rules:
 * arguments are checked against the tool's schema, ids must belong to the project, and a second media
 * generation in a turn is refused. Each call is announced (`tool.started`, `tool.finished`).
 */
export function createTurnTools(deps: TurnToolsDeps, session: TurnSession): TurnTools {
  const results: TurnResults = {
    assets_created: [],
    clips_created: [],
    context_appended: false,
    aspect_ratio_changed: null,
    media_gen_done: false,
    media_credits: 0,
  };
  const context = turnToolContext(deps, session, results);
  const run = toolRunners(context);
  let generations = 0;
  let calls = 0;
  const { videoId } = session;

  /** The clip an `update_clip` names (its track sets the `duration_sec` bound), before its arguments are checked. */
  async function clipTarget(args: unknown): Promise<ClipTarget> {
    const clipId = (args as { clip_id?: unknown } | null)?.clip_id;
    if (typeof clipId !== 'string') return { track: undefined };
    return { track: (await context.project()).clips.find((clip) => clip.id === clipId)?.track };
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

  /**
   * Checks the call (an unknown tool, invalid arguments, a second generation: the agent's error), then runs it.
   * A tool's 4xx is the agent's to report; a lost or aborted turn, or anything else, ends the turn.
   */
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
