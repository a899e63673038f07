import type { Logger } from 'pino';
import type { DelayedWork, WorkScheduler } from './work-scheduler.ts';

/**
 * The scheduler of embedded and single-node modes: one timer per item. Nothing is kept here that MongoDB does
 * not also hold: after a restart, each user schedules again what its documents say is still due.
 */
export function createInProcessScheduler(options: {
  work: DelayedWork;
  /** Delay before a run that threw is tried again. */
  retryAfterErrorMs: number;
  /** What an item is, in log lines ("job poll", "webhook attempt"). */
  label: string;
  logger: Logger;
}): WorkScheduler & { readonly pending: number; close(): void } {
  const timers = new Map<string, NodeJS.Timeout>();
  let closed = false;

  function schedule(id: string, delayMs: number) {
    if (closed || timers.has(id)) return;
    const timer = setTimeout(async () => {
      let next: 'done' | number = options.retryAfterErrorMs;
      try {
        next = await options.work(id);
      } catch (error) {
        options.logger.error({ err: error, id }, `${options.label} failed; trying again later`);
      }
      timers.delete(id);
      if (next !== 'done') schedule(id, next);
    }, delayMs);
    timer.unref();
    timers.set(id, timer);
  }

  return {
    schedule,
    get pending() {
      return timers.size;
    },
    close() {
      closed = true;
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
    },
  };
}
