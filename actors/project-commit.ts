import { AppError, ProjectNotFound, RetryableError } from '../src/platform/core/index.ts';
import type { AssetRecord, AssetsRepository } from './ports/assets-repository.ts';
import type { EventHistory, ProjectEvent } from './ports/event-history.ts';
import type { AppliedOp, ProjectRecord, ProjectsRepository } from './ports/projects-repository.ts';
import type { MessageRecord, ThreadRepository } from './ports/thread-repository.ts';
import type { HandlerContext } from './runtime/define.ts';

/** What the project actor's handlers get: the timeline, the turn queue, the events (docs/editor.md). */
export interface ProjectActorPorts {
  projects: ProjectsRepository;
  assets: AssetsRepository;
  thread: ThreadRepository;
  history: EventHistory;
  /** The public URL of a stored file (asset views in events). */
  mediaUrl(mediaId: string): string;
  /** `TURN_LEASE_MS`: a granted turn whose node stops renewing is failed after this long. */
  turnLeaseMs: number;
  /** `TURN_QUEUE_MAX`: turns waiting per project before `request_turn` answers 429. */
  turnQueueMax: number;
  /** `TIMELINE_MAX_SEC`: no change may make a video's timeline longer (docs/editor.md#bounds). */
  timelineMaxSec: number;
}

export type ProjectContext = HandlerContext<ProjectActorPorts>;

/** An event before the actor numbers it. */
export interface EventDraft {
  type: string;
  video_id: string | null;
  data: Record<string, unknown>;
}

/** One change of a project, as a handler computes it from the current document. */
export interface Change<Result> {
  /** The project after the change (a copy; `version`, `seq`, `revision` and `applied_ops` are set here). */
  next: ProjectRecord;
  events: EventDraft[];
  result: Result;
  /** The turn the change belongs to (null: a direct edit). */
  turnId: string | null;
  /**
   * Events of the turn that change nothing (`tool.started`, `assistant.delta`, ...), committed just before the
   * change's own: a turn sends them with its next command instead of one command each. Ignored for a direct
   * edit.
   */
  before?: readonly EventDraft[];
  /** Whether the change bumps `revision` (the timeline or the project changed); default true. */
  bumpsRevision?: boolean;
  /** Stored before the project's commit point (idempotent by id). */
  assets?: AssetRecord[];
  messages?: MessageRecord[];
}

/** What a committed change answers: the handler's result plus its events, numbered. */
export type Committed<Result> = Result & { events: ProjectEvent[]; revision: number };

/** How many applied commands a project remembers for redelivery (a redelivery comes within seconds). */
const APPLIED_OPS_KEPT = 32;

/** A recorded answer without its events. */
function withoutEvents(op: AppliedOp): AppliedOp {
  const result = op.result as { events?: unknown[] } | null;
  return result?.events?.length ? { ...op, result: { ...result, events: [] } } : op;
}

/** The project, or 404 (`ProjectNotFound`). */
export async function loadProject(context: ProjectContext): Promise<ProjectRecord> {
  const project = await context.ports.projects.get(context.key);
  if (!project) throw new ProjectNotFound();
  return project;
}

/** The answer recorded for `opId` when this command was applied before (a redelivery). */
export function replayed<Result>(project: ProjectRecord, opId: string | undefined): Result | undefined {
  if (opId === undefined) return undefined;
  return project.applied_ops.find((op) => op.op_id === opId)?.result as Result | undefined;
}

/** 409 `{ error, revision }` when `ifMatch` names another revision (docs/editor.md, Routes). */
export function checkRevision(project: ProjectRecord, ifMatch: number | undefined): void {
  if (ifMatch !== undefined && ifMatch !== project.revision) {
    throw new AppError('conflict', 'The project has changed since that revision', {
      revision: project.revision,
    });
  }
}

/**
 * Commits one change. Crash-safety, step by step: (1) assets and messages are stored idempotently by id;
 * (2) the events are stored under the seqs after the project's — a rerun stores the same seqs again,
 * replacing them; (3) the project document is replaced on its version: the commit point. A crash before (3)
 * leaves the project as it was (at most an unreferenced asset, and events past its `seq` that the next change
 * overwrites), and a redelivered command recomputes the change; after (3) the redelivery finds its op id in
 * `applied_ops` and answers the same. A lost race on the version (a slow duplicate) is a `RetryableError`:
 * the dispatcher reruns the handler on the new document.
 */
export async function commit<Result>(
  context: ProjectContext,
  current: ProjectRecord,
  change: Change<Result>,
): Promise<Committed<Result>> {
  const { ports } = context;
  const now = new Date(context.clock.now());
  const bump = change.bumpsRevision ?? true;
  const revision = current.revision + (bump ? 1 : 0);
  const before = change.turnId === null ? [] : (change.before ?? []);
  const drafts = [
    ...before.map((draft) => ({ draft, data: draft.data })),
    ...change.events.map((draft) => ({ draft, data: bump ? { ...draft.data, revision } : draft.data })),
  ];
  const events: ProjectEvent[] = drafts.map(({ draft, data }, index) => ({
    type: draft.type,
    seq: current.seq + index + 1,
    ts: now.toISOString(),
    project_id: current.id,
    video_id: draft.video_id,
    turn_id: change.turnId,
    data,
  }));
  const committed = { ...change.result, events, revision } as Committed<Result>;
  const next: ProjectRecord = {
    ...change.next,
    revision,
    seq: current.seq + events.length,
    version: current.version + 1,
    updated_at: bump ? now : current.updated_at,
    // A redelivered command answers as the first time. Only the newest answer keeps its events (a turn builds
    // its `agent_events` from its commands' answers), older ones drop theirs, so the document holds one
    // command's events at most: a redelivery is always of the project's newest command, since a partition's
    // messages are handled one at a time and an unacknowledged one comes again before the next. An older
    // command repeated by its sender answers `events: []` (published the first time, and in the history).
    applied_ops: context.opId
      ? [...current.applied_ops.map(withoutEvents), { op_id: context.opId, result: committed }].slice(
          -APPLIED_OPS_KEPT,
        )
      : current.applied_ops,
  };
  for (const asset of change.assets ?? []) await ports.assets.put(asset);
  if (change.messages?.length) await ports.thread.append(change.messages);
  if (events.length > 0) await ports.history.append(current.id, events, now);
  if (!(await ports.projects.replace(next, current.version))) {
    throw new RetryableError('The project was changed concurrently');
  }
  for (const event of events) context.emit(event);
  return committed;
}
