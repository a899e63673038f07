import type { Logger } from 'pino';
import type { EventBus, Unsubscribe } from '../platform/index.ts';
import type { EventHistory, ProjectEvent } from '../../actors/index.ts';
import { createFeedSync, newFeed, type Feed, type FanoutSink } from './event-feed.ts';
import { joinFeed, type JoiningSocket } from './event-replay.ts';

/** One node's view of the project events its sockets watch (see `createEventFanout`). */
export interface EventFanout {
  /** Starts hearing the project's events (once per node, however many watch); returns the way to stop. */
  watch(projectId: string): Unsubscribe;
  /**
   * Replays to a socket the events after `afterSeq` (from this node's window, else the history), then makes it
   * live, with no gap and no duplicate. The project must be watched.
   */
  join(projectId: string, afterSeq: number, socket: JoiningSocket): Promise<void>;
  /** Projects watched on this node. */
  watched(): string[];
}

/**
 * Project events on one node, between the event bus and the node's sockets. The bus delivers at most once and
 * may lag the history (the actor writes the history before its commit and publishes after it); the history
 * may hold, past the committed head, events of an attempt whose commit failed. So each watched project has a
 * feed that only ever delivers committed events, once, in order:
 * - an event heard after a gap is held while the missing ones are read from the history, up to the project's
 *   committed seq (read first: history entries up to it are final) — event-feed.ts;
 * - a socket joins at its `afterSeq`: events up to what the feed delivered come from the feed's window or the
 *   history, and then it goes live with no await in between; a socket ahead of the feed first makes the feed
 *   sync (it delivers the committed events the bus has not brought yet, to every live socket) — event-replay.ts;
 * - the window keeps the newest events in memory, and one replay read runs per project at a time, so a storm of
 *   reconnecting clients (a node died) costs one history read per project, not one per client.
 */
export function createEventFanout(deps: {
  bus: EventBus;
  history: EventHistory;
  /** The project's committed seq (its document's), or null when it no longer exists. */
  committedSeq(projectId: string): Promise<number | null>;
  sink: FanoutSink;
  log: Logger;
  windowSize: number;
}): EventFanout {
  const feeds = new Map<string, Feed>();
  const { heard, sync } = createFeedSync(deps);

  return {
    watch(projectId) {
      let feed = feeds.get(projectId);
      if (!feed) {
        const created = newFeed(projectId);
        created.unsubscribe = deps.bus.subscribe(`project.${projectId}`, (event) =>
          heard(created, event as ProjectEvent),
        );
        feeds.set(projectId, (feed = created));
      }
      const watching = feed;
      watching.watchers++;
      let active = true;
      return () => {
        if (!active) return;
        active = false;
        if (--watching.watchers > 0 || feeds.get(projectId) !== watching) return;
        feeds.delete(projectId);
        watching.active = false;
        watching.unsubscribe();
      };
    },

    async join(projectId, afterSeq, socket) {
      const feed = feeds.get(projectId);
      if (!feed) throw new Error(`event fan-out: project ${projectId} is not watched`);
      return joinFeed(feed, afterSeq, socket, { history: deps.history, sync, windowSize: deps.windowSize });
    },

    watched: () => [...feeds.keys()],
  };
}
