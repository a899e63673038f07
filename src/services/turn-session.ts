import type { ProjectCommands } from '../../actors/index.ts';
import { AppError } from '../domain/errors.ts';
import type { KeyPrincipal } from '../domain/principal.ts';
import type { ProjectEvent } from '../ports/event-history.ts';

/** Raised inside a turn once it no longer holds its project (lease lapsed, project deleted): it stops. */
export class TurnLost extends Error {
  constructor() {
    super('The turn no longer holds its project');
    this.name = 'TurnLost';
  }
}

/** Raised by a tool when the whole turn must end with this error (a media price that does not fit: 402). */
export class TurnAborted extends Error {
  constructor(readonly error: AppError) {
    super(error.message);
    this.name = 'TurnAborted';
  }
}

/** An event of the turn before the actor numbers it. */
export interface TurnEventDraft {
  type: string;
  video_id: string | null;
  data: Record<string, unknown>;
}

/**
 * One running turn's link to its project actor: every command it sends carries the turn id and an op id
 * unique within the turn (so a redelivery applies once), its answers' events are collected for instruct's
 * `agent_events`, and an answer saying the turn lost the project ends the turn (`TurnLost`).
 */
export class TurnSession {
  readonly events: ProjectEvent[] = [];
  private step = 0;
  private lost = false;
  /** Events said while nothing awaited them (`say`), sent in order before the next command. */
  private pending: Promise<void> = Promise.resolve();

  constructor(
    readonly commands: ProjectCommands,
    readonly principal: KeyPrincipal,
    readonly projectId: string,
    readonly videoId: string,
    readonly turnId: string,
  ) {}

  get isLost(): boolean {
    return this.lost;
  }

  markLost(): void {
    this.lost = true;
  }

  /** The next op id of this turn. */
  nextOpId(label: string): string {
    this.step += 1;
    return `${this.turnId}:${this.step}:${label}`;
  }

  /** Collects a command's events; a `lost` answer or a `turn_lost` conflict ends the turn. */
  async run<T extends { events?: ProjectEvent[]; lost?: true }>(send: () => Promise<T>): Promise<T> {
    await this.pending;
    if (this.lost) throw new TurnLost();
    let answer: T;
    try {
      answer = await send();
    } catch (error) {
      if (error instanceof AppError && (error.details.turn_lost || error.code === 'not_found')) {
        if (error.details.turn_lost || error.message === 'Project not found') {
          this.lost = true;
          throw new TurnLost();
        }
      }
      throw error;
    }
    if (answer.lost) {
      this.lost = true;
      throw new TurnLost();
    }
    this.events.push(...(answer.events ?? []));
    return answer;
  }

  /** Records events of the turn that change nothing (`assistant.delta`, `tool.*`, `media.*`). */
  emit(...events: TurnEventDraft[]): Promise<void> {
    return this.run(() =>
      this.commands.turn_events(this.projectId, {
        op_id: this.nextOpId('events'),
        turn_id: this.turnId,
        events,
      }),
    ).then(() => undefined);
  }

  /** Queues events without waiting (the agent's `say` is synchronous); they go before the next command. */
  emitLater(...events: TurnEventDraft[]): void {
    const previous = this.pending;
    this.pending = previous.then(async () => {
      if (this.lost) return;
      const answer = await this.commands
        .turn_events(this.projectId, { op_id: this.nextOpId('events'), turn_id: this.turnId, events })
        .catch(() => ({ lost: true as const, events: [] }));
      if ('lost' in answer && answer.lost) this.lost = true;
      else this.events.push(...((answer as { events: ProjectEvent[] }).events ?? []));
    });
  }

  /** Waits for queued events. */
  flush(): Promise<void> {
    return this.pending;
  }
}
