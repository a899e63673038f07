import type { EventHistory, ProjectEvent } from '../../actors/index.ts';
import type { Feed } from './event-feed.ts';

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

/** Raised by `join` when the project no longer exists: the socket closes as for a deletion. */
export class ProjectGoneError extends Error {
  constructor(projectId: string) {
    super(`project ${projectId} no longer exists`);
  }
}

/** Tries per join before it gives up (each try waits for a sync or a read that moves it forward). */
const JOIN_TRIES = 20;

/** What a join works with: the history, the feed's sync and the size of its window. */
export interface ReplayDeps {
  history: EventHistory;
  sync(feed: Feed): Promise<void>;
  windowSize: number;
}

/**
 * Replays to a socket the events after `afterSeq` — from the feed's window, else the history (one read per
 * project at a time, shared by the joins that wait) — then makes it live with no await in between: no gap, no
 * duplicate. A socket ahead of the feed first makes the feed sync.
 */
export async function joinFeed(
  feed: Feed,
  afterSeq: number,
  socket: JoiningSocket,
  deps: ReplayDeps,
): Promise<void> {
  let after = afterSeq;
  // Counts this join's own reads and syncs; waiting for another join's read is progress for both.
  for (let tries = 0; tries < JOIN_TRIES;) {
    if (!socket.open || !feed.active) return;
    if (feed.gone) throw new ProjectGoneError(feed.projectId);
    if (feed.syncing || feed.delivered === undefined) {
      tries++;
      await deps.sync(feed);
      continue;
    }
    if (after > feed.delivered) {
      // The socket saw events (on another node, or in the history) the bus has not brought here yet.
      tries++;
      const before = feed.delivered;
      await deps.sync(feed);
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
    const reading = deps.history.since(feed.projectId, after);
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
    remember(feed, replayed, deps.windowSize);
  }
  throw new Error('replay did not catch up with live events');
}

/** The window's events after `afterSeq` when it reaches back that far (up to `delivered`). */
function windowAfter(feed: Feed, afterSeq: number): ProjectEvent[] | undefined {
  if (afterSeq === feed.delivered) return [];
  const first = feed.window[0];
  if (!first || first.seq > afterSeq + 1) return undefined;
  return feed.window.slice(afterSeq + 1 - first.seq);
}

/** Keeps replayed events (committed, ending at or before `delivered`) in the window when they join it. */
function remember(feed: Feed, events: ProjectEvent[], windowSize: number) {
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
