import type { Logger } from 'pino';
import type {
  ProjectCommands,
  UserCredits,
  AssetsRepository,
  ProjectRecord,
  ProjectsRepository,
  ThreadRepository,
  ProjectEvent,
} from '../../../actors/index.ts';
import {
  AppError,
  newId,
  type KeyPrincipal,
  type Clock,
  type MediaIntake,
  type MediaStore,
} from '../../platform/index.ts';
import { TRACKS, TURN_CREDITS } from '../../../schemas/editor-terms.ts';
import { AgentFailure, type AgentModel, type AgentUsage } from '../agents/agent-model.ts';
import type { TurnMedia } from './turn-media.ts';
import { TurnAborted, TurnLost, TurnSession, type TurnEventDraft } from './turn-session.ts';
import {
  agentClip,
  createTurnTools,
  libraryItem,
  type TurnResults,
  type TurnToolsDeps,
} from './turn-tools.ts';
import { refundDroppedTurn, turnChargeOpId } from './turn-refunds.ts';
import { createTurnReferences, type TurnReference } from './turn-references.ts';
import { createTurnWaiters } from './turn-waiters.ts';

export interface EditorTurnsDeps {
  commands: ProjectCommands;
  credits: Pick<UserCredits, 'charge_turn' | 'refund'>;
  balanceOf(userId: string): Promise<number>;
  projects: ProjectsRepository;
  assets: AssetsRepository;
  thread: ThreadRepository;
  store: MediaStore;
  intake: MediaIntake;
  agent: AgentModel;
  media: TurnMedia;
  /** The export service, for the agents' `export_video`. */
  exports: TurnToolsDeps['exports'];
  mediaUrl(mediaId: string): string;
  nodeId: string;
  turnLeaseMs: number;
  clock: Clock;
  logger: Logger;
  /** Told of every turn that ran, with the tokens it used (`/metrics`). */
  observe?: { turnEnded(outcome: 'completed' | 'failed', usage: AgentUsage | undefined): void };
}

/** Instruct's body once validated (docs/editor.md, Routes). */
export interface InstructRequest {
  instruction?: string;
  image_urls: string[];
  video_id?: string;
}

/** What a caller of instruct may ask for besides the answer. */
export interface InstructOptions {
  /**
   * Told the turn's id before the turn asks for its place (before any of its events): a caller following the
   * project's events (MCP progress) keeps those whose `turn_id` it is.
   */
  onStarted?(turnId: string): void;
}

/** How many earlier messages of the thread an agent reads. */
const HISTORY_MESSAGES = 20;

/**
 * Agent turns (docs/editor.md, The turn protocol): one call of instruct is one turn, run in this order —
 * reference images fetched and probed (before any charge) → a place in the project's turn queue (429 when
 * full) → the 5-credit charge (op id from the turn id; 402 withdraws the place) → wait for the turn →
 * `begin_turn` → one agent step through the tools → `finish_turn` (which grants the next turn). A granted
 * turn holds a lease renewed here; if this process dies, the lease lapses and the actor fails the turn and
 * grants the next. The client going away changes nothing: the turn runs to its end.
 */
