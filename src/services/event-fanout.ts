import type { Logger } from 'pino';
import type { EventBus, Unsubscribe } from '../ports/event-bus.ts';
import type { EventHistory, ProjectEvent } from '../ports/event-history.ts';

/** Where the fan-out hands each project event, in `seq` order (the WebSocket front: one topic per project). */
export interface FanoutSink {
  deliver(event: ProjectEvent, json: string): void;
}

/** What a socket replays before it goes live. */
export type CatchUp =
  | { complete: true; events: ProjectEvent[] }
  /** Some events after the asked seq are no longer kept: the client must re-read the state (`sync.reset`). */
  | { complete: false; headSeq: number };

/** One node's view of the project events its sockets watch (see `createEventFanout`). */
export interface EventFanout {
  /** Starts hearing the project's events (once per node, however many watch); returns the way to stop. */
  watch(projectId: string): Unsubscribe;
  /** The kept events after `afterSeq`, from this node's window when it covers them, else from the history. */
  catchUp(projectId: string, afterSeq: number): Promise<CatchUp>;
  /**
   * The events after `afterSeq` this node has heard, synchronously — what a socket sends between its replay and
   * its subscription. `undefined` when the window no longer reaches back to `afterSeq` (catch up again), or
   * while a gap is being repaired (wait for `settled`).
   */
  heardAfter(projectId: string, afterSeq: number): ProjectEvent[] | undefined;
  /** Resolves when no gap repair is running for the project. */
  settled(projectId: string): Promise<void>;
  /** Projects watched on this node. */
  watched(): string[];
}

/** A project's feed on this node. */
interface Feed {
  watchers: number;
  unsubscribe: Unsubscribe;
  /** The newest events heard or read, consecutive seqs, ascending, at most `windowSize`. */
  window: ProjectEvent[];
  /** The head a replay found when it found nothing newer (so the next event heard is checked against it). */
  anchor: number | undefined;
  /** Set while events after a gap are held back until the missing ones are read from the history. */
  repair: Promise<void> | undefined;
  held: ProjectEvent[];
  /** A history read in flight: concurrent catch-ups wait for it, then look at the window again. */
  reading: Promise<unknown> | undefined;
}

/**
 * Project events on one node, between the event bus and the node's sockets. Each watched project has one bus
 * subscription and a window of its newest events, so that:
 * - sockets get every event once and in order even though the bus delivers at most once: an event that
 *   arrives after a gap is held while the missing seqs are read from the history (the actor wrote them there
 *   before it published them);
 * - a socket's replay hands over to live without a gap or a duplicate (replay, then `heardAfter`, then
 *   subscribe, with no await in between);
 * - a storm of reconnecting clients (a node died) costs one history read per project, not one per client.
 */
export function createEventFanout(deps: {
  bus: EventBus;
  history: EventHistory;
  sink: FanoutSink;
  log: Logger;
  /** Newest events kept per watched project. */
  windowSize: number;
}): EventFanout {
  const { bus, history, sink, log, windowSize } = deps;
  const feeds = new Map<string, Feed>();

  const lastSeq = (feed: Feed) => feed.window.at(-1)?.seq ?? feed.anchor;

  function remember(feed: Feed, event: ProjectEvent) {
    feed.window.push(event);
    if (feed.window.length > windowSize) feed.window.splice(0, feed.window.length - windowSize);
  }

  function deliver(feed: Feed, event: ProjectEvent) {
    remember(feed, event);
    sink.deliver(event, JSON.stringify(event));
  }

  function heard(feed: Feed, event: ProjectEvent) {
    if (feed.repair) return void feed.held.push(event);
    const last = lastSeq(feed);
    if (last !== undefined && event.seq <= last) return; // already delivered (a replayed or repeated event)
    if (last === undefined || event.seq === last + 1) return deliver(feed, event);
    feed.held.push(event);
    feed.repair = repairGap(feed, event.project_id, last).finally(() => {
      feed.repair = undefined;
      const held = feed.held.splice(0);
      for (const next of held) heard(feed, next);
    });
  }

  /** Reads the seqs the bus lost from the history and delivers them before the held events. */
  async function repairGap(feed: Feed, projectId: string, last: number) {
    try {
      const kept = await history.since(projectId, last);
      for (const event of kept.events) {
        if (event.seq === lastSeq(feed)! + 1) deliver(feed, event);
      }
    } catch (error) {
      log.warn({ err: error, project_id: projectId }, 'could not read missed events; clients see a gap');
    }
    // What is still missing (no longer kept, or unreadable) is skipped: clients see the seqs jump, and the
    // window restarts at the next held event.
    const next = feed.held[0];
    if (next && next.seq > lastSeq(feed)! + 1) {
      feed.window = [];
      feed.anchor = undefined;
    }
  }

  function eventsAfter(feed: Feed, afterSeq: number): ProjectEvent[] | undefined {
    const first = feed.window[0];
    if (!first) return [];
    if (first.seq > afterSeq + 1) return undefined;
    return feed.window.slice(Math.max(0, afterSeq + 1 - first.seq));
  }

  /** Adds replayed events to the window when they join up with it (the next catch-up is served from memory). */
  function absorb(feed: Feed, afterSeq: number, events: ProjectEvent[]) {
    if (feed.repair) return;
    if (events.length === 0) {
      if (feed.window.length === 0) feed.anchor = Math.max(feed.anchor ?? 0, afterSeq);
      return;
    }
    const first = feed.window[0];
    if (!first) {
      // Nothing heard yet: the replay's tail is the newest known.
      for (const event of events) remember(feed, event);
      return;
    }
    if (events.at(-1)!.seq < first.seq - 1 || events[0]!.seq >= first.seq) return;
    const older = events.filter((event) => event.seq < first.seq);
    feed.window = [...older, ...feed.window].slice(-windowSize);
  }

  return {
    watch(projectId) {
      let feed = feeds.get(projectId);
      if (!feed) {
        const created: Feed = {
          watchers: 0,
          unsubscribe: () => undefined,
          window: [],
          anchor: undefined,
          repair: undefined,
          held: [],
          reading: undefined,
        };
        created.unsubscribe = bus.subscribe(`project.${projectId}`, (event) =>
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
        watching.unsubscribe();
      };
    },

    async catchUp(projectId, afterSeq) {
      const feed = feeds.get(projectId);
      if (!feed) throw new Error(`event fan-out: project ${projectId} is not watched`);
      for (;;) {
        const heardEvents = feed.repair ? undefined : eventsAfter(feed, afterSeq);
        if (heardEvents && feed.window.length > 0) return { complete: true, events: heardEvents };
        if (!feed.reading) break;
        await feed.reading.catch(() => undefined);
      }
      const reading = history.since(projectId, afterSeq);
      feed.reading = reading;
      try {
        const kept = await reading;
        if (!kept.complete) {
          return { complete: false, headSeq: Math.max(kept.events.at(-1)?.seq ?? 0, lastSeq(feed) ?? 0) };
        }
        absorb(feed, afterSeq, kept.events);
        return { complete: true, events: kept.events };
      } finally {
        if (feed.reading === reading) feed.reading = undefined;
      }
    },

    heardAfter(projectId, afterSeq) {
      const feed = feeds.get(projectId);
      if (!feed) return [];
      return feed.repair ? undefined : eventsAfter(feed, afterSeq);
    },

    async settled(projectId) {
      for (let feed = feeds.get(projectId); feed?.repair; feed = feeds.get(projectId)) await feed.repair;
    },

    watched: () => [...feeds.keys()],
  };
}
