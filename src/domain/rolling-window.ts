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

/**
 * Per-key counters over a rolling minute, in one-second buckets: exact to the second, O(60) memory per key
 * whatever the limit, and no timers. Keys idle for a full window are dropped by `sweep`.
 */
export class RollingWindowLimiter {
  private readonly buckets = new Map<string, { counts: Uint32Array; seconds: Float64Array; total: number }>();

  constructor(
    private readonly limit: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one event for `key` when it fits; answers the decision either way. */
  hit(key: string): WindowDecision {
    return this.decide(key, true);
  }

  /** The state for `key` without counting anything. */
  peek(key: string): WindowDecision {
    return this.decide(key, false);
  }

  /** Forgets keys with nothing left in the window (bounded memory under many keys). */
  sweep(): void {
    const second = Math.floor(this.now() / 1000);
    for (const [key, state] of this.buckets) {
      this.expire(state, second);
      if (state.total === 0) this.buckets.delete(key);
    }
  }

  get size(): number {
    return this.buckets.size;
  }

  private decide(key: string, count: boolean): WindowDecision {
    const second = Math.floor(this.now() / 1000);
    let state = this.buckets.get(key);
    if (!state) {
      if (!count)
        return { allowed: true, limit: this.limit, remaining: this.limit, resetAt: second, retryAfter: 0 };
      state = {
        counts: new Uint32Array(WINDOW_SECONDS),
        seconds: new Float64Array(WINDOW_SECONDS).fill(-1),
        total: 0,
      };
      this.buckets.set(key, state);
    }
    this.expire(state, second);
    const allowed = state.total < this.limit;
    if (count && allowed) {
      const slot = second % WINDOW_SECONDS;
      state.counts[slot]! += 1;
      state.seconds[slot] = second;
      state.total += 1;
    }
    const oldest = this.oldestSecond(state, second);
    const resetAt = oldest === undefined ? second : oldest + WINDOW_SECONDS;
    return {
      allowed: count ? allowed : state.total < this.limit,
      limit: this.limit,
      remaining: Math.max(0, this.limit - state.total),
      resetAt,
      retryAfter: allowed && count ? 0 : Math.max(1, resetAt - second),
    };
  }

  private expire(state: { counts: Uint32Array; seconds: Float64Array; total: number }, second: number): void {
    for (let slot = 0; slot < WINDOW_SECONDS; slot++) {
      const at = state.seconds[slot]!;
      if (at >= 0 && at <= second - WINDOW_SECONDS) {
        state.total -= state.counts[slot]!;
        state.counts[slot] = 0;
        state.seconds[slot] = -1;
      }
    }
  }

  private oldestSecond(
    state: { seconds: Float64Array; counts: Uint32Array },
    second: number,
  ): number | undefined {
    let oldest: number | undefined;
    for (let slot = 0; slot < WINDOW_SECONDS; slot++) {
      const at = state.seconds[slot]!;
      if (
        at >= 0 &&
        state.counts[slot]! > 0 &&
        at > second - WINDOW_SECONDS &&
        (oldest === undefined || at < oldest)
      )
        oldest = at;
    }
    return oldest;
  }
}
