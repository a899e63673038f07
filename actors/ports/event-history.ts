/** One project event (docs/editor.md, Events): what `agent_events` and the events WebSocket carry. */
export interface ProjectEvent {
  type: string;
  /** Per project, strictly increasing without gaps, given out by the project's actor. */
  seq: number;
  /** ISO 8601 time the event was recorded. */
  ts: string;
  project_id: string;
  /** null: project-wide. */
  video_id: string | null;
  /** null: a direct edit or an export. */
  turn_id: string | null;
  data: Record<string, unknown>;
}

/** What `since` answers. */
export interface EventsSince {
  /** Kept events with `seq` greater than asked, ascending. */
  events: ProjectEvent[];
  /**
   * False when some events after the asked `seq` are no longer kept (the client must re-read the state:
   * `sync.reset`).
   */
  complete: boolean;
}

/**
 * The bounded history of project events (port), for replay (`since=`) and for reading a turn's events. Kept:
 * at least the last hour and at least the last 1 000 events of each project. The project actor is the only
 * writer of a project's history, and it gives out seqs after the project's stored `seq`: so appending from seq
 * n replaces whatever is stored from n on (a redelivered command, or an attempt whose commit failed).
 */
export interface EventHistory {
  append(projectId: string, events: ProjectEvent[], now: Date): Promise<void>;
  since(projectId: string, afterSeq: number): Promise<EventsSince>;
  deleteProject(projectId: string): Promise<void>;
}
