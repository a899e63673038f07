import { createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import type { MediaStore } from '../platform/index.ts';
import {
  canSegment,
  fastPathEligible,
  planSegments,
  soundKey,
  type ExportPlan,
} from '../../workers/index.ts';
import type { KeptSegment, SegmentCache } from './segment-cache.ts';

// A segmented export's segments before and after the render (docs/operator.md, The segment cache): the ones
// the cache has for this user's project are copied into the export's folder, the render encodes the others,
// and those are kept in the cache for the next export. The mixed sound is kept the same way, under its own
// key, so an export after a change to the picture alone does not mix it again.

/** What the render is told (the plan's `segmented`), and which segments it encodes. */
export interface StagedSegments {
  work: { dir: string; reused: string[]; parallel: number };
  /** Picture segments' keys the render encodes (the others were copied from the cache). */
  encoded: string[];
  /** The sound's key (segment-command.ts `soundKey`), and whether it was copied from the cache too. */
  sound: { key: string; reused: boolean };
  /**
   * Keys of `reused` that other nodes of the cluster encoded for this export (segment-farm.ts), copied from the
   * cache like the others but no cache hit of this export's.
   */
  farmed: string[];
}

/**
 * The segments of `plan`, those in the cache copied to `dir`; undefined when the plan renders whole (the fast
 * path copies its clips without encoding; segments.ts says which plans cannot be cut).
 */
export async function stageSegments(
  plan: ExportPlan,
  context: {
    userId: string;
    projectId: string;
    dir: string;
    parallel: number;
    cache: SegmentCache;
    store: MediaStore;
    logger: Logger;
  },
): Promise<StagedSegments | undefined> {
  if (fastPathEligible(plan) || !canSegment(plan)) return undefined;
  const { dir } = context;
  const keys = [...new Set(planSegments(plan).map((segment) => segment.key))];
  const sound = soundKey(plan);
  await mkdir(dir, { recursive: true });
  const [soundFound, ...found] = await copyCached([sound, ...keys], context);
  const reused = keys.filter((_key, i) => found[i]);
  const encoded = keys.filter((_key, i) => !found[i]);
  return {
    work: { dir, reused: soundFound ? [...reused, sound] : reused, parallel: context.parallel },
    encoded,
    sound: { key: sound, reused: soundFound === true },
    farmed: [],
  };
}

/**
 * The picture segments this export found in the cache: its reused keys, less the sound and the segments other
 * nodes encoded for it (counted where they were encoded).
 */
export const pictureCacheHits = (staged: StagedSegments): number =>
  staged.work.reused.length - staged.farmed.length - (staged.sound.reused ? 1 : 0);

/**
 * Copies the cached segments of `keys` to `dir` (each `<key>.mp4`); answers, key by key, whether it was
 * copied (a key not cached, or whose file could not be read, was not).
 */
export function copyCached(
  keys: string[],
  context: {
    userId: string;
    projectId: string;
    dir: string;
    cache: SegmentCache;
    store: MediaStore;
    logger: Logger;
  },
): Promise<boolean[]> {
  const { userId, projectId, dir, cache, store } = context;
  // Looked up and copied at once: each is a few round trips to the index and the store.
  return Promise.all(
    keys.map(async (key) => {
      const mediaId = await cache.lookup(userId, projectId, key);
      if (!mediaId) return false;
      const path = join(dir, `${key}.mp4`);
      try {
        await pipeline(await store.open(mediaId), createWriteStream(path, { flags: 'wx' }));
        return true;
      } catch (error) {
        // Gone or unreadable since the lookup: encoded again, as a miss is.
        context.logger.warn({ err: error, key }, 'segment cache: a cached segment could not be read');
        await rm(path, { force: true });
        return false;
      }
    }),
  );
}

/**
 * Keeps the segments the render encoded, and the sound it mixed, in the cache (one that cannot be kept costs a
 * later re-encode only).
 */
export async function keepSegments(
  staged: StagedSegments,
  context: { userId: string; projectId: string; cache: SegmentCache; logger: Logger },
): Promise<void> {
  const kept: KeptSegment[] = [];
  for (const key of staged.sound.reused ? staged.encoded : [...staged.encoded, staged.sound.key]) {
    const path = join(staged.work.dir, `${key}.mp4`);
    try {
      kept.push({ key, path, bytes: (await stat(path)).size });
    } catch (error) {
      context.logger.warn({ err: error, key }, 'segment cache: an encoded segment is missing');
    }
  }
  await context.cache.keep(context.userId, context.projectId, kept);
}
