import type { Logger } from 'pino';
import type { ProjectCommands, UserCredits } from '../../../actors/index.ts';
import { AppError, type KeyPrincipal, type Clock } from '../../platform/index.ts';
import { TURN_CREDITS } from '../../../schemas/editor-terms.ts';
import { finishTurn } from './turn-finish.ts';
import { refundDroppedTurn, turnChargeOpId } from './turn-refunds.ts';
import type { TurnReference, TurnReferences } from './turn-references.ts';
import type { TurnWaiters } from './turn-waiters.ts';

/** What takes a turn to its grant. */
export interface TurnAdmissionDeps {
  commands: Pick<ProjectCommands, 'request_turn' | 'finish_turn'>;
  credits: Pick<UserCredits, 'charge_turn' | 'refund'>;
  nodeId: string;
  clock: Clock;
}

/** The turn asking to run, with what it holds so far (its fetched reference images). */
export interface TurnTicket {
  principal: KeyPrincipal;
  projectId: string;
  videoId: string;
  turnId: string;
  references: TurnReference[];
}

/**
 * Takes a turn from its request to its grant (docs/editor.md, The turn protocol): a place in the project's turn
 * queue (429 when full), the 5-credit charge (op id from the turn id; 402 withdraws the place), then the wait
 * for the grant. Whatever stops it on the way undoes what came before — the place withdrawn, the charge
 * refunded, the reference images' files deleted — and is thrown: nothing ran, nothing is kept.
 */
export async function admitTurn(
  deps: TurnAdmissionDeps,
  parts: { waiters: TurnWaiters; referenceImages: TurnReferences },
  ticket: TurnTicket,
  log: Logger,
): Promise<void> {
  const { commands } = deps;
  const { waiters, referenceImages } = parts;
  const { principal, projectId, turnId, references } = ticket;
  const withdraw = () =>
    finishTurn(commands, projectId, turnId, 'withdrawn', {}, [], []).catch(() => undefined);
  const place = await commands.request_turn(projectId, {
    op_id: `${turnId}:request`,
    turn_id: turnId,
    video_id: ticket.videoId,
    key_id: principal.keyId,
    node_id: deps.nodeId,
    seen_at: deps.clock.now(),
  });
  if (place.status === 'full') {
    await referenceImages.discard(references);
    throw new AppError(
      'rate_limited',
      'Too many turns are waiting for this project',
      {},
      { 'retry-after': '5' },
    );
  }
  const charge = await deps.credits.charge_turn(principal.userId, {
    op_id: turnChargeOpId(turnId),
    amount: TURN_CREDITS,
    reason: 'agent_turn',
    project_id: projectId,
  });
  if (!charge.ok) {
    await withdraw();
    await referenceImages.discard(references);
    throw insufficientCredits(charge.credits_required, charge.credits_remaining);
  }
  log.info({ queued: place.status === 'queued' }, 'turn charged');
  try {
    if (place.status !== 'granted') await waiters.waitForGrant(projectId, turnId);
  } catch (error) {
    // Dropped before it ran (its project was deleted, it lost its place): nothing ran, nothing is kept.
    await withdraw();
    await refundDroppedTurn(deps.credits, principal.userId, turnId);
    await referenceImages.discard(references);
    throw error;
  }
}

/** 402, with what was required and what is left. */
export function insufficientCredits(required: number, remaining: number) {
  return new AppError('insufficient_credits', 'Insufficient credits', {
    credits_required: required,
    credits_remaining: remaining,
  });
}
