import type { KeyedSerial } from '../domain/keyed-serial.ts';
import type { CreditLedger } from './repositories.ts';

/** Wraps a ledger so that changes of one user apply one at a time, in arrival order, within this process. */
export function serialisePerUser(ledger: CreditLedger, serial: KeyedSerial): CreditLedger {
  return {
    apply: (change) => serial.run(change.userId, () => ledger.apply(change)),
    entries: (userId, limit) => ledger.entries(userId, limit),
  };
}
