import { useCallback, useReducer } from 'preact/hooks';
import type { ComponentProps } from 'preact';
import type { ProjectEvent } from '../api-types.ts';
import { Chat } from '../editor/chat.tsx';
import { formatNumber } from '../format.ts';
import {
  NO_TURN_STEPS,
  noteTurnEvent,
  type MediaStep,
  type TurnLogEntry,
  type TurnSteps,
} from './turn-steps.ts';
import './library.css';

/** The turns' steps, fed by the page with every event it receives (`note` keeps its identity). */
export function useTurnSteps(): { steps: TurnSteps; note: (event: ProjectEvent) => void } {
  const [steps, note] = useReducer(noteTurnEvent, NO_TURN_STEPS);
  return { steps, note };
}

const credits = (n: number): string => (n === 1 ? '1 credit' : `${formatNumber(n)} credits`);

function MediaLine(props: { step: MediaStep }) {
  const { step } = props;
  const what = `Generating ${step.mediaKind}` + (step.model ? ` with ${step.model}` : '');
  const charged = step.credits === null ? '' : ` (${credits(step.credits)})`;
  if (step.state === 'completed') return <li>{`${what}${charged}: done`}</li>;
  if (step.state === 'failed')
    return (
      <li class="step-failed">
        {`${what} failed: ${step.error ?? 'failed'}` +
          (step.refundedCredits ? ` (${credits(step.refundedCredits)} refunded)` : '')}
      </li>
    );
  const waited = step.elapsedMs === null ? '' : `, ${Math.round(step.elapsedMs / 1000)} s`;
  return (
    <li>
      {`${what}${charged}…${waited}`}
      {/* Indeterminate until an event says how far along it is. */}
      <progress
        aria-label={`${what}: progress`}
        max={1}
        value={step.fraction === null ? undefined : step.fraction}
      />
    </li>
  );
}

/** One turn's steps as they happen, and once it is over, what it cost or why it failed. */
export function TurnLog(props: { entry: TurnLogEntry }) {
  const { steps, outcome } = props.entry;
  if (steps.length === 0 && !outcome) return null;
  return (
    <ul class="turn-steps" aria-label="Steps of this turn">
      {steps.map((step) =>
        step.kind === 'media' ? (
          <MediaLine key={step.jobId} step={step} />
        ) : (
          <li key={step.callId} class={step.state === 'failed' ? 'step-failed' : undefined}>
            {step.state === 'running'
              ? `Tool ${step.name}: running…`
              : step.state === 'ok'
                ? `Tool ${step.name}: done`
                : `Tool ${step.name} failed: ${step.summary ?? 'error'}`}
          </li>
        ),
      )}
      {outcome?.kind === 'completed' && outcome.creditsCharged !== null && (
        <li class="step-cost">{`This turn cost ${credits(outcome.creditsCharged)}.`}</li>
      )}
      {outcome?.kind === 'failed' && (
        <li class="step-failed">
          {`The turn failed: ${outcome.error}` + (outcome.status === null ? '' : ` (${outcome.status})`)}
        </li>
      )}
    </ul>
  );
}

/** The chat as `Chat` shows it, with each turn's steps between its instruction and its reply. */
export function StudioChat(props: ComponentProps<typeof Chat> & { steps: TurnSteps }) {
  const { steps, ...chat } = props;
  // A new function only when the steps change: the thread scrolls to its end then.
  const turnDetails = useCallback(
    (turnId: string) => {
      const entry = steps.turns[turnId];
      return entry ? <TurnLog entry={entry} /> : null;
    },
    [steps],
  );
  return <Chat {...chat} turnDetails={turnDetails} />;
}
