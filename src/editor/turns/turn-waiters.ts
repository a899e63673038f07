import type { ProjectCommands } from '../../../actors/index.ts';
import { AppError, type Clock } from '../../platform/index.ts';

/** A queued turn looks at its place this often at most (a finish on this node wakes it at once). */
const QUEUE_POLL_MAX_MS = 1000;

/** This node's turns waiting in their project's queue. */
export interface TurnWaiters {
  /** Wakes this node's turns queued on `projectId` (another turn there just ended). */
  wake(projectId: string): void;
  /** Resolves once the turn is granted; 503 when it left the queue without running (404: project gone). */
  waitForGrant(projectId: string, turnId: string): Promise<void>;
}

/**
 * Queued turns waiting for their grant. The queue is the project actor's state, so a waiting turn asks it
 * (`turn_status`, 100 ms growing to 1 s: turns ended on another node are heard of that way), and a turn ending
 * on this node wakes this node's waiters of its project at once.
 */
export function createTurnWaiters(commands: Pick<ProjectCommands, 'turn_status'>, clock: Clock): TurnWaiters {
  const waiting = new Map<string, Set<() => void>>();

  function sleepUnlessWoken(projectId: string, ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let set = waiting.get(projectId);
      if (!set) waiting.set(projectId, (set = new Set()));
      const resume = () => {
        clearTimeout(timer);
        set.delete(resume);
        if (set.size === 0) waiting.delete(projectId);
        resolve();
      };
      const timer = setTimeout(resume, ms);
      set.add(resume);
    });
  }

  return {
    wake(projectId: string): void {
      for (const resume of waiting.get(projectId) ?? []) resume();
    },

    async waitForGrant(projectId: string, turnId: string): Promise<void> {
      for (let delay = 100; ; delay = Math.min(delay * 2, QUEUE_POLL_MAX_MS)) {
        const status = await commands.turn_status(projectId, { turn_id: turnId, seen_at: clock.now() });
        if (status.status === 'granted') return;
        if (status.status !== 'queued') {
          throw new AppError('unavailable', 'The turn was dropped before it ran; try again');
        }
        await sleepUnlessWoken(projectId, delay);
      }
    },
  };
}
