import type { ProjectCommands, ProjectEvent } from '../../../actors/index.ts';
import { AppError, ProjectNotFound, type KeyPrincipal } from '../../platform/index.ts';

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

/** What every command a turn sends may answer. */
interface TurnAnswer {
  events?: ProjectEvent[];
  lost?: true;
}

/**
 * Events that change nothing wait at most this long for the turn's next command before they are sent on their
 * own: live screens see them promptly, and a turn that edits sends them with its edits (one actor command).
 */
const NOTE_FLUSH_MS = 100;

/**
 * One running turn's link to its project actor. Every command it sends carries the turn id and an op id unique
 * within the turn (so a redelivery applies once), goes out one at a time in the order asked, and carries the
 * events noted since the last one (`before_events`). An answer saying the turn lost its project ends the turn
 * (`TurnLost`).
 */
export class TurnSession {
  /** The events committed by this session's commands (numbered by the actor). */
  readonly events: ProjectEvent[] = [];
  private step = 0;
  private lost = false;
  private noted: TurnEventDraft[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** The command that will send the noted events, while it waits for its turn (one at a time). */
  private queuedFlush: Promise<void> | undefined;
  private readonly aborter = new AbortController();
  /** Commands queued behind the one in flight. */
  private waiting = 0;
  /** The commands in flight, one at a time. */
  private chain: Promise<unknown> = Promise.resolve();

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

  /** Aborted once the turn is over for the runtime: the agent stops (an LLM request in flight is cancelled). */
  get signal(): AbortSignal {
    return this.aborter.signal;
  }

  markLost(): void {
    this.lost = true;
    this.aborter.abort(new TurnLost());
  }

  /** Ends the agent's work (the turn failed or is over). */
  abort(): void {
    this.aborter.abort(new TurnLost());
  }

  /** The next op id of this turn. */
  nextOpId(label: string): string {
    this.step += 1;
    return `${this.turnId}:${this.step}:${label}`;
  }

  /**
   * Sends one command after those before it, with the events noted so far (`send` puts them in its message as
   * `before_events`). A command that fails leaves them noted for the next.
   */
  run<T extends TurnAnswer>(send: (before: TurnEventDraft[]) => Promise<T>): Promise<T> {
    return this.enqueue(send, false);
  }

  private enqueue<T extends TurnAnswer>(
    send: (before: TurnEventDraft[]) => Promise<T>,
    onlyEvents: boolean,
  ): Promise<T> {
    this.waiting += 1;
    const result = this.chain.then(async () => {
      this.waiting -= 1;
      if (this.lost) throw new TurnLost();
      this.clearTimer();
      this.queuedFlush = undefined;
      // A flush with a command waiting behind it leaves the events to that command: one actor command fewer
      // (a streamed reply's last pieces go with `finish_turn`), and they reach clients no later.
      if (onlyEvents && (this.waiting > 0 || this.noted.length === 0)) return {} as T;
      const before = this.noted.splice(0);
      let answer: T;
      try {
        answer = await send(before);
      } catch (error) {
        this.noted.unshift(...before);
        if (error instanceof ProjectNotFound || (error instanceof AppError && error.details.turn_lost)) {
          this.markLost();
          throw new TurnLost();
        }
        throw error;
      }
      if (answer.lost) {
        this.markLost();
        throw new TurnLost();
      }
      this.events.push(...(answer.events ?? []));
      return answer;
    });
    this.chain = result.catch(() => undefined);
    return result;
  }

  /** Notes events that change nothing (`tool.*`, `media.progress`): they go with the next command. */
  note(...events: TurnEventDraft[]): void {
    this.noted.push(...events);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.flush().catch(() => undefined); // a lost turn is found by the next command
    }, NOTE_FLUSH_MS);
  }

  /**
   * A piece of the agent's reply (`assistant.delta`). Unlike other notes it goes out as soon as the command in
   * flight is done, so a live screen shows words within one command's time; pieces that arrive meanwhile are
   * merged into one event (the history keeps a reply in a few events, not one per token).
   */
  say(text: string): void {
    const last = this.noted.at(-1);
    if (last?.type === 'assistant.delta' && last.video_id === this.videoId) {
      last.data = { text: `${String(last.data.text)}${text}` };
    } else {
      this.noted.push({ type: 'assistant.delta', video_id: this.videoId, data: { text } });
    }
    this.flush().catch(() => undefined); // a lost turn is found by the next command
  }

  /** Sends the noted events now (before a long wait: `media.started` must not sit in a buffer). */
  flush(): Promise<void> {
    this.clearTimer();
    if (this.lost) return Promise.resolve();
    // One flush waits at a time: it takes every event noted until it runs.
    this.queuedFlush ??= this.enqueue(
      (before) =>
        this.commands.turn_events(this.projectId, {
          op_id: this.nextOpId('events'),
          turn_id: this.turnId,
          events: before,
        }),
      true,
    ).then(() => undefined);
    return this.queuedFlush;
  }

  /** Notes and sends at once. */
  async emit(...events: TurnEventDraft[]): Promise<void> {
    this.note(...events);
    await this.flush();
  }

  /** Stops the flush timer (the turn is over). */
  close(): void {
    this.clearTimer();
  }

  private clearTimer() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
