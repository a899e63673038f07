import type { Logger } from 'pino';
import type { ProjectCommands, ProjectRecord } from '../../../actors/index.ts';
import {
  AppError,
  newId,
  type KeyPrincipal,
  type MediaIntake,
  type MediaStore,
} from '../../platform/index.ts';
import { TURN_CREDITS } from '../../../schemas/editor-terms.ts';
import { admitTurn, insufficientCredits, type TurnAdmissionDeps } from './turn-admission.ts';
import { createTurnReferences } from './turn-references.ts';
import { runTurn, type InstructAnswer, type InstructRequest, type TurnRunDeps } from './turn-run.ts';
import { TurnSession } from './turn-session.ts';
import { createTurnWaiters } from './turn-waiters.ts';

export type { InstructAnswer, InstructRequest } from './turn-run.ts';

/**
 * Agent turns (docs/editor.md, The turn protocol): one call of instruct is one turn, run in this order —
 * reference images fetched and probed (before any charge) → a place in the project's turn queue (429 when
 * full) → the 5-credit charge (op id from the turn id; 402 withdraws the place) → wait for the turn →
 * `begin_turn` → one agent step through the tools → `finish_turn` (which grants the next turn). A granted
 * turn holds a lease renewed here; if this process dies, the lease lapses and the actor fails the turn and
 * grants the next. The client going away changes nothing: the turn runs to its end.
 */
export interface EditorTurns {
  /**
   * Runs one turn of `principal` on `project` (the video `body.video_id`, or the first) and answers its reply
   * and what it did. Refused before anything is charged: 404 for an unknown video, 503 when the agent has no
   * model credentials, 402 when the balance is below a turn's price, 400/413/415 for a reference image;
   * then 429 when the project's queue is full, 402 when the charge is refused.
   */
  instruct(
    principal: KeyPrincipal,
    project: ProjectRecord,
    body: InstructRequest,
    options?: InstructOptions,
  ): Promise<InstructAnswer>;
  /** Wakes this node's turns queued on `projectId` (a turn there ended, or its lease lapsed). */
  wake(projectId: string): void;
}

/** What a caller of instruct may ask for besides the answer. */
export interface InstructOptions {
  /**
   * Told the turn's id before the turn asks for its place (before any of its events): a caller following the
   * project's events (MCP progress) keeps those whose `turn_id` it is.
   */
  onStarted?(turnId: string): void;
}

/** What agent turns work with: what admits a turn, what runs it, and this node's part in the lease. */
export interface EditorTurnsDeps extends TurnAdmissionDeps, TurnRunDeps {
  /** The project actor's commands: the turn protocol's and the tools' edits. */
  commands: ProjectCommands;
  /** The user's balance, checked before anything else is done (402 below a turn's price). */
  balanceOf(userId: string): Promise<number>;
  /** Where reference images are fetched to (and removed from when they never become assets). */
  store: MediaStore;
  intake: MediaIntake;
  /** How long a granted turn holds its project without a renewal. */
  turnLeaseMs: number;
  logger: Logger;
}

/** This node's agent turns: the turn's way to its grant (turn-admission.ts), its run (turn-run.ts), its lease. */
export function createEditorTurns(deps: EditorTurnsDeps): EditorTurns {
  const { commands, logger } = deps;
  const waiters = createTurnWaiters(commands, deps.clock);
  const referenceImages = createTurnReferences({ intake: deps.intake, store: deps.store });

  /** One instruct call: checks → queue → charge → wait → run → answer. */
  async function instruct(
    principal: KeyPrincipal,
    project: ProjectRecord,
    body: InstructRequest,
    options: InstructOptions = {},
  ): Promise<InstructAnswer> {
    const video = body.video_id ? project.videos.find((one) => one.id === body.video_id) : project.videos[0];
    if (!video) throw new AppError('not_found', 'Video not found');
    if (!deps.agent.configured) {
      throw new AppError('unavailable', "The agent's model credentials are not configured on this server");
    }
    const balance = await deps.balanceOf(principal.userId);
    if (balance < TURN_CREDITS) throw insufficientCredits(TURN_CREDITS, balance);

    const references = await referenceImages.fetch(body.image_urls);
    const turnId = newId('turn', 16);
    options.onStarted?.(turnId);
    const log = logger.child({ turn_id: turnId, project_id: project.id });
    const ticket = { principal, projectId: project.id, videoId: video.id, turnId, references };
    await admitTurn(deps, { waiters, referenceImages }, ticket, log);
    const session = new TurnSession(commands, principal, project.id, video.id, turnId);
    const stopRenewing = renewLease(commands, session, deps.turnLeaseMs, log);
    try {
      return await runTurn(deps, referenceImages, session, body, references, log);
    } finally {
      stopRenewing();
      waiters.wake(project.id);
    }
  }

  return { instruct, wake: waiters.wake };
}

/**
 * Renews the granted turn's lease every third of it (at least every 250 ms) until stopped. An answer saying the
 * turn no longer holds its project, or that the project is gone, marks the session lost: the turn stops.
 */
function renewLease(
  commands: Pick<ProjectCommands, 'renew_turn'>,
  session: TurnSession,
  leaseMs: number,
  log: Logger,
): () => void {
  const renewal = setInterval(
    () => {
      commands.renew_turn(session.projectId, { turn_id: session.turnId }).then(
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
    Math.max(250, Math.floor(leaseMs / 3)),
  );
  return () => clearInterval(renewal);
}
