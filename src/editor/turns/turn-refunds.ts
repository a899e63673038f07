import type { UserCredits } from '../../../actors/index.ts';
import { TURN_CREDITS } from '../../../schemas/editor-terms.ts';

/** The op id of a turn's 5-credit charge, from the turn id (docs/editor.md, The turn protocol). */
export const turnChargeOpId = (turnId: string) => `turn:${turnId}`;

/**
 * Gives back the charge of a turn that was dropped before it began (its project was deleted while it waited,
 * its node died while it was queued): a turn that never ran is not a turn, and "never refunded" (docs/editor.md,
 * Agent turns) is about turns that began. The refund `reverses` the charge, so it applies at most once, whoever sends it and
 * however often, and changes nothing when the charge never happened.
 */
export async function refundDroppedTurn(
  credits: Pick<UserCredits, 'refund'>,
  userId: string,
  turnId: string,
): Promise<void> {
  await credits.refund(userId, {
    op_id: `${turnChargeOpId(turnId)}:refund`,
    amount: TURN_CREDITS,
    reason: 'agent_turn_dropped',
    reverses: turnChargeOpId(turnId),
  });
}
