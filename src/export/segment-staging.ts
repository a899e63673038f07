import { createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import type { MediaStore } from '../platform/index.ts';
import { canSegment, fastPathEligible, planSegments, type ExportPlan } from '../../workers/index.ts';
import type { SegmentCache } from './segment-cache.ts';

// A segmented export's segments before and after the render (docs/editor.md, Export: segments): the ones the
// cache has for this user's project are copied into the export's folder, the render encodes the others, and
// those are kept in the cache for the next export.

/** What the render is told (the plan's `segmented`), and which segments it encodes. */
export interface StagedSegments {
  work: { dir: string; reused: string[]; parallel: number };
  /** Keys the render encodes (the others were copied from the cache). */
  encoded: string[];
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
  const { userId, projectId, dir, cache, store } = context;
  const keys = [...new Set(planSegments(plan).map((segment) => segment.key))];
  await mkdir(dir, { recursive: true });
  const reused: string[] = [];
  const encoded: string[] = [];
  for (const key of keys) {
    const mediaId = await cache.lookup(userId, projectId, key);
    const path = join(dir, `${key}.mp4`);
    if (mediaId) {
      try {
        await pipeline(await store.open(mediaId), createWriteStream(path, { flags: 'wx' }));
        reused.push(key);
        continue;
      } catch (error) {
        // Gone or unreadable since the lookup: encoded again, as a miss is.
        context.logger.warn({ err: error, key }, 'segment cache: a cached segment could not be read');
        await rm(path, { force: true });
      }
    }
    encoded.push(key);
  }
  return { work: { dir, reused, parallel: context.parallel }, encoded };
}

/** Keeps the segments the render encoded in the cache (a failure to keep one costs a later re-encode only). */
export async function keepSegments(
  staged: StagedSegments,
  context: { userId: string; projectId: string; cache: SegmentCache; logger: Logger },
): Promise<void> {
  for (const key of staged.encoded) {
    const path = join(staged.work.dir, `${key}.mp4`);
    try {
      const { size } = await stat(path);
      await context.cache.keep(context.userId, context.projectId, key, path, size);
    } catch (error) {
      context.logger.warn({ err: error, key }, 'segment cache: an encoded segment could not be kept');
    }
  }
}
