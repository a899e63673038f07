import Type, { type Static } from 'typebox';
import type { ProjectRecord, RunningTurn, TurnTicket } from './ports/projects-repository.ts';
import type { MessageRecord } from './ports/thread-repository.ts';
import type { ProjectEvent } from './ports/event-history.ts';
import { BeforeEvents } from './project-edits.ts';
import {
  commit,
  loadProject,
  replayed,
  type Committed,
  type EventDraft,
  type ProjectContext,
} from './project-commit.ts';

// The turn queue of one project (docs/editor.md, The turn protocol; docs/architecture.md, Agent turns): agent
// turns run one at a time, first come first served. The queue is state, never a wait: `request_turn` answers
// granted or queued at once, the runner polls `turn_status` while queued, renews its lease while running and
// ends with `finish_turn`, which grants the next. A turn whose node stops renewing is failed once its lease
// ends, by whichever command or sweep comes first (`turn_status`, `request_turn`, `expire_turn`), and the
// next turn is granted.
//
// If the runner's process dies: between `request_turn` and `begin_turn`, the granted turn's lease lapses and
// it is dropped (it emitted nothing, so it leaves without an event, and its charge is owed back:
// `refunds_due`); between `begin_turn` and `finish_turn`, it is failed (`turn.failed`, status 500; its charge
// stays); a queued turn whose node died is granted in its turn and dropped likewise. Every step is one commit
// (project-commit.ts), so a crash inside a handler changes nothing.

const opId = Type.String({ minLength: 1, maxLength: 200 });
const turnId = Type.String({ minLength: 1, maxLength: 100 });
const message = Type.Object({
  id: Type.String(),
  video_id: Type.String(),
  role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
  text: Type.String(),
  image_urls: Type.Optional(Type.Array(Type.String())),
  usage: Type.Optional(
    Type.Object({
      prompt_tokens: Type.Integer({ minimum: 0 }),
      completion_tokens: Type.Integer({ minimum: 0 }),
      total_tokens: Type.Integer({ minimum: 0 }),
      completions: Type.Integer({ minimum: 0 }),
    }),
  ),
  created_at: Type.String(),
});

export const TurnCommands = {
  request_turn: Type.Object({
    op_id: opId,
    turn_id: turnId,
    video_id: Type.String(),
    key_id: Type.String(),
    node_id: Type.String(),
    seen_at: Type.Optional(Type.Number()),
  }),
  turn_status: Type.Object({ turn_id: turnId, seen_at: Type.Optional(Type.Number()) }),
  begin_turn: Type.Object({
    op_id: opId,
    turn_id: turnId,
    instruction: Type.String(),
    image_urls: Type.Array(Type.String()),
  }),
  renew_turn: Type.Object({ turn_id: turnId }),
  /** Events of the running turn that change nothing (assistant text, tool calls, media progress). */
  turn_events: Type.Object({
    op_id: opId,
    turn_id: turnId,
    events: Type.Array(
      Type.Object({
        type: Type.String(),
        video_id: Type.Union([Type.String(), Type.Null()]),
        data: Type.Record(Type.String(), Type.Unknown()),
      }),
    ),
  }),
  finish_turn: Type.Object({
    op_id: opId,
    turn_id: turnId,
    outcome: Type.Union([Type.Literal('completed'), Type.Literal('failed'), Type.Literal('withdrawn')]),
    before_events: BeforeEvents,
    data: Type.Record(Type.String(), Type.Unknown()),
    messages: Type.Array(message),
  }),
  /** `seen_at`: when the sweep saw the lease lapsed (see `expireIfDue`). */
  expire_turn: Type.Object({ seen_at: Type.Optional(Type.Number()) }),
  /** The lease sweep refunded these dropped turns' charges. */
  refunds_settled: Type.Object({ turn_ids: Type.Array(Type.String()) }),
};

type Msg<Name extends keyof typeof TurnCommands> = Static<(typeof TurnCommands)[Name]>;

/** Where a turn stands: running (`granted`), waiting (`queued`, 1-based place), or over (`gone`). */
export type TurnStatus =
  { status: 'granted' } | { status: 'queued'; position: number } | { status: 'gone' } | { status: 'full' };

function statusOf(project: ProjectRecord, id: string): TurnStatus {
  if (project.turn?.turn_id === id) return { status: 'granted' };
  const index = project.queue.findIndex((ticket) => ticket.turn_id === id);
  return index >= 0 ? { status: 'queued', position: index + 1 } : { status: 'gone' };
}

/** The project with its first waiting turn granted, when none runs. */
function grantNext(project: ProjectRecord, now: Date, leaseMs: number): ProjectRecord {
  if (project.turn || project.queue.length === 0) return project;
  const [first, ...rest] = project.queue;
  const turn: RunningTurn = {
    ...first!,
    granted_at: now,
    lease_until: new Date(now.getTime() + leaseMs),
    started: false,
  };
  return { ...project, turn, queue: rest };
}

