// The sandbox renderer's queue: at most `concurrency` renders hold a slot, the rest wait in FIFO order. A
// render whose request is cancelled leaves the line at once: it must not wait for, or hold, a slot.

/** `concurrency` slots for renders, handed out first come, first served. */
export interface RenderSlots {
  /** Takes a slot, waiting in line when all are taken; rejects with `cancelled()` if `signal` aborts. */
  acquire(signal: AbortSignal | undefined): Promise<void>;
  /** Gives a slot back. */
  release(): void;
  /** Rejects every render waiting in line with `error` (the renderer is closing). */
  rejectWaiting(error: Error): void;
  /** Slots taken. */
  readonly running: number;
  /** Renders waiting for one. */
  readonly queued: number;
}

interface Waiter {
  start(): void;
  cancel(error: Error): void;
}

/** Slots for `concurrency` renders (at least 1); `cancelled` makes the error of one that left the line. */
export function createRenderSlots(concurrency: number, cancelled: () => Error): RenderSlots {
  const size = Math.max(1, Math.floor(concurrency));
  const waiting: Waiter[] = [];
  let active = 0;

  return {
    acquire(signal) {
      if (signal?.aborted) return Promise.reject(cancelled());
      if (active < size) {
        active += 1;
        return Promise.resolve();
      }
      return new Promise((start, cancel) => {
        const waiter: Waiter = {
          start: () => {
            signal?.removeEventListener('abort', leave);
            start();
          },
          cancel,
        };
        const leave = () => {
          const index = waiting.indexOf(waiter);
          if (index !== -1) waiting.splice(index, 1);
          cancel(cancelled());
        };
        signal?.addEventListener('abort', leave, { once: true });
        waiting.push(waiter);
      });
    },

    release() {
      // The slot passes straight to the next waiter, so `running` never dips between two renders.
      const next = waiting.shift();
      if (next) next.start();
      else active -= 1;
    },

    rejectWaiting(error) {
      for (const waiter of waiting.splice(0)) waiter.cancel(error);
    },

    get running() {
      return active;
    },

    get queued() {
      return waiting.length;
    },
  };
}
