// The steps of the chat's turns as they happen, folded from the project's events (docs/editor.md "Events"):
// tools started and finished, a media generation and its progress, failures, and the turn's cost. Pure, so the
// page can feed it every event it receives and the chat draws whatever it holds.
import type { ProjectEvent } from '../api-types.ts';

/** A tool the agent called. */
export interface ToolStep {
  kind: 'tool';
  callId: string;
  name: string;
  state: 'running' | 'ok' | 'failed';
  /** The tool's answer in short; its error when it failed. */
  summary: string | null;
}

/** A media generation of the turn (a job). */
export interface MediaStep {
  kind: 'media';
  jobId: string;
  /** `image`, `video` or `audio`, as the job says. */
  mediaKind: string;
  model: string | null;
  /** What the job was charged. */
  credits: number | null;
  state: 'running' | 'completed' | 'failed';
  /** How long the turn has waited for it. */
  elapsedMs: number | null;
  /** 0–1 when the event says how far along it is; the service sends only the time waited today. */
  fraction: number | null;
  error: string | null;
  refundedCredits: number | null;
}

export type TurnStep = ToolStep | MediaStep;

/** How a turn ended, once it has. */
export type TurnOutcome =
  | { kind: 'completed'; creditsCharged: number | null }
  | { kind: 'failed'; error: string; status: number | null };

/** One turn's steps, in the order they happened. */
export interface TurnLogEntry {
  turnId: string;
  steps: TurnStep[];
  outcome: TurnOutcome | null;
}

/** Every turn seen, by id, and their order (oldest first) to forget the oldest past `MAX_TURNS`. */
export interface TurnSteps {
  turns: Readonly<Record<string, TurnLogEntry>>;
  order: readonly string[];
}

/** A long session keeps this many turns' steps; older ones show as their messages only. */
export const MAX_TURNS = 100;

export const NO_TURN_STEPS: TurnSteps = { turns: {}, order: [] };

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const count = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;

/** The turn's entry with `change` applied to it (a new entry for a turn not seen yet). */
function withTurn(
  state: TurnSteps,
  turnId: string,
  change: (entry: TurnLogEntry) => TurnLogEntry,
): TurnSteps {
  const old = state.turns[turnId];
  const entry = change(old ?? { turnId, steps: [], outcome: null });
  const turns: Record<string, TurnLogEntry> = { ...state.turns, [turnId]: entry };
  let order = old ? state.order : [...state.order, turnId];
  while (order.length > MAX_TURNS) {
    const [oldest, ...rest] = order;
    if (oldest !== undefined) delete turns[oldest];
    order = rest;
  }
  return { turns, order };
}

/** The entry with the step that `matches` changed, or a new step when there is none (events may be missed). */
function upsertStep<S extends TurnStep>(
  entry: TurnLogEntry,
  matches: (step: TurnStep) => step is S,
  change: (step: S | undefined) => S,
): TurnLogEntry {
  const at = entry.steps.findIndex(matches);
  const steps = [...entry.steps];
  if (at < 0) steps.push(change(undefined));
  else steps[at] = change(steps[at] as S);
  return { ...entry, steps };
}

const isTool =
  (callId: string) =>
  (step: TurnStep): step is ToolStep =>
    step.kind === 'tool' && step.callId === callId;
const isMedia =
  (jobId: string) =>
  (step: TurnStep): step is MediaStep =>
    step.kind === 'media' && step.jobId === jobId;

function mediaStep(jobId: string): MediaStep {
  return {
    kind: 'media',
    jobId,
    mediaKind: 'media',
    model: null,
    credits: null,
    state: 'running',
    elapsedMs: null,
    fraction: null,
    error: null,
    refundedCredits: null,
  };
}

/**
 * The steps after one more event. Events without a turn (direct edits, exports, media delivered after their
 * turn) and types it does not know leave the state as it was — the same object, so nothing redraws.
 */
export function noteTurnEvent(state: TurnSteps, event: ProjectEvent): TurnSteps {
  const turnId = event.turn_id;
  if (!turnId) return state;
  const data = event.data;
  switch (event.type) {
    case 'turn.started':
      return withTurn(state, turnId, (entry) => entry);
    case 'tool.started':
    case 'tool.finished': {
      const callId = text(data.call_id);
      if (!callId) return state;
      const finished = event.type === 'tool.finished';
      return withTurn(state, turnId, (entry) =>
        upsertStep(entry, isTool(callId), (old) => ({
          kind: 'tool',
          callId,
          name: text(data.name) ?? old?.name ?? 'tool',
          state: finished ? (data.ok === false ? 'failed' : 'ok') : (old?.state ?? 'running'),
          summary: finished ? text(data.summary) : (old?.summary ?? null),
        })),
      );
    }
    case 'media.started':
    case 'media.progress':
    case 'media.completed':
    case 'media.failed': {
      const jobId = text(data.job_id);
      if (!jobId) return state;
      return withTurn(state, turnId, (entry) =>
        upsertStep(entry, isMedia(jobId), (old) => {
          const step = old ?? mediaStep(jobId);
          if (event.type === 'media.started')
            return {
              ...step,
              mediaKind: text(data.kind) ?? step.mediaKind,
              model: text(data.model) ?? step.model,
              credits: count(data.credits) ?? step.credits,
            };
          if (event.type === 'media.progress') {
            const fraction = count(data.fraction);
            return {
              ...step,
              elapsedMs: count(data.elapsed_ms) ?? step.elapsedMs,
              // Progress only goes forward, as the export's does on the page.
              fraction:
                fraction === null ? step.fraction : Math.max(step.fraction ?? 0, Math.min(1, fraction)),
            };
          }
          if (event.type === 'media.completed') return { ...step, state: 'completed', fraction: 1 };
          return {
            ...step,
            state: 'failed',
            error: text(data.error) ?? 'failed',
            refundedCredits: count(data.refunded_credits),
          };
        }),
      );
    }
    case 'turn.completed':
      return withTurn(state, turnId, (entry) => ({
        ...entry,
        outcome: { kind: 'completed', creditsCharged: count(data.credits_charged) },
      }));
    case 'turn.failed':
      return withTurn(state, turnId, (entry) => ({
        ...entry,
        outcome: { kind: 'failed', error: text(data.error) ?? 'The turn failed', status: count(data.status) },
      }));
    default:
      return state;
  }
}