const turnFailed = (turn: TurnTicket, error: string, status: number): EventDraft => ({
  type: 'turn.failed',
  video_id: turn.video_id,
  data: { error, status },
});

/**
 * Fails the running turn when its lease has ended and grants the next; answers the project as it is now.
 * (The failure is a turn event: committed under the lapsed turn's id.)
 */
async function expireIfDue(
  context: ProjectContext,
  project: ProjectRecord,
  seenAt: number | undefined,
): Promise<ProjectRecord> {
  const now = new Date(context.clock.now());
  const turn = project.turn;
  // Judged at the time the command was sent: a partition stalled behind a dead node's message delivers it
  // late, together with the renewals sent before it (which it follows in order). A turn renewed on time is
  // never failed for the stall.
  const judgedAt = Math.min(seenAt ?? now.getTime(), now.getTime());
  if (!turn || turn.lease_until.getTime() > judgedAt) return project;
  context.logger.warn({ turn_id: turn.turn_id, node_id: turn.node_id }, 'turn lease lapsed; failing it');
  let next = grantNext({ ...project, turn: null }, now, context.ports.turnLeaseMs);
  // A turn that never began was charged (or is about to be) for nothing: its charge is owed back.
  if (!turn.started) next = owe(next, [turn.turn_id]);
  await commitAs(context, project, turn.turn_id, {
    next,
    events: turn.started
      ? [
          turnFailed(
            turn,
            'The turn was interrupted: its lease lapsed (its server stopped, or could not reach the cluster)',
            500,
          ),
        ]
      : [],
  });
  return loadProject(context);
}

/** The project owing back the charges of `turnIds` (refunded by the lease sweep: `refunds_settled`). */
function owe(project: ProjectRecord, turnIds: string[]): ProjectRecord {
  return { ...project, refunds_due: [...new Set([...(project.refunds_due ?? []), ...turnIds])] };
}

/** A turn's commit: its events carry its id and change no revision. */
function commitAs(
  context: ProjectContext,
  project: ProjectRecord,
  turnId: string,
  change: {
    next: ProjectRecord;
    events: EventDraft[];
    before?: readonly EventDraft[] | undefined;
    messages?: MessageRecord[];
  },
) {
  return commit(context, project, { ...change, result: {}, turnId, bumpsRevision: false });
}

