// Re-reads triggered by bursts of events (docs/dashboard.md "Rate limits"): every trigger of a burst shares one
// request, and a trigger while a read is on its way gets one more read after it, never one per trigger.

/** A read run on demand, at most one at a time, shared by every caller it satisfies. */
export interface CoalescedRead {
  /**
   * Resolves once a read that started at or after `since` (a `performance.now()` time; default: now) has
   * finished. A read that is due, or one on its way that started late enough, is shared.
   */
  after(since?: number): Promise<void>;
  /** Forgets a due read (the page is going away). */
  cancel(): void;
}

interface Run {
  startedAt: number;
  done: Promise<void>;
}

/** Wraps `read` (which handles its own errors) so that triggers within `delayMs` of each other share one call. */
export function coalescedRead(read: () => Promise<void>, delayMs: number): CoalescedRead {
  let running: Run | null = null;
  /** When the last finished read started: a caller who needs nothing newer is already served. */
  let finishedStartedAt = -Infinity;
  let due: Promise<void> | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let release: (() => void) | null = null;

  const start = (): Promise<void> => {
    const run: Run = { startedAt: performance.now(), done: Promise.resolve() };
    run.done = read()
      .catch(() => undefined)
      .finally(() => {
        if (running === run) running = null;
        finishedStartedAt = Math.max(finishedStartedAt, run.startedAt);
      });
    running = run;
    return run.done;
  };

  /** A read after `delayMs`, or after the one on its way (whichever is later), shared by all who ask meanwhile. */
  const schedule = (): Promise<void> => {
    due ??= new Promise<void>((resolve) => {
      release = resolve;
      const begin = (): void => {
        const before = running;
        if (before) {
          void before.done.then(begin);
          return;
        }
        due = null;
        release = null;
        void start().then(resolve);
      };
      timer = setTimeout(begin, delayMs);
    });
    return due;
  };

  return {
    after(since = performance.now()) {
      if (due) return due;
      if (running && running.startedAt >= since) return running.done;
      if (!running && finishedStartedAt >= since) return Promise.resolve();
      return schedule();
    },
    cancel() {
      clearTimeout(timer);
      release?.();
      due = null;
      release = null;
    },
  };
}
