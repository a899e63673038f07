/** What a limiter answers for one attempt. */
export interface WindowDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds at which the oldest counted event leaves the window (a slot frees). */
  resetAt: number;
  /** Whole seconds until a slot frees (0 when allowed). */
  retryAfter: number;
}

const WINDOW_SECONDS = 60;

interface KeyWindow {
  counts: Uint32Array;
  /** The second each bucket holds, or -1 when empty. */
  seconds: Float64Array;
  total: number;
  /** The second of the last expiry pass: within one second nothing can expire, so it is done once. */
  checkedAt: number;
  oldest: number | undefined;
}

/**
 * Per-key counters over a rolling minute, in one-second buckets: exact to the second, O(60) memory per key
 * whatever the limit, and no timers. Keys idle for a full window are dropped by `sweep`.
 */
export class RollingWindowLimiter {
  private readonly windows = new Map<string, KeyWindow>();

  constructor(
    private readonly limit: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one event for `key` when it fits; answers the decision either way. */
  hit(key: string): WindowDecision {
    const second = Math.floor(this.now() / 1000);
    let window = this.windows.get(key);
    if (!window) {
      window = {
        counts: new Uint32Array(WINDOW_SECONDS),
        seconds: new Float64Array(WINDOW_SECONDS).fill(-1),
        total: 0,
        checkedAt: -1,
        oldest: undefined,
      };
      this.windows.set(key, window);
    }
    this.expire(window, second);
    const allowed = window.total < this.limit;
    if (allowed) {
      const slot = second % WINDOW_SECONDS;
      window.counts[slot]! += 1;
      window.seconds[slot] = second;
      window.total += 1;
      window.oldest ??= second;
    }
    return this.decision(window, second, allowed);
  }

  /** The state for `key` without counting anything. */
  peek(key: string): WindowDecision {
    const second = Math.floor(this.now() / 1000);
    const window = this.windows.get(key);
    if (!window)
      return { allowed: true, limit: this.limit, remaining: this.limit, resetAt: second, retryAfter: 0 };
    this.expire(window, second);
    return this.decision(window, second, window.total < this.limit);
  }

  /** Forgets keys with nothing left in the window (bounded memory under many keys). */
  sweep(): void {
    const second = Math.floor(this.now() / 1000);
    for (const [key, window] of this.windows) {
      this.expire(window, second);
      if (window.total === 0) this.windows.delete(key);
    }
  }

  get size(): number {
    return this.windows.size;
  }

  private decision(window: KeyWindow, second: number, allowed: boolean): WindowDecision {
    const resetAt = window.oldest === undefined ? second : window.oldest + WINDOW_SECONDS;
    return {
      allowed,
      limit: this.limit,
      remaining: Math.max(0, this.limit - window.total),
      resetAt,
      retryAfter: allowed ? 0 : Math.max(1, resetAt - second),
    };
  }

  private expire(window: KeyWindow, second: number): void {
    if (window.checkedAt === second) return;
    window.checkedAt = second;
    window.oldest = undefined;
    for (let slot = 0; slot < WINDOW_SECONDS; slot++) {
      const at = window.seconds[slot]!;
      if (at < 0) continue;
      if (at <= second - WINDOW_SECONDS) {
        window.total -= window.counts[slot]!;
        window.counts[slot] = 0;
        window.seconds[slot] = -1;
      } else if (window.oldest === undefined || at < window.oldest) {
        window.oldest = at;
      }
    }
  }
}
