import { AppError } from '../src/domain/errors.ts';
import type { CreditChange, CreditLedger, LedgerEntry } from '../src/ports/credit-ledger.ts';
import { defineActor, type HandlerContext } from './runtime/define.ts';
import type { ActorSystem } from './runtime/system.ts';

/** The user actor owns one user's credit balance: every change is one of these commands, once per `op_id`. */
export const USER_ACTOR = 'user';

export interface UserActorPorts {
  ledger: CreditLedger;
}

/** A ledger entry as the actor answers it (JSON: dates are ISO strings). */
export interface LedgerEntryView extends Omit<LedgerEntry, 'created_at'> {
  created_at: string;
}

/** A change that was made (or had been made before with the same `op_id`: `replayed`). */
export type CreditApplied = {
  ok: true;
  credits_remaining: number;
  entry: LedgerEntryView;
  replayed: boolean;
};

/** The answer to a debit, grant or turn charge: `ok: false` (the balance was too low) changed nothing. */
export type ChargeResult = CreditApplied | { ok: false; credits_required: number; credits_remaining: number };

/** The answer to a refund: `ok: false` when the debit it `reverses` is not in the ledger (nothing changed). */
export type RefundResult = CreditApplied | { ok: false; nothing_to_reverse: true; credits_remaining: number };

/** The answer to any credit command. */
export type CreditResult = ChargeResult | RefundResult;

interface CreditCommand {
  type: string;
  op_id: string;
  amount: number;
  reason?: string;
  job_id?: string;
  project_id?: string;
  /** Refunds: the op_id of the debit given back; nothing happens until that debit is in the ledger. */
  reverses?: string;
}

/** Every command's fields are checked here, because messages arrive from any node as JSON. */
function validated(message: CreditCommand, allowNegative: boolean): CreditCommand {
  if (typeof message.op_id !== 'string' || message.op_id.length === 0 || message.op_id.length > 200) {
    throw new AppError('bad_request', 'op_id must be a non-empty string of at most 200 characters');
  }
  const { amount } = message;
  if (!Number.isSafeInteger(amount) || amount === 0 || (!allowNegative && amount < 0)) {
    throw new AppError(
      'bad_request',
      allowNegative ? 'amount must be a non-zero integer' : 'amount must be a positive integer',
    );
  }
  for (const field of ['reason', 'job_id', 'project_id', 'reverses'] as const) {
    if (message[field] !== undefined && typeof message[field] !== 'string') {
      throw new AppError('bad_request', `${field} must be a string`);
    }
  }
  return message;
}

async function change(
  context: HandlerContext<UserActorPorts>,
  command: CreditCommand,
  delta: number,
  defaultReason: string,
): Promise<CreditResult> {
  const request: CreditChange = {
    userId: context.key,
    opId: command.op_id,
    delta,
    reason: command.reason ?? defaultReason,
    ...(command.job_id ? { jobId: command.job_id } : {}),
    ...(command.reverses ? { reverses: command.reverses } : {}),
  };
  const result = await context.ports.ledger.apply(request);
  if (result.kind === 'no_user') throw new AppError('not_found', 'User not found');
  if (result.kind === 'nothing_to_reverse') {
    context.logger.info({ reverses: command.reverses }, 'refund skipped: its debit is not in the ledger');
    return { ok: false, nothing_to_reverse: true, credits_remaining: result.credits_remaining };
  }
  if (result.kind === 'insufficient') {
    context.logger.debug({ delta }, 'credit change refused: balance too low');
    return {
      ok: false,
      credits_required: result.credits_required,
      credits_remaining: result.credits_remaining,
    };
  }
  const { entry } = result;
  return {
    ok: true,
    credits_remaining: entry.balance_after,
    entry: { ...entry, created_at: entry.created_at.toISOString() },
    replayed: result.replayed,
  };
}

export const userActor = defineActor<UserActorPorts>({
  kind: USER_ACTOR,
  handlers: {
    /** Takes credits before a provider call; refused (nothing changes) when the balance is too low. */
    debit: (context, message: CreditCommand) =>
      change(context, validated(message, false), -message.amount, 'debit'),
    /** Gives back credits of a failed, cancelled or abandoned job. */
    refund: (context, message: CreditCommand) =>
      change(context, validated(message, false), message.amount, 'refund'),
    /** An operator's grant (CONTRACT §3); a negative amount takes credits away, never below 0. */
    grant: (context, message: CreditCommand) =>
      change(context, validated(message, true), message.amount, 'grant'),
    /** Charges one agent turn of the editor. */
    charge_turn: (context, message: CreditCommand) =>
      change(context, validated(message, false), -message.amount, 'agent_turn'),
  },
});

/** The typed way services talk to the user actor. */
export interface UserCredits {
  debit(userId: string, command: Omit<CreditCommand, 'type' | 'reverses'>): Promise<ChargeResult>;
  /** Gives back `amount`; with `reverses`, only once that debit is in the ledger. */
  refund(userId: string, command: Omit<CreditCommand, 'type'>): Promise<RefundResult>;
  grant(userId: string, command: Omit<CreditCommand, 'type' | 'reverses'>): Promise<ChargeResult>;
  chargeTurn(userId: string, command: Omit<CreditCommand, 'type' | 'reverses'>): Promise<ChargeResult>;
}

export function userCredits(system: ActorSystem): UserCredits {
  const send =
    <Result>(type: string) =>
    (userId: string, command: Omit<CreditCommand, 'type'>) =>
      system.ask<Result>(USER_ACTOR, userId, { ...command, type });
  return {
    debit: send<ChargeResult>('debit'),
    refund: send<RefundResult>('refund'),
    grant: send<ChargeResult>('grant'),
    chargeTurn: send<ChargeResult>('charge_turn'),
  };
}
