import type { Logger } from 'pino';
import type { Unsubscribe } from '../platform/index.ts';
import type { EventHistory, ProjectEvent } from '../../actors/index.ts';

/** Where the fan-out hands each project event, once, in `seq` order (the WebSocket front: topics). */
export interface FanoutSink {
  deliver(event: ProjectEvent, json: string): void;
}

/** A project's feed on this node. */
export interface Feed {
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

/** A new feed of the project, before its first sync. */
export function newFeed(projectId: string): Feed {
  return {
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
}

/** What feeds do with the events they hear: deliver the committed ones, once, in order. */
export interface FeedSync {
  /** An event the bus brought: delivered now when it is the next one, else held for a sync. */
  heard(feed: Feed, event: ProjectEvent): void;
  /** Runs one sync of the feed at a time; resolves when it (and the delivery of what it held) is over. */
  sync(feed: Feed): Promise<void>;
}

/** What feeds work with. */
export interface FeedSyncDeps {
  history: EventHistory;
  /** The project's committed seq (its document's), or null when it no longer exists. */
  committedSeq(projectId: string): Promise<number | null>;
  sink: FanoutSink;
  log: Logger;
  windowSize: number;
}

/** Syncs in a row whose committed head stays behind a heard event before the feed skips to it. */
const MAX_STALLS = 3;

const bySeq = (a: ProjectEvent, b: ProjectEvent) => a.seq - b.seq;

/**
 * Delivery of the events of every feed: an event heard after a gap is held while the missing ones are read
 * from the history, up to the project's committed seq (read first: history entries up to it are final).
 */
export function createFeedSync(deps: FeedSyncDeps): FeedSync {
  const { history, sink, log, windowSize } = deps;

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

  return { heard, sync };
}
