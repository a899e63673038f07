import Type from 'typebox';
import { AppError } from '../src/platform/core/index.ts';
import type { CreditChange, CreditChangeResult, CreditLedger, LedgerEntry } from './ports/credit-ledger.ts';
import { defineActor, type HandlerContext } from './runtime/define.ts';
import { actorClient, type ActorClient } from './runtime/client.ts';
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

// Messages arrive from any node as JSON: the runtime checks each against its schema before the handler runs.
const MAX = Number.MAX_SAFE_INTEGER;
const fields = {
  op_id: Type.String({
    minLength: 1,
    maxLength: 200,
    errorMessage: 'op_id must be a non-empty string of at most 200 characters',
  }),
  reason: Type.Optional(Type.String()),
  job_id: Type.Optional(Type.String()),
  project_id: Type.Optional(Type.String()),
};
const positiveAmount = Type.Integer({
  minimum: 1,
  maximum: MAX,
  errorMessage: 'amount must be a positive integer',
});

/** `debit`, `charge_turn`: takes `amount` credits. */
export const ChargeCommand = Type.Object({
  op_id: fields.op_id,
  amount: positiveAmount,
  reason: fields.reason,
  job_id: fields.job_id,
  project_id: fields.project_id,
});

/** `refund`: gives back `amount`; with `reverses` (the debit's op_id), only once that debit is in the ledger. */
export const RefundCommand = Type.Object({
  ...ChargeCommand.properties,
  reverses: Type.Optional(Type.String()),
});

/** `grant`: an operator's change; a negative amount takes credits away, never below 0. */
export const GrantCommand = Type.Object({
  ...ChargeCommand.properties,
  amount: Type.Union(
    [Type.Integer({ minimum: 1, maximum: MAX }), Type.Integer({ minimum: -MAX, maximum: -1 })],
    { errorMessage: 'amount must be a non-zero integer' },
  ),
});

interface CreditCommand {
  op_id: string;
  reason?: string;
  job_id?: string;
  reverses?: string;
}

type Settled = Exclude<CreditChangeResult, { kind: 'no_user' }>;

async function change(
  context: HandlerContext<UserActorPorts>,
  command: CreditCommand,
  delta: number,
  defaultReason: string,
): Promise<Settled> {
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
  return result;
}

function applied(result: Extract<Settled, { kind: 'applied' }>): CreditApplied {
  const { entry } = result;
  return {
    ok: true,
    credits_remaining: entry.balance_after,
    entry: { ...entry, created_at: entry.created_at.toISOString() },
    replayed: result.replayed,
  };
}

/** A debit, grant or turn charge: refused (nothing changes) when the balance would go below 0. */
async function charge(
  context: HandlerContext<UserActorPorts>,
  command: CreditCommand,
  delta: number,
  defaultReason: string,
): Promise<ChargeResult> {
  const result = await change(context, command, delta, defaultReason);
  if (result.kind === 'applied') return applied(result);
  if (result.kind === 'insufficient') {
    context.logger.debug({ delta }, 'credit change refused: balance too low');
    const { credits_required, credits_remaining } = result;
    return { ok: false, credits_required, credits_remaining };
  }
  throw new Error(`credit ledger answered ${result.kind} to a change that reverses nothing`);
}

async function refund(
  context: HandlerContext<UserActorPorts>,
  command: CreditCommand & { amount: number },
): Promise<RefundResult> {
  const result = await change(context, command, command.amount, 'refund');
  if (result.kind === 'applied') return applied(result);
  if (result.kind === 'nothing_to_reverse') {
    context.logger.info({ reverses: command.reverses }, 'refund skipped: its debit is not in the ledger');
    return { ok: false, nothing_to_reverse: true, credits_remaining: result.credits_remaining };
  }
  throw new Error(`credit ledger answered ${result.kind} to a refund`);
}

export const userActor = defineActor<UserActorPorts>()({
  kind: USER_ACTOR,
  commands: {
    debit: ChargeCommand,
    refund: RefundCommand,
    grant: GrantCommand,
    charge_turn: ChargeCommand,
  },
  handlers: {
    /** Takes credits before a provider call; refused (nothing changes) when the balance is too low. */
    debit: (context, message) => charge(context, message, -message.amount, 'debit'),
    /** Gives back credits of a failed, cancelled or abandoned job. */
    refund: (context, message) => refund(context, message),
    /** An operator's grant (docs/operator.md, Admin API); a negative amount takes credits, never below 0. */
    grant: (context, message) => charge(context, message, message.amount, 'grant'),
    /** Charges one agent turn of the editor. */
    charge_turn: (context, message) => charge(context, message, -message.amount, 'agent_turn'),
  },
});

/**
 * The typed way services talk to the user actor: `debit`, `refund`, `grant`, `charge_turn` by user id. Mapped
 * over the handlers so that each method keeps its handler's declaration: "go to definition" on
 * `credits.refund(…)` lands on `refund` in `userActor.handlers` (test/unit/actor-client-navigation.test.ts).
 */
export type UserCredits = {
  [Name in keyof typeof userActor.handlers]: ActorClient<typeof userActor>[Name];
};

export const userCredits = (system: ActorSystem): UserCredits => actorClient(system, userActor);
