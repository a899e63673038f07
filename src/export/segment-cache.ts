import { createReadStream } from 'node:fs';
import type { Logger } from 'pino';
import { newMediaId, type Clock, type MediaStore } from '../platform/index.ts';

// The cache of encoded segments (docs/editor.md, Export: the segment cache). A segment's key is a hash of
// everything that decides its pixels; an entry is kept in the media store for one user's project, so a cached
// segment never answers another user's export (reusing it would tell that user what another one made), and
// it goes with its project. `SEGMENT_CACHE_MAX_BYTES` bounds the whole cache: past it, the least recently used
// entries go first. Index and files may disagree after a crash; a lookup whose file is gone is a miss, and an
// entry whose file could not be kept is never recorded.

/** One cached segment: whose it is, what it is, where its file is, how big, and when it was last used. */
export interface SegmentEntry {
  userId: string;
  projectId: string;
  key: string;
  mediaId: string;
  bytes: number;
  usedAt: Date;
}

/** Where entries are recorded (port; MongoDB: mongo-segment-index.ts). */
export interface SegmentIndex {
  find(userId: string, projectId: string, key: string): Promise<SegmentEntry | null>;
  /** Records an entry; false (and nothing changed) when that user's project already has the key. */
  add(entry: SegmentEntry): Promise<boolean>;
  /** Marks an entry used at `at`. */
  touch(userId: string, projectId: string, key: string, at: Date): Promise<void>;
  /** Removes an entry (nothing when it is gone already). */
  remove(entry: Pick<SegmentEntry, 'userId' | 'projectId' | 'key'>): Promise<void>;
  /** The bytes of every entry. */
  totalBytes(): Promise<number>;
  /** The least recently used entries first, at most `limit`. */
  leastRecentlyUsed(limit: number): Promise<SegmentEntry[]>;
  /** Removes a project's entries and answers them. */
  removeProject(projectId: string): Promise<SegmentEntry[]>;
}

export interface SegmentCache {
  /** The media id of a cached segment of this user's project (marked used), or null. */
  lookup(userId: string, projectId: string, key: string): Promise<string | null>;
  /**
   * Keeps a copy of each of an export's encoded segments (local files, which the export goes on using), then
   * brings the cache back within its bound once (which may evict those copies at once, when they alone are
   * bigger). A segment that cannot be kept costs a later re-encode only: it is logged and skipped.
   * `{ trim: false }` leaves the bound to a later `trim` (a cluster node keeping one segment of an export
   * whose requesting node trims once, after it has copied them all: farmed-segments.ts).
   */
  keep(
    userId: string,
    projectId: string,
    segments: KeptSegment[],
    options?: { trim?: boolean },
  ): Promise<void>;
  /** Brings the cache back within its bound (least recently used first). */
  trim(): Promise<void>;
  /** Removes a project's segments (the project was deleted). */
  forgetProject(projectId: string): Promise<void>;
}

/** An encoded segment to keep: its key, its local file and that file's size. */
export interface KeptSegment {
  key: string;
  path: string;
  bytes: number;
}

export interface SegmentCacheDeps {
  index: SegmentIndex;
  store: MediaStore;
  /** `SEGMENT_CACHE_MAX_BYTES`. */
  maxBytes: number;
  clock: Clock;
  logger: Logger;
}

/** Entries read at once while bringing the cache within its bound. */
const EVICT_BATCH = 50;

export function createSegmentCache(deps: SegmentCacheDeps): SegmentCache {
  const { index, store } = deps;
  const now = () => new Date(deps.clock.now());

  /** Removes least recently used entries, then their files, until the cache is within its bound. */
  async function evict(): Promise<void> {
    let over = (await index.totalBytes()) - deps.maxBytes;
    while (over > 0) {
      const oldest = await index.leastRecentlyUsed(EVICT_BATCH);
      if (oldest.length === 0) return;
      for (const entry of oldest) {
        if (over <= 0) return;
        // The entry first: a lookup between the two finds no entry rather than an entry without a file.
        await index.remove(entry);
        await store.delete(entry.mediaId);
        over -= entry.bytes;
      }
    }
  }

  /** Stores the file and records it, unless another export recorded the key first (theirs stays). */
  async function keepOne(userId: string, projectId: string, { key, path, bytes }: KeptSegment) {
    const mediaId = newMediaId('mp4');
    await store.put(mediaId, createReadStream(path), 'video/mp4');
    if (!(await index.add({ userId, projectId, key, mediaId, bytes, usedAt: now() }))) {
      await store.delete(mediaId);
    }
  }

  const trim = () =>
    evict().catch((error: unknown) => deps.logger.warn({ err: error }, 'segment cache: eviction failed'));

  async function keep(
    userId: string,
    projectId: string,
    segments: KeptSegment[],
    options: { trim?: boolean } = {},
  ) {
    if (deps.maxBytes <= 0 || segments.length === 0) return;
    for (const segment of segments) {
      await keepOne(userId, projectId, segment).catch((error: unknown) =>
        deps.logger.warn({ err: error, key: segment.key }, 'segment cache: a segment could not be kept'),
      );
    }
    if (options.trim ?? true) await trim();
  }

  return {
    async lookup(userId, projectId, key) {
      const entry = await index.find(userId, projectId, key);
      if (!entry) return null;
      if (!(await store.stat(entry.mediaId))) {
        await index.remove(entry);
        return null;
      }
      await index.touch(userId, projectId, key, now());
      return entry.mediaId;
    },

    keep,
    trim,

    async forgetProject(projectId) {
      const removed = await index.removeProject(projectId);
      await Promise.all(removed.map((entry) => store.delete(entry.mediaId).catch(() => undefined)));
    },
  };
}
