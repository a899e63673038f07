// The export's fair queue (docs/operator.md, "Export workers"): the pool's workers are handed out in turn between
// the users who wait, so one user's batch of long exports cannot hold every worker while another user's short
// one waits behind all of them. Piscina's own queue is first come, first served; this sits in front of it and
// only lets an export reach the pool once a worker is its.
//
// The rule, whenever a worker is free: among the users who wait and hold fewer than `perUser` workers, the one
// whose last turn is the oldest (a user with none yet comes first) gets it, for the export of theirs that has
// waited longest. A user's state is forgotten as soon as they hold and wait for nothing.

/** Gives a turn back; calling it again does nothing. */
export type ReleaseTurn = () => void;

export interface ExportQueueOptions {
  /** Workers shared out (`EXPORT_CONCURRENCY`). */
  slots: number;
  /** Workers one user may hold at once (`EXPORT_PER_USER`). */
  perUser: number;
}

/** The fair queue in front of the export pool (see the module comment). */
export interface ExportQueue {
  /**
   * Resolves once `userId` may use a worker, with the way to give it back (always call it, whatever the export's
   * outcome). Rejects with the signal's reason when `signal` aborts first; the turn is then never taken.
   */
  acquire(userId: string, signal?: AbortSignal): Promise<ReleaseTurn>;
  /**
   * A turn for `userId` now, or undefined when it would have to wait (every worker taken, or the user holding
   * `perUser` already): for work that can go to another node instead (segment-encoder.ts).
   */
  tryAcquire(userId: string): ReleaseTurn | undefined;
  /** Exports waiting for a worker, exports holding one, and the users they belong to. */
  counts(): { waiting: number; holding: number; users: number };
}

interface Waiter {
  grant(release: ReleaseTurn): void;
}

interface UserLine {
  /** Oldest first. */
  waiting: Waiter[];
  holding: number;
  /** When the user last got a worker (a counter of turns given): the smallest goes next. 0: never yet. */
  lastTurn: number;
}

/** A fair queue of `slots` workers, at most `perUser` of them per user. */
export function createExportQueue(options: ExportQueueOptions): ExportQueue {
  const { slots, perUser } = options;
  if (!(Number.isInteger(slots) && slots >= 1)) throw new RangeError('slots must be a positive integer');
  if (!(Number.isInteger(perUser) && perUser >= 1))
    throw new RangeError('perUser must be a positive integer');
  // Insertion order breaks ties between users who never had a turn: the first to arrive goes first.
  const lines = new Map<string, UserLine>();
  let holding = 0;
  let waiting = 0;
  let turns = 0;

  const forgetIfIdle = (userId: string, line: UserLine) => {
    if (line.holding === 0 && line.waiting.length === 0 && lines.get(userId) === line) lines.delete(userId);
  };

  /** The user whose turn it is, if anyone who waits may take a worker. */
  function nextInTurn(): [string, UserLine] | undefined {
    let next: [string, UserLine] | undefined;
    for (const entry of lines) {
      const line = entry[1];
      if (line.waiting.length === 0 || line.holding >= perUser) continue;
      if (!next || line.lastTurn < next[1].lastTurn) next = entry;
    }
    return next;
  }

  function handOut() {
    while (holding < slots) {
      const next = nextInTurn();
      if (!next) return;
      const [userId, line] = next;
      const waiter = line.waiting.shift()!;
      waiting--;
      line.holding++;
      holding++;
      line.lastTurn = ++turns;
      let released = false;
      waiter.grant(() => {
        if (released) return;
        released = true;
        line.holding--;
        holding--;
        forgetIfIdle(userId, line);
        handOut();
      });
    }
  }

  return {
    acquire(userId, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      return new Promise<ReleaseTurn>((resolve, reject) => {
        let line = lines.get(userId);
        if (!line) lines.set(userId, (line = { waiting: [], holding: 0, lastTurn: 0 }));
        const queued = line;
        const onAbort = () => {
          const at = queued.waiting.indexOf(waiter);
          if (at < 0) return;
          queued.waiting.splice(at, 1);
          waiting--;
          forgetIfIdle(userId, queued);
          reject(signal!.reason);
        };
        const waiter: Waiter = {
          grant(release) {
            signal?.removeEventListener('abort', onAbort);
            resolve(release);
          },
        };
        queued.waiting.push(waiter);
        waiting++;
        signal?.addEventListener('abort', onAbort, { once: true });
        handOut();
      });
    },
    tryAcquire(userId) {
      // A worker free with someone waiting means each of them already holds their share: none is passed over.
      if (holding >= slots || (lines.get(userId)?.holding ?? 0) >= perUser) return undefined;
      let release: ReleaseTurn | undefined;
      let line = lines.get(userId);
      if (!line) lines.set(userId, (line = { waiting: [], holding: 0, lastTurn: 0 }));
      line.waiting.push({ grant: (granted) => (release = granted) });
      waiting++;
      handOut();
      return release;
    },
    counts: () => ({ waiting, holding, users: lines.size }),
  };
}
