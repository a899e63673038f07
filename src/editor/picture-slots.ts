/** Which queue a piece of picture work waits in: pictures an answer waits for before the others. */
export type PictureLane = 'new' | 'backfill';

/** A bounded number of picture runs at a time, new assets first. */
export interface PictureSlots {
  /** Runs `work` once a slot is free (at once when one is). */
  run<T>(lane: PictureLane, work: () => Promise<T>): Promise<T>;
  /** How many wait in `lane`. */
  waiting(lane: PictureLane): number;
}

/**
 * At most `limit` runs at once. A freed slot goes to the oldest waiting `new` run, then to the oldest other
 * one: an upload's pictures, which its answer waits for, never queue behind a library being filled in.
 */
export function createPictureSlots(limit: number): PictureSlots {
  let busy = 0;
  const queues: Record<PictureLane, Array<() => void>> = { new: [], backfill: [] };
  const release = () => {
    const next = queues.new.shift() ?? queues.backfill.shift();
    if (next)
      next(); // the slot passes straight on: `busy` stays
    else busy -= 1;
  };
  return {
    async run(lane, work) {
      if (busy < limit) busy += 1;
      else await new Promise<void>((resolve) => queues[lane].push(resolve));
      try {
        return await work();
      } finally {
        release();
      }
    },
    waiting: (lane) => queues[lane].length,
  };
}
