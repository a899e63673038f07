import type { Logger } from 'pino';
import type { EventBus, Unsubscribe } from '../platform/index.ts';
import type { EventHistory, ProjectEvent } from '../../actors/index.ts';

/** Where the fan-out hands each project event, once, in `seq` order (the WebSocket front: topics). */
export interface FanoutSink {
  deliver(event: ProjectEvent, json: string): void;
}

/** One socket being brought up to date by `join`. */
export interface JoiningSocket {
  /** False once the socket has closed: the join stops. */
  readonly open: boolean;
  /** One replayed event. */
  send(event: ProjectEvent): void;
  /** What the socket asked for is no longer kept: it re-reads the state and goes on from `headSeq`. */
  reset(headSeq: number): void;
  /** Called once, right after the last replayed event: from now on the sink's deliveries reach the socket. */
  goLive(): void;
}

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

/** A project's feed on this node. */
interface Feed {
  projectId: string;
  watchers: number;
  unsubscribe: Unsubscribe;
  /** False once the last watcher left: work still in flight for it stops. */
  active: boolean;
  /**
   * The last seq handed to the sink: every event up to it is committed, and every socket that is live has had
   * it. Undefined until the feed's first sync has read the project's committed head.
   */
  delivered: number | undefined;
  /** Newest committed events up to `delivered`, consecutive seqs, at most `windowSize`: replays from memory. */
  window: ProjectEvent[];
  /** Events heard while a sync runs (or after a gap), delivered once it is over. */
  held: ProjectEvent[];
  syncing: Promise<void> | undefined;
  /** A replay read in flight: other joins wait for it and look at the window again. */
  reading: Promise<unknown> | undefined;
  /** The project no longer exists (its last event may still be delivered). */
  gone: boolean;
  /** Syncs in a row that found the committed head behind what was heard. */
  stalls: number;
}

/** Raised by `join` when the project no longer exists: the socket closes as for a deletion. */
export class ProjectGoneError extends Error {
  constructor(projectId: string) {
    super(`project ${projectId} no longer exists`);
  }
}

/** Tries per join before it gives up (each try waits for a sync or a read that moves it forward). */
const JOIN_TRIES = 20;

/** Syncs in a row whose committed head stays behind a heard event before the feed skips to it. */
const MAX_STALLS = 3;

const bySeq = (a: ProjectEvent, b: ProjectEvent) => a.seq - b.seq;

