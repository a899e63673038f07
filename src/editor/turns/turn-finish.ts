import type { Logger } from 'pino';
import type { ProjectCommands, ProjectsRepository } from '../../../actors/index.ts';
import { AppError } from '../../platform/index.ts';
import { AgentFailure, type AgentUsage } from '../agents/agent-model.ts';
import { TurnAborted, TurnLost, type TurnSession, type TurnEventDraft } from './turn-session.ts';

/** A message of the video's chat thread, kept by `finish_turn`: the instruction, and the reply when there is one. */
export interface TurnMessage {
  id: string;
  video_id: string;
  role: 'user' | 'assistant';
  text: string;
  image_urls?: string[];
  usage?: AgentUsage;
  created_at: string;
}

/** Told of every turn that ran, with the tokens it used (`/metrics`). */
export interface TurnObserver {
  turnEnded(outcome: 'completed' | 'failed', usage: AgentUsage | undefined): void;
}

/**
 * Ends the turn in its project (`finish_turn`, which grants the next turn): `completed` and `failed` commit
 * `turn.completed` / `turn.failed` with `data`, after the turn's noted events (`before`), and keep `messages` in
 * the thread; `withdrawn` takes a turn that never ran out of the queue without a trace.
 */
export function finishTurn(
  commands: Pick<ProjectCommands, 'finish_turn'>,
  projectId: string,
  turnId: string,
  outcome: 'completed' | 'failed' | 'withdrawn',
  data: Record<string, unknown>,
  before: TurnEventDraft[],
  messages: TurnMessage[],
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

/** What ending a failed turn reads and tells. */
export interface TurnFailureDeps {
  projects: Pick<ProjectsRepository, 'get'>;
  observe?: TurnObserver;
}

/**
 * Ends a failed turn (`turn.failed`, the instruction kept in the thread) and answers the error the client gets:
 * the error a tool ended the turn with (a media price that does not fit: 402), the agent's failure as 503 or
 * 502, an `AppError` as it is, anything else as 500 (logged). A turn that lost its project records nothing: 404 when the project is gone,
 * 503 when its lease lapsed.
 */
export async function failTurn(
  deps: TurnFailureDeps,
  session: TurnSession,
  error: unknown,
  userMessage: TurnMessage,
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
      finishTurn(
        session.commands,
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