export const turnHandlers = {
  request_turn: async (context: ProjectContext, command: Msg<'request_turn'>): Promise<TurnStatus> => {
    let project = await loadProject(context);
    const known = statusOf(project, command.turn_id);
    if (known.status !== 'gone' || replayed(project, context.opId)) return known;
    project = await expireIfDue(context, project, command.seen_at);
    // Full only when the turn would have to wait: TURN_QUEUE_MAX=0 still runs a turn on an idle project.
    const mustWait = project.turn !== null || project.queue.length > 0;
    if (mustWait && project.queue.length >= context.ports.turnQueueMax) return { status: 'full' };
    const now = new Date(context.clock.now());
    const ticket: TurnTicket = {
      turn_id: command.turn_id,
      video_id: command.video_id,
      key_id: command.key_id,
      node_id: command.node_id,
      requested_at: now,
    };
    const next = grantNext({ ...project, queue: [...project.queue, ticket] }, now, context.ports.turnLeaseMs);
    await commitAs(context, project, command.turn_id, { next, events: [] });
    return statusOf(next, command.turn_id);
  },

  turn_status: async (context: ProjectContext, command: Msg<'turn_status'>): Promise<TurnStatus> => {
    const project = await expireIfDue(context, await loadProject(context), command.seen_at);
    return statusOf(project, command.turn_id);
  },

  begin_turn: async (context: ProjectContext, command: Msg<'begin_turn'>) => {
    const project = await loadProject(context);
    const done = replayed<Committed<object>>(project, context.opId);
    if (done) return done;
    const turn = project.turn;
    if (turn?.turn_id !== command.turn_id) return { lost: true as const, events: [] };
    const now = new Date(context.clock.now());
    const lease_until = new Date(now.getTime() + context.ports.turnLeaseMs);
    return commitAs(context, project, turn.turn_id, {
      next: { ...project, turn: { ...turn, started: true, lease_until } },
      events: [
        {
          type: 'turn.started',
          video_id: turn.video_id,
          data: { instruction: command.instruction, image_urls: command.image_urls },
        },
      ],
    });
  },

  renew_turn: async (context: ProjectContext, command: Msg<'renew_turn'>) => {
    const project = await loadProject(context);
    const turn = project.turn;
    if (turn?.turn_id !== command.turn_id) return { ok: false };
    const lease_until = new Date(context.clock.now() + context.ports.turnLeaseMs);
    await commitAs(context, project, turn.turn_id, {
      next: { ...project, turn: { ...turn, lease_until } },
      events: [],
    });
    return { ok: true };
  },

  turn_events: async (context: ProjectContext, command: Msg<'turn_events'>) => {
    const project = await loadProject(context);
    const done = replayed<Committed<object>>(project, context.opId);
    if (done) return done;
    if (project.turn?.turn_id !== command.turn_id) return { lost: true as const, events: [] };
    return commitAs(context, project, command.turn_id, { next: project, events: command.events });
  },

  finish_turn: async (context: ProjectContext, command: Msg<'finish_turn'>) => {
    const project = await loadProject(context);
    const done = replayed<Committed<object>>(project, context.opId);
    if (done) return done;
    const now = new Date(context.clock.now());
    const leaseMs = context.ports.turnLeaseMs;
    if (project.queue.some((ticket) => ticket.turn_id === command.turn_id)) {
      // Withdrawn before it ran (its charge was refused): it leaves the queue without a trace.
      const queue = project.queue.filter((ticket) => ticket.turn_id !== command.turn_id);
      return commitAs(context, project, command.turn_id, { next: { ...project, queue }, events: [] });
    }
    const turn = project.turn;
    if (turn?.turn_id !== command.turn_id) return { lost: true as const, events: [] };
    const events: EventDraft[] = [];
    if (command.outcome === 'completed') {
      events.push({ type: 'turn.completed', video_id: turn.video_id, data: command.data });
    } else if (command.outcome === 'failed') {
      events.push({ type: 'turn.failed', video_id: turn.video_id, data: command.data });
    }
    const messages: MessageRecord[] = command.messages.map((one) => ({
      ...one,
      project_id: project.id,
      turn_id: turn.turn_id,
      created_at: new Date(one.created_at),
    }));
    return commitAs(context, project, turn.turn_id, {
      next: grantNext({ ...project, turn: null }, now, leaseMs),
      before: command.before_events,
      events,
      messages,
    });
  },

  refunds_settled: async (context: ProjectContext, command: Msg<'refunds_settled'>) => {
    const project = await loadProject(context);
    const left = (project.refunds_due ?? []).filter((id) => !command.turn_ids.includes(id));
    if (left.length === (project.refunds_due ?? []).length) return { settled: 0 };
    const { refunds_due: _settled, ...rest } = project;
    const next: ProjectRecord = left.length > 0 ? { ...rest, refunds_due: left } : rest;
    await commit(context, project, { next, events: [], result: {}, turnId: null, bumpsRevision: false });
    return { settled: (project.refunds_due ?? []).length - left.length };
  },

  expire_turn: async (context: ProjectContext, command: Msg<'expire_turn'>) => {
    const project = await loadProject(context);
    const after = await expireIfDue(context, project, command.seen_at);
    return { expired: after.version !== project.version };
  },

  /** Deletes the project; a running turn fails first (docs/editor.md, Routes), so its watchers hear why. */
  delete_project: async (context: ProjectContext) => {
    const project = await context.ports.projects.get(context.key);
    if (!project) return { deleted: true as const, dropped: [], assets: [] };
    const { turn } = project;
    let lastSeq = project.seq;
    if (turn) {
      const failed = await commitAs(context, project, turn.turn_id, {
        next: { ...project, turn: null, queue: [] },
        events: [turnFailed(turn, 'The project was deleted', 404)],
      });
      lastSeq += failed.events.length;
    }
    // Turns that never began were charged for nothing: the caller refunds them (the project is gone).
    const dropped = [
      ...(turn && !turn.started ? [turn.turn_id] : []),
      ...project.queue.map((ticket) => ticket.turn_id),
      ...(project.refunds_due ?? []),
    ];
    const { ports } = context;
    await ports.projects.delete(project.id);
    const assets = await ports.assets.deleteByProject(project.id);
    await Promise.all([ports.thread.deleteByProject(project.id), ports.history.deleteProject(project.id)]);
    // Told to every node's sockets (they close with 1000), not kept: the history is gone with the project.
    context.emit({
      type: 'project.deleted',
      seq: lastSeq + 1,
      ts: new Date(context.clock.now()).toISOString(),
      project_id: project.id,
      video_id: null,
      turn_id: null,
      data: { project_id: project.id },
    } satisfies ProjectEvent);
    return {
      deleted: true as const,
      dropped,
      assets: assets.map((asset) => ({ id: asset.id, source: asset.source, media_id: asset.media_id })),
    };
  },
};

export const DeleteProjectCommand = Type.Object({ op_id: opId });