/**
 * Project events on one node, between the event bus and the node's sockets. The bus delivers at most once and
 * may lag the history (the actor writes the history before its commit and publishes after it); the history
 * may hold, past the committed head, events of an attempt whose commit failed. So each watched project has a
 * feed that only ever delivers committed events, once, in order:
 * - an event heard after a gap is held while the missing ones are read from the history, up to the project's
 *   committed seq (read first: history entries up to it are final);
 * - a socket joins at its `afterSeq`: events up to what the feed delivered come from the feed's window or the
 *   history, and then it goes live with no await in between; a socket ahead of the feed first makes the feed
 *   sync (it delivers the committed events the bus has not brought yet, to every live socket);
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
  const { bus, history, sink, log, windowSize } = deps;
  const feeds = new Map<string, Feed>();

  function deliver(feed: Feed, event: ProjectEvent) {
    feed.delivered = event.seq;
    feed.window.push(event);
    if (feed.window.length > windowSize) feed.window.splice(0, feed.window.length - windowSize);
    try {
      sink.deliver(event, JSON.stringify(event));
    } catch (error) {
      log.error({ err: error, project_id: feed.projectId }, 'event delivery failed');
    }
  }

  /** Skips to `seq` (what is missing is lost for live sockets: they see the seqs jump). */
  function jumpTo(feed: Feed, seq: number, why: string) {
    log.warn({ project_id: feed.projectId, from: feed.delivered, to: seq }, `events skipped: ${why}`);
    feed.delivered = seq;
    feed.window = [];
  }

  function heard(feed: Feed, event: ProjectEvent) {
    if (!feed.active) return;
    const last = feed.delivered;
    if (feed.syncing || last === undefined) {
      feed.held.push(event);
      void sync(feed);
    } else if (event.seq === last + 1) {
      deliver(feed, event);
    } else if (event.seq > last + 1) {
      feed.held.push(event);
      void sync(feed);
    } // else: delivered already (from the history, or heard twice)
  }

  /** Runs one sync of the feed at a time; resolves when it (and the delivery of what it held) is over. */
  function sync(feed: Feed): Promise<void> {
    if (feed.syncing) return feed.syncing;
    const before = feed.delivered;
    return (feed.syncing = catchUpFeed(feed).finally(() => {
      feed.syncing = undefined;
      // A sync may read the head just before a held event's commit: the next one sees it. Only a head that
      // stays behind what was heard (it cannot, with reads from the primary) ends in a skip.
      const stalled = before !== undefined && feed.delivered === before && feed.held.length > 0;
      feed.stalls = stalled ? feed.stalls + 1 : 0;
      if (feed.stalls >= MAX_STALLS) {
        feed.stalls = 0;
        jumpTo(feed, Math.min(...feed.held.map((event) => event.seq)) - 1, 'heard beyond the committed head');
      }
      const held = feed.held.splice(0).sort(bySeq);
      for (const event of held) heard(feed, event);
    }));
  }

  /**
   * Brings `delivered` up to the committed head: the committed events not yet delivered — from the history and
   * from what was heard — go out in order; a seq found in neither is skipped (live sockets see the jump).
   * Held events past the head are heard again afterwards (they may start another sync: the head moved on).
   */
  async function catchUpFeed(feed: Feed): Promise<void> {
    try {
      const committed = await deps.committedSeq(feed.projectId);
      if (!feed.active) return;
      const heardSeqs = feed.held.map((event) => event.seq);
      if (committed === null) {
        // The project is gone: what was heard (its deletion) still goes out, whatever it skips.
        feed.gone = true;
        if (heardSeqs.length === 0) return;
        feed.delivered ??= Math.min(...heardSeqs) - 1;
        return deliverKnown(feed, Math.max(...heardSeqs), [], 'the project is gone');
      }
      // The first sync: nothing went live on this node before now, so the committed head is the start.
      if (feed.delivered === undefined) feed.delivered = committed;
      if (committed <= feed.delivered) return;
      const kept = await history.since(feed.projectId, feed.delivered);
      if (!feed.active) return;
      deliverKnown(feed, committed, kept.events, 'no longer in the history');
    } catch (error) {
      log.warn({ err: error, project_id: feed.projectId }, 'could not read the project’s events');
      if (!feed.active || feed.held.length === 0) return;
      // Without the history, what was heard goes out rather than waiting for a read that may never succeed.
      const heardSeqs = feed.held.map((event) => event.seq);
      feed.delivered ??= Math.min(...heardSeqs) - 1;
      deliverKnown(feed, Math.max(...heardSeqs), [], 'the history could not be read');
    }
  }

  /** Delivers, in seq order up to `head`, the events known from `read` or heard; skips (and logs) the rest. */
  function deliverKnown(feed: Feed, head: number, read: readonly ProjectEvent[], why: string) {
    const known = new Map<number, ProjectEvent>();
    for (const event of feed.held) if (event.seq <= head) known.set(event.seq, event);
    for (const event of read) if (event.seq <= head) known.set(event.seq, event);
    feed.held = feed.held.filter((event) => event.seq > head);
    const from = feed.delivered! + 1;
    for (let seq = from; seq <= head; seq++) {
      const event = known.get(seq);
      if (event) {
        deliver(feed, event);
        continue;
      }
      const next = [...known.keys()].filter((known) => known > seq).sort((x, y) => x - y)[0] ?? head + 1;
      jumpTo(feed, next - 1, why);
      seq = next - 1;
    }
  }

  /** The window's events after `afterSeq` when it reaches back that far (up to `delivered`). */
  function windowAfter(feed: Feed, afterSeq: number): ProjectEvent[] | undefined {
    if (afterSeq === feed.delivered) return [];
    const first = feed.window[0];
    if (!first || first.seq > afterSeq + 1) return undefined;
    return feed.window.slice(afterSeq + 1 - first.seq);
  }

  /** Keeps replayed events (committed, ending at or before `delivered`) in the window when they join it. */
  function remember(feed: Feed, events: ProjectEvent[]) {
    const last = events.at(-1);
    if (!last) return;
    const first = feed.window[0];
    if (!first) {
      if (last.seq === feed.delivered) feed.window = events.slice(-windowSize);
      return;
    }
    if (last.seq < first.seq - 1) return;
    feed.window = [...events.filter((event) => event.seq < first.seq), ...feed.window].slice(-windowSize);
  }

  async function join(projectId: string, afterSeq: number, socket: JoiningSocket): Promise<void> {
    const feed = feeds.get(projectId);
    if (!feed) throw new Error(`event fan-out: project ${projectId} is not watched`);
    let after = afterSeq;
    // Counts this join's own reads and syncs; waiting for another join's read is progress for both.
    for (let tries = 0; tries < JOIN_TRIES;) {
      if (!socket.open || !feed.active) return;
      if (feed.gone) throw new ProjectGoneError(projectId);
      if (feed.syncing || feed.delivered === undefined) {
        tries++;
        await sync(feed);
        continue;
      }
      if (after > feed.delivered) {
        // The socket saw events (on another node, or in the history) the bus has not brought here yet.
        tries++;
        const before = feed.delivered;
        await sync(feed);
        if (feed.delivered === before && !feed.syncing && !feed.gone) {
          throw new Error('the events the client has seen are not readable here yet');
        }
        continue;
      }
      const fromWindow = windowAfter(feed, after);
      if (fromWindow) {
        for (const event of fromWindow) socket.send(event);
        return socket.goLive();
      }
      if (feed.reading) {
        await feed.reading.catch(() => undefined);
        continue;
      }
      tries++;
      // History entries up to what the feed has delivered are final; later ones may belong to an attempt
      // whose commit fails, so the replay stops there (the rest comes through the feed).
      const upTo = feed.delivered;
      const reading = history.since(projectId, after);
      feed.reading = reading;
      let kept: Awaited<typeof reading>;
      try {
        kept = await reading;
      } finally {
        if (feed.reading === reading) feed.reading = undefined;
      }
      if (!socket.open || !feed.active) return;
      const replayed = kept.events.filter((event) => event.seq <= upTo);
      // Events up to `upTo` were committed, so written, before the read began: none read means none kept.
      if (!kept.complete || (replayed.length === 0 && after < upTo)) {
        socket.reset(feed.delivered);
        after = feed.delivered;
        continue;
      }
      if (replayed[0] && replayed[0].seq !== after + 1) throw new Error('the history skipped events');
      for (const event of replayed) socket.send(event);
      after = replayed.at(-1)?.seq ?? after;
      remember(feed, replayed);
    }
    throw new Error('replay did not catch up with live events');
  }

  return {
    watch(projectId) {
      let feed = feeds.get(projectId);
      if (!feed) {
        const created: Feed = {
          projectId,
          watchers: 0,
          unsubscribe: () => undefined,
          active: true,
          delivered: undefined,
          window: [],
          held: [],
          syncing: undefined,
          reading: undefined,
          gone: false,
          stalls: 0,
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
        watching.active = false;
        watching.unsubscribe();
      };
    },
    join,
    watched: () => [...feeds.keys()],
  };
}
