import type { Logger } from 'pino';
import type {
  AssetView,
  AssetsRepository,
  ClipView,
  ProjectCommands,
  ProjectEvent,
  ProjectsRepository,
  ThreadRepository,
} from '../../../actors/index.ts';
import type { Clock } from '../../platform/index.ts';
import { TRACKS, TURN_CREDITS } from '../../../schemas/editor-terms.ts';
import type { AgentModel, AgentReply, AgentTurnInput } from '../agents/agent-model.ts';
import { failTurn, finishTurn, type TurnMessage, type TurnObserver } from './turn-finish.ts';
import type { TurnMedia } from './turn-media.ts';
import type { TurnReference, TurnReferences } from './turn-references.ts';
import { TurnLost, type TurnSession } from './turn-session.ts';
import { agentClip, libraryItem, type TurnResults, type TurnToolsDeps } from './turn-tool-runners.ts';
import { createTurnTools } from './turn-tools.ts';

/** Instruct's body once validated (docs/editor.md, Routes). */
export interface InstructRequest {
  instruction?: string;
  image_urls: string[];
  video_id?: string;
}

/**
 * Instruct's answer (docs/editor.md, Routes): the agent's reply, what its turn did, and the turn's events. A
 * type rather than an interface, so that it is a record: MCP's instruct answers it as its structured content.
 */
export type InstructAnswer = {
  assistant_text: string;
  assets_created: AssetView[];
  clips_created: ClipView[];
  context_appended: boolean;
  aspect_ratio_changed: { video_id: string; from: string; to: string } | null;
  media_gen_done: boolean;
  /** The events the turn's own commands committed, in `seq` order. */
  agent_events: ProjectEvent[];
};

/** What running a granted turn reads, writes and tells. */
export interface TurnRunDeps {
  commands: ProjectCommands;
  projects: ProjectsRepository;
  assets: AssetsRepository;
  thread: ThreadRepository;
  agent: AgentModel;
  media: TurnMedia;
  /** The export service, for the agents' `export_video`. */
  exports: TurnToolsDeps['exports'];
  mediaUrl(mediaId: string): string;
  clock: Clock;
  /** Told of every turn that ran, with the tokens it used (`/metrics`). */
  observe?: TurnObserver;
}

/** How many earlier messages of the thread an agent reads. */
const HISTORY_MESSAGES = 20;

/**
 * Runs a granted turn (docs/editor.md, The turn protocol): `begin_turn`, the reference images into the
 * library, one agent step through the turn's tools, then `finish_turn` with the instruction and the reply for
 * the thread. Whatever fails ends the turn as failed (turn-finish.ts) and is thrown as the client's error.
 */
export async function runTurn(
  deps: TurnRunDeps,
  referenceImages: TurnReferences,
  session: TurnSession,
  body: InstructRequest,
  references: TurnReference[],
  log: Logger,
): Promise<InstructAnswer> {
  const { commands } = deps;
  const { projectId, turnId, videoId } = session;
  const startedAt = new Date(deps.clock.now()).toISOString();
  const instruction = body.instruction ?? '';
  const userMessage: TurnMessage = {
    id: `msg_${turnId}_0`,
    video_id: videoId,
    role: 'user',
    text: instruction,
    ...(body.image_urls.length > 0 ? { image_urls: body.image_urls } : {}),
    created_at: startedAt,
  };
  const { tools, results } = createTurnTools(
    {
      projects: deps.projects,
      assets: deps.assets,
      media: deps.media,
      exports: deps.exports,
      mediaUrl: deps.mediaUrl,
    },
    session,
  );
  try {
    await session.run(() =>
      commands.begin_turn(projectId, {
        op_id: `${turnId}:begin`,
        turn_id: turnId,
        instruction,
        image_urls: body.image_urls,
      }),
    );
    const referenceAssets = await referenceImages.place(session, references);
    results.assets_created.push(...referenceAssets);
    const input = await agentInput(deps, session, instruction, referenceAssets);
    const reply = await deps.agent.runTurn(input, tools, {
      say: (text) => session.say(text),
      signal: session.signal,
    });
    if (session.isLost) throw new TurnLost();
    const creditsCharged = TURN_CREDITS + results.media_credits;
    await session.run((before) =>
      finishTurn(
        commands,
        projectId,
        turnId,
        'completed',
        {
          assistant_text: reply.text,
          credits_charged: creditsCharged,
          ...(reply.usage ? { usage: reply.usage } : {}),
        },
        before,
        [userMessage, replyMessage(session, reply, startedAt, deps.clock)],
      ),
    );
    deps.observe?.turnEnded('completed', reply.usage);
    log.info(
      { credits: creditsCharged, media: results.media_gen_done, usage: reply.usage },
      'turn completed',
    );
    return instructAnswer(reply.text, results, turnEvents(session));
  } catch (error) {
    session.abort();
    // Reference images that never became assets belong to nothing: their files go.
    await referenceImages.discard(references);
    throw await failTurn(deps, session, error, userMessage, log);
  } finally {
    session.close();
  }
}