export function createEditorTurns(deps: EditorTurnsDeps) {
  const { commands, logger } = deps;
  const waiters = createTurnWaiters(commands, deps.clock);
  const referenceImages = createTurnReferences({ intake: deps.intake, store: deps.store });

  /** One instruct call: checks → queue → charge → wait → run → answer. */
  async function instruct(
    principal: KeyPrincipal,
    project: ProjectRecord,
    body: InstructRequest,
    options: InstructOptions = {},
  ) {
    const video = body.video_id ? project.videos.find((one) => one.id === body.video_id) : project.videos[0];
    if (!video) throw new AppError('not_found', 'Video not found');
    if (!deps.agent.configured) {
      throw new AppError('unavailable', "The agent's model credentials are not configured on this server");
    }
    const balance = await deps.balanceOf(principal.userId);
    if (balance < TURN_CREDITS) throw insufficient(TURN_CREDITS, balance);

    const references = await referenceImages.fetch(body.image_urls);
    const turnId = newId('turn', 16);
    options.onStarted?.(turnId);
    const log = logger.child({ turn_id: turnId, project_id: project.id });
    const place = await commands.request_turn(project.id, {
      op_id: `${turnId}:request`,
      turn_id: turnId,
      video_id: video.id,
      key_id: principal.keyId,
      node_id: deps.nodeId,
      seen_at: deps.clock.now(),
    });
    if (place.status === 'full') {
      await referenceImages.discard(references);
      throw new AppError(
        'rate_limited',
        'Too many turns are waiting for this project',
        {},
        { 'retry-after': '5' },
      );
    }
    const charge = await deps.credits.charge_turn(principal.userId, {
      op_id: turnChargeOpId(turnId),
      amount: TURN_CREDITS,
      reason: 'agent_turn',
      project_id: project.id,
    });
    if (!charge.ok) {
      await finish(project.id, turnId, 'withdrawn', {}, [], []).catch(() => undefined);
      await referenceImages.discard(references);
      throw insufficient(charge.credits_required, charge.credits_remaining);
    }
    log.info({ queued: place.status === 'queued' }, 'turn charged');
    try {
      if (place.status !== 'granted') await waiters.waitForGrant(project.id, turnId);
    } catch (error) {
      // Dropped before it ran (its project was deleted, it lost its place): nothing ran, nothing is kept.
      await finish(project.id, turnId, 'withdrawn', {}, [], []).catch(() => undefined);
      await refundDroppedTurn(deps.credits, principal.userId, turnId);
      await referenceImages.discard(references);
      throw error;
    }
    const session = new TurnSession(commands, principal, project.id, video.id, turnId);
    const renewal = setInterval(
      () => {
        commands.renew_turn(project.id, { turn_id: turnId }).then(
          (renewed) => {
            if (!renewed.ok) session.markLost();
          },
          (error: unknown) => {
            // A deleted project ends the turn at once, even while it waits for its media.
            if (error instanceof AppError && error.code === 'not_found') session.markLost();
            else log.warn({ err: error }, 'turn lease renewal failed');
          },
        );
      },
      Math.max(250, Math.floor(deps.turnLeaseMs / 3)),
    );
    try {
      return await run(session, body, references, log);
    } finally {
      clearInterval(renewal);
      waiters.wake(project.id);
    }
  }

  async function run(session: TurnSession, body: InstructRequest, references: TurnReference[], log: Logger) {
    const { projectId, turnId, videoId } = session;
    const startedAt = new Date(deps.clock.now()).toISOString();
    const instruction = body.instruction ?? '';
    const userMessage = {
      id: `msg_${turnId}_0`,
      video_id: videoId,
      role: 'user' as const,
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
      const project = await deps.projects.get(projectId);
      if (!project) throw new TurnLost();
      const video = project.videos.find((one) => one.id === videoId)!;
      const [history, library] = await Promise.all([
        deps.thread.recent(projectId, videoId, HISTORY_MESSAGES),
        deps.assets.listByProject(projectId),
      ]);
      const reply = await deps.agent.runTurn(
        {
          instruction,
          references: referenceAssets,
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
        },
        tools,
        {
          say: (text) => session.say(text),
          signal: session.signal,
        },
      );
      if (session.isLost) throw new TurnLost();
      const creditsCharged = TURN_CREDITS + results.media_credits;
      await session.run((before) =>
        finish(
          projectId,
          turnId,
          'completed',
          {
            assistant_text: reply.text,
            credits_charged: creditsCharged,
            ...(reply.usage ? { usage: reply.usage } : {}),
          },
          before,
          [
            userMessage,
            {
              id: `msg_${turnId}_1`,
              video_id: videoId,
              role: 'assistant',
              text: reply.text,
              ...(reply.usage ? { usage: reply.usage } : {}),
              created_at: new Date(Math.max(deps.clock.now(), Date.parse(startedAt) + 1)).toISOString(),
            },
          ],
        ),
      );
      deps.observe?.turnEnded('completed', reply.usage);
      log.info(
        { credits: creditsCharged, media: results.media_gen_done, usage: reply.usage },
        'turn completed',
      );
      return answer(reply.text, results, turnEvents(session));
    } catch (error) {
      session.abort();
      // Reference images that never became assets belong to nothing: their files go.
      await referenceImages.discard(references);
      throw await failed(session, error, userMessage, log);
    } finally {
      session.close();
    }
  }

  /** Ends a failed turn (`turn.failed`) and answers the error the client gets. */
  async function failed(
    session: TurnSession,
    error: unknown,
    userMessage: Parameters<typeof finish>[5][number],
    log: Logger,
  ): Promise<unknown> {
    const { projectId, turnId } = session;
    if (error instanceof TurnLost || session.isLost) {
      log.warn('turn lost its project');
      if (!(await deps.projects.get(projectId))) return new AppError('not_found', 'Project not found');
      return new AppError('unavailable', 'The turn was interrupted before it finished; try again');
    }
    const usage = error instanceof AgentFailure ? error.usage : undefined;
    deps.observe?.turnEnded('failed', usage);
    const answerError =
      error instanceof TurnAborted
        ? error.error
        : error instanceof AgentFailure
          ? new AppError(error.status === 503 ? 'unavailable' : 'bad_gateway', error.message)
          : error instanceof AppError
            ? error
            : new AppError('internal', 'The agent failed');
    if (!(error instanceof TurnAborted || error instanceof AgentFailure || error instanceof AppError)) {
      log.error({ err: error }, 'turn failed');
    }
    await session
      .run((before) =>
        finish(
          projectId,
          turnId,
          'failed',
          { error: answerError.message, status: answerError.status, ...(usage ? { usage } : {}) },
          before,
          [userMessage],
        ),
      )
      .catch((finishError: unknown) => log.warn({ err: finishError }, 'could not record the failed turn'));
    return answerError;
  }

  function finish(
    projectId: string,
    turnId: string,
    outcome: 'completed' | 'failed' | 'withdrawn',
    data: Record<string, unknown>,
    before: TurnEventDraft[],
    messages: {
      id: string;
      video_id: string;
      role: 'user' | 'assistant';
      text: string;
      image_urls?: string[];
      usage?: AgentUsage;
      created_at: string;
    }[],
  ) {
    return commands.finish_turn(projectId, {
      op_id: `${turnId}:finish`,
      turn_id: turnId,
      outcome,
      data,
      before_events: before,
      messages,
    });
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

  return { instruct, wake: waiters.wake };
}

export type EditorTurns = ReturnType<typeof createEditorTurns>;

function answer(text: string, results: TurnResults, events: ProjectEvent[]) {
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

function insufficient(required: number, remaining: number) {
  return new AppError('insufficient_credits', 'Insufficient credits', {
    credits_required: required,
    credits_remaining: remaining,
  });
}
