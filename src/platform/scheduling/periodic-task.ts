import type { Logger } from 'pino';

/** A task that runs every `intervalMs`; see `startPeriodicTask`. */
export interface PeriodicTask {
  /** Stops scheduling runs and waits for the one in progress, if any. */
  stop(): Promise<void>;
}

/**
 * Runs `run` every `intervalMs`, measured from the end of one run to the start of the next, so a slow run never
 * overlaps the next (the sweeps read and then write the same documents). A failed run is logged and the task
 * goes on. The timer does not keep the process alive; `stop()` waits for a run in progress.
 */
export function startPeriodicTask(options: {
  name: string;
  intervalMs: number;
  run(): Promise<void> | void;
  logger: Logger;
}): PeriodicTask {
  let stopped = false;
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(tick, options.intervalMs);
    timer.unref();
  };
  const tick = () => {
    running = (async () => {
      try {
        await options.run();
      } catch (error) {
        options.logger.error(
          { err: error, task: options.name },
          `${options.name} failed; next run as planned`,
        );
      }
    })().finally(() => {
      running = undefined;
      schedule();
    });
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
