import type { Clock } from '../platform/index.ts';

/** `export.progress` at most this often, and only for this much more done: each is one write of the project. */
const PROGRESS_EVERY_MS = 1000;
const PROGRESS_STEP = 0.02;

/** An export's progress announcements. */
export interface ProgressAnnouncer {
  /** The encoder's progress (0–1); announced only when due. */
  report(fraction: number): void;
  /** Waits for the last announcement. */
  settled(): Promise<unknown>;
}

/**
 * Announces progress at most every PROGRESS_EVERY_MS and PROGRESS_STEP, one announcement in flight at a time
 * (a slow actor skips fractions rather than queueing them); `settled` waits for the last one, so
 * `export.completed` and `export.failed` always come after every `export.progress`.
 */
export function progressAnnouncer(
  send: (fraction: number) => Promise<unknown>,
  clock: Clock,
): ProgressAnnouncer {
  let last = 0;
  let lastAt = 0;
  let inFlight: Promise<unknown> = Promise.resolve();
  let busy = false;
  return {
    report(fraction: number) {
      const now = clock.now();
      if (busy || fraction - last < PROGRESS_STEP || now - lastAt < PROGRESS_EVERY_MS || fraction >= 1)
        return;
      last = fraction;
      lastAt = now;
      busy = true;
      inFlight = send(Math.round(fraction * 1000) / 1000)
        .catch(() => undefined)
        .finally(() => (busy = false));
    },
    settled: () => inFlight,
  };
}
