// Growing delays for failed sign-ins (docs/accounts.md), per client address and per account. A delay is a
// wait before the attempt is checked, never a refusal: the right password still signs in, so a stranger who
// knows an email can slow that account's sign-ins (by at most ACCOUNT.maxMs) but never lock its owner out. An
// address gets one attempt at a time, so its delays cannot be sidestepped by sending attempts in parallel;
// that only ever stops the address that sends them.

interface DelayCurve {
  /** Failures within the window that cost nothing (typos). */
  free: number;
  firstMs: number;
  maxMs: number;
}

const ADDRESS: DelayCurve = { free: 3, firstMs: 500, maxMs: 30_000 };
const ACCOUNT: DelayCurve = { free: 5, firstMs: 500, maxMs: 5_000 };
/** Failures older than this are forgotten. */
export const FAILURE_WINDOW_MS = 15 * 60_000;
/** Bounds memory under a flood of addresses or emails; the oldest entries go first. */
const MAX_ENTRIES = 100_000;

interface Failures {
  count: number;
  lastAt: number;
}

/** The wait before the next attempt after `failures` failures: none, then doubling up to the curve's cap. */
export function delayAfter(failures: number, curve: DelayCurve): number {
  if (failures < curve.free) return 0;
  return Math.min(curve.maxMs, curve.firstMs * 2 ** Math.min(failures - curve.free, 30));
}

export interface SignInThrottle {
  /**
   * Starts an attempt: the wait before it may be checked, or `busy` when the address already has an attempt
   * under way. A started attempt must be ended with `end`.
   */
  begin(address: string, account: string): { delayMs: number } | 'busy';
  /** Ends an attempt with its outcome: a success forgets the address's and the account's failures. */
  end(address: string, account: string, succeeded: boolean): void;
  /** Forgets failures older than the window (run periodically). */
  sweep(): void;
}

export function createSignInThrottle(now: () => number): SignInThrottle {
  const byAddress = new Map<string, Failures>();
  const byAccount = new Map<string, Failures>();
  const busy = new Set<string>();

  const countOf = (map: Map<string, Failures>, key: string): number => {
    const entry = map.get(key);
    return entry && now() - entry.lastAt < FAILURE_WINDOW_MS ? entry.count : 0;
  };
  const fail = (map: Map<string, Failures>, key: string) => {
    const count = countOf(map, key) + 1;
    map.delete(key); // re-inserted last: the map's order is the age order the cap relies on
    if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value!);
    map.set(key, { count, lastAt: now() });
  };

  return {
    begin(address, account) {
      if (busy.has(address)) return 'busy';
      busy.add(address);
      const delayMs = Math.max(
        delayAfter(countOf(byAddress, address), ADDRESS),
        delayAfter(countOf(byAccount, account), ACCOUNT),
      );
      return { delayMs };
    },
    end(address, account, succeeded) {
      busy.delete(address);
      if (succeeded) {
        byAddress.delete(address);
        byAccount.delete(account);
      } else {
        fail(byAddress, address);
        fail(byAccount, account);
      }
    },
    sweep() {
      const oldest = now() - FAILURE_WINDOW_MS;
      for (const map of [byAddress, byAccount]) {
        for (const [key, entry] of map) if (entry.lastAt < oldest) map.delete(key);
      }
    },
  };
}

export const SIGN_IN_DELAYS = { address: ADDRESS, account: ACCOUNT } as const;
