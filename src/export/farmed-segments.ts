import type { Logger } from 'pino';
import { AppError, type Clock, type MediaStore } from '../platform/index.ts';
import type { ExportPlan } from '../../workers/index.ts';
import { exportError } from './export-errors.ts';
import { timeoutMessage } from './export-render.ts';
import type { SegmentCache } from './segment-cache.ts';
import type { SegmentFarm } from './segment-farm.ts';
import { portablePlan, travels } from './segment-item.ts';
import { copyCached, type StagedSegments } from './segment-staging.ts';

// An export's missing segments encoded across the cluster (docs/operator.md, The segment cache), between the
// staging of its cached segments and its render: the farm has every node with a free worker encode them into
// the cache, and they are then copied into the export's folder like any cache hit, so the render only mixes
// the sound and joins. A segment the cache lost before the copy (evicted by a bound smaller than the export)
// stays for the render to encode here, as without a cluster.

/** The share of an export's progress its farmed segments make up (the render's sound and join the rest). */
export const FARM_SHARE = 0.8;

export interface FarmContext {
  farm: SegmentFarm;
  cache: SegmentCache;
  store: MediaStore;
  exportId: string;
  userId: string;
  projectId: string;
  plan: ExportPlan;
  deadline: number;
  /** The project was deleted: the wait ends with its 404. */
  gone: AbortSignal;
  /** The node stops waiting for its exports. */
  stopping: AbortSignal;
  clock: Clock;
  /** The farm's share of the progress, 0..FARM_SHARE. */
  onProgress(fraction: number): void;
  logger: Logger;
}

/** Whether `farmSegments` has the cluster encode anything: a segment is missing, and the plan can travel. */
export const farmsAny = (staged: StagedSegments, plan: ExportPlan): boolean =>
  staged.encoded.length > 0 && travels(plan);

/**
 * `staged` with the segments it lacked encoded by the cluster and copied in: counted in `reused` and in
 * `farmed`, no longer in `encoded`. Unchanged when nothing is missing, or when the plan cannot travel.
 */
export async function farmSegments(staged: StagedSegments, context: FarmContext): Promise<StagedSegments> {
  if (!farmsAny(staged, context.plan)) return staged;
  const plan = portablePlan(context.plan)!;
  const { exportId, userId, projectId, clock } = context;
  const keys = staged.encoded;
  const abort = new AbortController();
  let encoding = false;
  const timer = setTimeout(
    () =>
      abort.abort(
        encoding
          ? exportError('ffmpeg_timeout', timeoutMessage('while encoding'))
          : exportError('export_timeout', timeoutMessage('before encoding started')),
      ),
    Math.max(0, context.deadline - clock.now()),
  );
  const onGone = () => abort.abort(new AppError('not_found', 'Project not found'));
  const onStopping = () => abort.abort(exportError('export_failed', 'The export could not be completed'));
  if (context.gone.aborted) onGone();
  context.gone.addEventListener('abort', onGone, { once: true });
  context.stopping.addEventListener('abort', onStopping, { once: true });
  let done = 0;
  try {
    await context.farm.encode({
      exportId,
      userId,
      projectId,
      plan,
      keys,
      deadline: context.deadline,
      signal: abort.signal,
      onNews(news) {
        if (news.state === 'started') encoding = true;
        if (news.state === 'encoded') context.onProgress((FARM_SHARE * ++done) / keys.length);
      },
    });
  } finally {
    clearTimeout(timer);
    context.gone.removeEventListener('abort', onGone);
    context.stopping.removeEventListener('abort', onStopping);
  }
  const copied = await copyCached(keys, { ...context, dir: staged.work.dir });
  // The nodes kept them without trimming (one bound check per export, not per segment); copied, they may go.
  await context.cache.trim();
  const farmed = keys.filter((_key, i) => copied[i]);
  const encoded = keys.filter((_key, i) => !copied[i]);
  if (encoded.length > 0) {
    context.logger.warn(
      { keys: encoded },
      'segments encoded by the cluster left the cache; encoding them here',
    );
  }
  return { ...staged, work: { ...staged.work, reused: [...staged.work.reused, ...farmed] }, encoded, farmed };
}
