import type { ProjectAspectRatio, Track } from '../../schemas/editor-terms.ts';
import type { ClipEffects, TextFields } from '../../schemas/timeline-terms.ts';

// Editor projects (docs/editor.md, Objects). A project document holds everything its actor changes together —
// its videos, every video's clips, the event counter, the turn queue — so that each change is one atomic
// write of one document (the commit point), whatever the database.

/** One clip on a video's timeline (docs/editor.md, Clip); a text clip carries the text fields. */
export interface ClipRecord extends ClipEffects, Partial<TextFields> {
  id: string;
  video_id: string;
  track: Track;
  /** Position on its track, 0..n-1 without gaps. */
  idx: number;
  /** The library asset shown or played; null on the text track (a text clip has no asset). */
  asset_id: string | null;
  /** Audio and text tracks: where the clip starts on the timeline; null follows the previous clip of its track. */
  start_sec: number | null;
  trim_start_sec: number;
  /** Timeline seconds; null: a video or sound plays to its end (images and text clips store their default). */
  duration_sec: number | null;
  volume: number;
  created_at: Date;
}

export interface VideoRecord {
  id: string;
  name: string;
  aspect_ratio: ProjectAspectRatio;
  created_at: Date;
}

/** A turn that asked to run (docs/editor.md, The turn protocol), in arrival order. */
export interface TurnTicket {
  turn_id: string;
  video_id: string;
  /** The user actor op that charged it, and who asked (for logs and the failure answer). */
  key_id: string;
  node_id: string;
  requested_at: Date;
}

/** The turn holding the project: it runs while its node renews the lease. */
export interface RunningTurn extends TurnTicket {
  granted_at: Date;
  lease_until: Date;
  /** Set once the runner began it (`turn.started` was emitted). */
  started: boolean;
}

/** A command already applied, with its answer: a redelivered command answers the same, changing nothing. */
export interface AppliedOp {
  op_id: string;
  result: unknown;
}

export interface ProjectRecord {
  id: string;
  user_id: string;
  name: string;
  description: string;
  aspect_ratio: ProjectAspectRatio;
  context_md: string;
  videos: VideoRecord[];
  clips: ClipRecord[];
  /** Bumped by every change of the timeline or the project (`If-Match`: docs/editor.md, Routes). */
  revision: number;
  /** The last event `seq` given out (docs/editor.md, Events): never goes back. */
  seq: number;
  /** Bumped by every write: the condition of the next one (no two writers ever both succeed). */
  version: number;
  turn: RunningTurn | null;
  queue: TurnTicket[];
  /** The last few applied commands (bounded), for idempotent redelivery. */
  applied_ops: AppliedOp[];
  /**
   * Turns dropped before they began (their node died while they waited or right after their grant): their
   * 5-credit charge is owed back. The lease sweep refunds them (`reverses` their charge: once at most) and
   * then clears them. Absent on projects stored before this field existed.
   */
  refunds_due?: string[];
  created_at: Date;
  updated_at: Date;
}

/** A line of `GET /projects` (docs/editor.md, Routes). */
export type ProjectSummary = Pick<ProjectRecord, 'id' | 'name' | 'aspect_ratio' | 'updated_at'>;

/** Projects storage (port). The project actor is the only writer of an existing project. */
export interface ProjectsRepository {
  insert(project: ProjectRecord): Promise<void>;
  get(id: string): Promise<ProjectRecord | null>;
  /** The user's projects, most recently updated first. */
  listByUser(userId: string): Promise<ProjectSummary[]>;
  /** Writes `project` if the stored version is still `expectedVersion`; false when someone wrote first. */
  replace(project: ProjectRecord, expectedVersion: number): Promise<boolean>;
  delete(id: string): Promise<void>;
  /** Projects whose running turn's lease ended before `now` (the lease sweeper), at most `limit`. */
  expiredLeases(now: Date, limit: number): Promise<string[]>;
  /** Projects with turns whose charge is owed back (`refunds_due`), at most `limit`. */
  withRefundsDue(limit: number): Promise<Pick<ProjectRecord, 'id' | 'user_id' | 'refunds_due'>[]>;
}
