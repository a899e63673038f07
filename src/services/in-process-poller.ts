import type { Logger } from 'pino';
import type { PollScheduler } from './jobs.ts';
import type { PollVerdict } from './job-completion.ts';

/**
 * The job poller of embedded and single-node modes: one timer per processing job. Nothing is kept here that
 * MongoDB does not also hold: after a restart, `resume` schedules every job still processing.
 */
export function createInProcessPoller(options: {
  poll(jobId: string): Promise<PollVerdict>;
  intervalMs: number;
  logger: Logger;
}): PollScheduler & { readonly pending: number; close(): void } {
  const timers = new Map<string, NodeJS.Timeout>();
  let closed = false;

  function schedule(jobId: string, delayMs: number) {
    if (closed || timers.has(jobId)) return;
    const timer = setTimeout(async () => {
      let verdict: PollVerdict = 'again';
      try {
        verdict = await options.poll(jobId);
      } catch (error) {
        options.logger.error({ err: error, job_id: jobId }, 'job poll failed');
      }
      timers.delete(jobId);
      if (verdict === 'again') schedule(jobId, options.intervalMs);
    }, delayMs);
    timer.unref();
    timers.set(jobId, timer);
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
