/** One run of a scheduled item: 'done', or the delay in ms before it runs again. */
export type DelayedWork = (id: string) => Promise<'done' | number>;

/** Runs an item after a delay (job polls, webhook attempts); scheduling an item already waiting does nothing. */
export interface WorkScheduler {
  schedule(id: string, delayMs: number): void;
}

/** What a job poller does next with a job after one poll. */
export type PollVerdict = 'again' | 'done';