/**
 * What the agent is told (its system prompt): the instruction and its reference images, the project and the
 * target video, the thread's recent messages, the library, and the video's timeline in track order.
 */
async function agentInput(
  deps: Pick<TurnRunDeps, 'projects' | 'thread' | 'assets'>,
  session: TurnSession,
  instruction: string,
  references: AssetView[],
): Promise<AgentTurnInput> {
  const { projectId, videoId } = session;
  const project = await deps.projects.get(projectId);
  if (!project) throw new TurnLost();
  const video = project.videos.find((one) => one.id === videoId)!;
  const [history, library] = await Promise.all([
    deps.thread.recent(projectId, videoId, HISTORY_MESSAGES),
    deps.assets.listByProject(projectId),
  ]);
  return {
    instruction,
    references,
    project: {
      id: project.id,
      name: project.name,
      aspect_ratio: project.aspect_ratio,
      context_md: project.context_md,
    },
    video: { id: video.id, name: video.name, aspect_ratio: video.aspect_ratio },
    history: history.map((message) => ({ role: message.role, text: message.text })),
    library: library.map(libraryItem),
    timeline: project.clips
      .filter((clip) => clip.video_id === videoId)
      .sort((a, b) => TRACKS.indexOf(a.track) - TRACKS.indexOf(b.track) || a.idx - b.idx)
      .map(agentClip),
  };
}

/** The agent's reply as the thread keeps it: always after the instruction, even on a clock that did not move. */
function replyMessage(session: TurnSession, reply: AgentReply, startedAt: string, clock: Clock): TurnMessage {
  return {
    id: `msg_${session.turnId}_1`,
    video_id: session.videoId,
    role: 'assistant',
    text: reply.text,
    ...(reply.usage ? { usage: reply.usage } : {}),
    created_at: new Date(Math.max(clock.now(), Date.parse(startedAt) + 1)).toISOString(),
  };
}

/**
 * The turn's events in `seq` order (instruct's `agent_events`): those its own commands committed, as their
 * answers numbered them (turn-session.ts collects them). No one else commits events of a running turn: its
 * media's asset is added by the turn itself while it holds the project (generated-assets.ts), and a
 * redelivered command answers with the events its first run committed (the project keeps its newest
 * command's answer whole, actors/project-commit.ts).
 */
function turnEvents(session: TurnSession): ProjectEvent[] {
  const bySeq = new Map(session.events.map((event) => [event.seq, event]));
  return [...bySeq.values()]
    .filter((event) => event.turn_id === session.turnId)
    .sort((a, b) => a.seq - b.seq);
}

function instructAnswer(text: string, results: TurnResults, events: ProjectEvent[]): InstructAnswer {
  return {
    assistant_text: text,
    assets_created: results.assets_created,
    clips_created: results.clips_created,
    context_appended: results.context_appended,
    aspect_ratio_changed: results.aspect_ratio_changed,
    media_gen_done: results.media_gen_done,
    agent_events: events,
  };
}
