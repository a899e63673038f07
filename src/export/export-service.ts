import { dirname, join } from 'node:path';
import { keepSegments, pictureCacheHits, stageSegments, type StagedSegments } from './segment-staging.ts';
import type { SegmentFarm } from './segment-farm.ts';
import { FARM_SHARE, farmSegments, farmsAny, type FarmContext } from './farmed-segments.ts';
import type { SegmentCache } from './segment-cache.ts';
import { failedOutcome, type ExportMetrics } from './export-metrics.ts';
import { writeFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type {
  ProjectCommands,
  AssetRecord,
  AssetsRepository,
  ProjectRecord,
  VideoRecord,
} from '../../actors/index.ts';
import type { ExportRequest } from '../../schemas/editor.ts';
import type { ProjectAspectRatio } from '../../schemas/editor-terms.ts';
import type { ExportQuality } from '../../schemas/timeline-terms.ts';
import {
  AppError,
  newId,
  newMediaId,
  RollingWindowLimiter,
  type Clock,
  type EventBus,
  type MediaStore,
} from '../platform/index.ts';
import type { ExportedVideo } from '../editor/index.ts';
import { exportError, exportErrorCode } from './export-errors.ts';
import {
  exportFiles,
  type ExportChildren,
  type ExportPlan,
  type ExportPool,
  type ExportWorkspace,
  type ExportWorkspaces,
  type FilterSupport,
  type UnsupportedFeature,
} from '../../workers/index.ts';
import { exportPlan, type ExportPlanResult } from './export-plan.ts';
import type { ExportQueue } from './export-queue.ts';
import { storedExport, type ExportedFrom } from './export-cache.ts';
import { startStaging, type Staging } from './export-staging.ts';
import {
  createExportRenderer,
  runFailure,
  timeoutMessage,
  type ExportRenderer,
  type Rendered,
} from './export-render.ts';
import { progressAnnouncer, type ProgressAnnouncer } from './export-progress.ts';

// The export call (docs/editor.md, Export): the timeline of one video, resolved against its staged
// and probed sources, rendered by the pool, stored, and added to the library as an asset — announced through
// the project's actor as `export.*` events. Synchronous for the caller, but a caller that goes away does not
// stop it: the result still becomes an asset and `export.completed` tells the project's sockets. Deleting the
// project does stop it, on whichever node it runs (docs/editor.md, "Time, concurrency and going away"): the
// export listens for `project.deleted` on the event bus while it lives, and a periodic check of its project
// catches a deletion whose event it missed.

/** The export of one node: exports run here, with their limits and the checks of their projects. */
export interface ExportService {
  /**
   * Exports `video` of `project` (already loaded and owned: 404s are the route's). Order of answers: 400
   * `no_video_clips`, 429 `rate_limited`, then the stored result of an unchanged timeline, else a new export.
   */
  export(
    userId: string,
    project: ProjectRecord,
    video: VideoRecord,
    body: ExportRequest,
  ): Promise<ExportedVideo>;
  /** Forgets the rate windows of users who went quiet (run periodically). */
  sweepLimits(): void;
  /**
   * Stops the exports whose project no longer exists (run periodically): the check behind the
   * `project.deleted` event, for a deletion whose event this node missed.
   */
  checkProjects(): Promise<void>;
  /** Waits for running exports up to `graceMs`, then stops the rest (they answer `export_failed`). */
  drain(graceMs: number): Promise<void>;
}

export interface ExportServiceDeps {
  commands: ProjectCommands;
  assets: AssetsRepository;
  store: MediaStore;
  pool: ExportPool;
  /** Shares the pool's workers between users in turn (EXPORT_PER_USER); sized to the pool. */
  queue: ExportQueue;
  /** Where the project actor announces `project.deleted` to every node. */
  events: EventBus;
  /** Whether the project still exists (the check behind the event). */
  projectExists(projectId: string): Promise<boolean>;
  workspaces: ExportWorkspaces;
  children: ExportChildren;
  /** What the resolved ffmpeg can do (detected at start-up). */
  filters(): FilterSupport;
  /** The effects of a plan the resolved ffmpeg cannot render, each with the filter it lacks (none: empty). */
  unsupported(plan: ExportPlan): UnsupportedFeature[];
  /** The output's size for a video's aspect ratio (short side 720 px, 360 px for a preview). */
  outputSize(aspectRatio: ProjectAspectRatio, quality: ExportQuality): { width: number; height: number };
  mediaUrl(mediaId: string): string;
  /** `EXPORT_TIMEOUT_MS`: queue wait, staging, probing and encoding of one export. */
  timeoutMs: number;
  /** What exports count on /metrics. */
  metrics: ExportMetrics;
  /**
   * Segmented rendering (`EXPORT_SEGMENTS`): the cache of this user's project's segments, and how many
   * segments encode at once; in cluster mode, the farm that has them encoded by whichever node has a free
   * worker. Absent: every export renders its timeline whole.
   */
  segments?: { cache: SegmentCache; parallel: number; farm?: SegmentFarm };
  /** `EXPORT_RATE_PER_MINUTE`, per user and process. */
  ratePerMinute: number;
  clock: Clock;
  logger: Logger;
}

/** One export being run, as `run` hands it over. */
interface ExportJob {
  exportId: string;
  userId: string;
  project: ProjectRecord;
  video: VideoRecord;
  fit: 'fit' | 'fill';
  quality: ExportQuality;
  /** When EXPORT_TIMEOUT_MS runs out (clock time). */
  deadline: number;
  /** The project's assets, read once. */
  library: AssetRecord[];
  /** Aborted once the project is deleted. */
  gone: AbortSignal;
  /** Aborted when the node stops waiting for its exports. */
  stopping: AbortSignal;
}

const OUTPUT_FPS = 30;

/**
 * The export service: the checks and rate limit of a call, the cache of unchanged timelines (export-cache.ts),
 * and the exports running on this node, each run by `exportOnce` until done, failed, deleted or drained.
 */
export function createExportService(deps: ExportServiceDeps): ExportService {
  const limiter = new RollingWindowLimiter(deps.ratePerMinute, deps.clock.now);
  const running = new Set<Promise<unknown>>();
  const stopping = new AbortController();
  const render = createExportRenderer({ ...deps, stopping: stopping.signal });
  /** Each export in flight on this node: its project, and how it is told that the project is gone. */
  const inFlight = new Map<string, { projectId: string; gone: AbortController }>();

  /** Runs one export while listening for its project's deletion (which stops it with a 404). */
  async function run(job: Omit<ExportJob, 'exportId' | 'gone' | 'stopping'>): Promise<ExportedVideo> {
    const exportId = newId('ex', 16);
    const gone = new AbortController();
    // Subscribed before `export.started` is announced: a deletion before that makes the announcement itself
    // answer 404, and one after it is heard here.
    const unsubscribe = deps.events.subscribe(`project.${job.project.id}`, (event) => {
      if (isDeletion(event)) gone.abort();
    });
    inFlight.set(exportId, { projectId: job.project.id, gone });
    try {
      return await exportOnce(deps, render, {
        ...job,
        exportId,
        gone: gone.signal,
        stopping: stopping.signal,
      });
    } finally {
      unsubscribe();
      inFlight.delete(exportId);
    }
  }

  /** One export call: checked, answered from the stored export when the timeline is unchanged, or run. */
  async function exportCall(
    userId: string,
    project: ProjectRecord,
    video: VideoRecord,
    body: ExportRequest,
  ): Promise<{ answer: ExportedVideo; reused: boolean }> {
    if (!project.clips.some((clip) => clip.video_id === video.id && clip.track === 'video')) {
      throw exportError('no_video_clips', 'The video has no clip on its video track');
    }
    const started = deps.clock.now();
    const decision = limiter.hit(userId);
    if (!decision.allowed) {
      throw exportError(
        'rate_limited',
        `At most ${deps.ratePerMinute} exports per minute; try again shortly`,
        undefined,
        { 'retry-after': String(decision.retryAfter) },
      );
    }
    const fit = body.fit ?? 'fit';
    const quality = body.quality ?? 'final';
    // The project's library, read once: the stored exports and the sources' files.
    const library = await deps.assets.listByProject(project.id);
    const cached = await storedExport(
      library,
      { video_id: video.id, revision: project.revision, fit, quality },
      deps,
    );
    if (cached) return { answer: cached, reused: true };
    const deadline = started + deps.timeoutMs;
    const work = run({ userId, project, video, fit, quality, deadline, library });
    running.add(work);
    void work.catch(() => undefined).finally(() => running.delete(work));
    return { answer: await work, reused: false };
  }

  return {
    async export(userId, project, video, body) {
      const quality = body.quality ?? 'final';
      try {
        const { answer, reused } = await exportCall(userId, project, video, body);
        deps.metrics.answered(quality, reused ? 'reused' : 'completed');
        return answer;
      } catch (error) {
        deps.metrics.answered(quality, failedOutcome(error));
        throw error;
      }
    },

    sweepLimits: () => limiter.sweep(),

    async checkProjects() {
      const projectIds = new Set([...inFlight.values()].map((entry) => entry.projectId));
      for (const projectId of projectIds) {
        if (await deps.projectExists(projectId)) continue;
        for (const entry of inFlight.values()) if (entry.projectId === projectId) entry.gone.abort();
      }
    },

    async drain(graceMs) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...running]),
        new Promise((resolve) => (timer = setTimeout(resolve, graceMs))),
      ]);
      clearTimeout(timer);
      stopping.abort();
      await Promise.allSettled([...running]);
    },
  };
}

type Announced = 'export.started' | 'export.progress' | 'export.failed';

/** Stages, plans, renders, stores and records one export; a failure is announced as `export.failed`. */
async function exportOnce(
  deps: ExportServiceDeps,
  render: ExportRenderer,
  job: ExportJob,
): Promise<ExportedVideo> {
  const { exportId, userId, project, video, fit, quality, deadline, gone } = job;
  const log = deps.logger.child({ export_id: exportId, project_id: project.id, video_id: video.id });
  const announce = (type: Announced, data: object) =>
    deps.commands.export_event(project.id, {
      op_id: `${exportId}:${type}:${newId('op', 8)}`,
      video_id: video.id,
      event: type,
      data: { export_id: exportId, ...data },
    });
  await announce('export.started', {});
  const progress = progressAnnouncer((fraction) => announce('export.progress', { fraction }), deps.clock);
  let workspace: ExportWorkspace | undefined;
  let staging: Staging | undefined;
  let mediaId: string | undefined;
  try {
    workspace = await deps.workspaces.open(exportId);
    staging = startStaging(workspace, project, video, job.library);
    const sources = await beforeDeadline(staging.sources, deadline, deps.clock, gone);
    const size = deps.outputSize(video.aspect_ratio, quality);
    const planned = exportPlan({
      project,
      videoId: video.id,
      sources,
      output: { ...size, fps: OUTPUT_FPS, fit, quality, path: workspace.outputPath },
      filters: deps.filters(),
    });
    if ('error' in planned || planned.videoClipCount === 0) {
      throw exportError('no_video_clips', 'No clip of the video track can be shown');
    }
    const lacking = deps.unsupported(planned.plan);
    if (lacking.length > 0) throw unsupportedFeature(lacking);
    // The words of text clips reach ffmpeg only as files of our own, beside the output (text-graph.ts).
    for (const file of exportFiles(planned.plan)) {
      await writeFile(file.path, file.contents, { flag: 'wx' });
    }
    const cached = deps.segments
      ? await beforeDeadline(
          stageSegments(planned.plan, {
            userId,
            projectId: project.id,
            dir: join(dirname(workspace.outputPath), 'segments'),
            parallel: deps.segments.parallel,
            cache: deps.segments.cache,
            store: deps.store,
            logger: log,
          }),
          deadline,
          deps.clock,
          gone,
        )
      : undefined;
    // In cluster mode the segments the cache lacks are encoded by whichever nodes have a free worker.
    const farm = deps.segments?.farm;
    const { staged, soundMs } =
      cached && farm
        ? await farmBesideSound(cached, render, planned, {
            ...deps.segments!,
            farm,
            store: deps.store,
            exportId,
            userId,
            projectId: project.id,
            deadline,
            gone,
            stopping: job.stopping,
            clock: deps.clock,
            onProgress: progress.report,
            logger: log,
          })
        : { staged: cached, soundMs: 0 };
    const rendering = staged ? { ...planned, plan: { ...planned.plan, segmented: staged.work } } : planned;
    const farmed = (staged?.farmed.length ?? 0) > 0;
    const { encodeMs } = throwIfFailed(
      await render(
        userId,
        rendering,
        deadline,
        gone,
        farmed ? (fraction) => progress.report(FARM_SHARE + (1 - FARM_SHARE) * fraction) : progress.report,
      ),
      gone,
      log,
    );
    const output = await workspace.probeOutput();
    const durationSec = output.durationSec ?? 0;
    deps.metrics.encoded(quality, (encodeMs + soundMs) / 1000, durationSec);
    if (staged && deps.segments) {
      // Segments other nodes encoded for this export are counted where they were encoded.
      deps.metrics.segments(staged.encoded.length, pictureCacheHits(staged));
      deps.metrics.sound(staged.sound.reused);
      await keepSegments(staged, { userId, projectId: project.id, cache: deps.segments.cache, logger: log });
    }
    mediaId = newMediaId('mp4');
    await workspace.storeOutput(mediaId);
    await progress.settled();
    const recorded = await recordExport(deps.commands, job, { mediaId, durationSec, size, planned });
    log.info({ duration_sec: durationSec, asset_id: recorded.asset_id }, 'export completed');
    return recorded;
  } catch (error) {
    throw await exportFailed(error, { store: deps.store, log, mediaId, progress, announce });
  } finally {
    if (workspace) await removeWhenStaged(workspace, staging, log);
  }
}

/** Adds the stored output to the project's library (`export.completed`), and answers it. */
async function recordExport(
  commands: ProjectCommands,
  job: ExportJob,
  output: {
    mediaId: string;
    durationSec: number;
    size: { width: number; height: number };
    planned: ExportPlanResult;
  },
): Promise<ExportedVideo> {
  const { exportId, project, video, fit, quality } = job;
  const { durationSec, planned } = output;
  const exportedFrom: ExportedFrom = { video_id: video.id, revision: project.revision, fit, quality };
  const { asset } = await commands.export_completed(project.id, {
    op_id: `${exportId}:completed`,
    video_id: video.id,
    export_id: exportId,
    duration_sec: durationSec,
    asset: {
      id: newId('va', 16),
      user_id: job.userId,
      media_id: output.mediaId,
      metadata: {
        name: `${video.name} (export)`,
        duration_sec: durationSec,
        width: output.size.width,
        height: output.size.height,
        exported_from: exportedFrom,
        quality,
        video_clip_count: planned.videoClipCount,
        audio_overlay_count: planned.audioOverlayCount,
      },
    },
  });
  return {
    asset_id: asset.id,
    video_url: asset.url,
    duration_sec: durationSec,
    video_clip_count: planned.videoClipCount,
    audio_overlay_count: planned.audioOverlayCount,
  };
}

/**
 * A failed export's answer, once it is cleaned up after: a stored output that never became an asset removed,
 * and `export.failed` announced after the last progress (except for a deleted project: no one is left to tell).
 */
async function exportFailed(
  error: unknown,
  context: {
    store: MediaStore;
    log: Logger;
    mediaId: string | undefined;
    progress: ProgressAnnouncer;
    announce(type: Announced, data: object): Promise<unknown>;
  },
): Promise<AppError> {
  const { log } = context;
  const failure = asExportError(error);
  if (failure.status >= 500) log.error({ err: error }, 'export failed');
  // A stored output that never became an asset is no one's: remove it.
  if (context.mediaId) await context.store.delete(context.mediaId).catch(() => undefined);
  await context.progress.settled();
  if (failure.status === 404) {
    // The project is gone, and its events with it: there is no one to tell.
    log.info('export stopped: the project was deleted');
    return failure;
  }
  await context
    .announce('export.failed', { error: exportErrorCode(failure) ?? failure.message })
    .catch((announceError: unknown) => log.warn({ err: announceError }, 'export.failed not announced'));
  return failure;
}

/**
 * Removes the export's work folder once its staging has settled (removed now, a staging cut short by the
 * deadline would land its last copy in it and keep it), without holding the answer.
 */
function removeWhenStaged(
  workspace: ExportWorkspace,
  staging: Staging | undefined,
  log: Logger,
): Promise<void> {
  const remove = () =>
    workspace.remove().catch((error: unknown) => log.warn({ err: error }, 'export folder kept'));
  if (!staging || staging.settled) return remove();
  void staging.sources.then(remove, remove);
  return Promise.resolve();
}

/** Every failure as one of the export's answers: its own codes, a 404 as it is, anything else export_failed. */
function asExportError(error: unknown): AppError {
  if (exportErrorCode(error)) return error as AppError;
  if (error instanceof AppError && (error.code === 'not_found' || error.code === 'unavailable')) return error;
  return exportError('export_failed', 'The export could not be completed', error);
}

/**
 * The answer of an export that needs a filter the resolved ffmpeg lacks (docs/errors.md): 422, naming each
 * effect and its filter.
 */
function unsupportedFeature(lacking: UnsupportedFeature[]): AppError {
  const needs = {
    transitions: 'transitions need',
    text: 'text clips need',
    motion: 'motion needs',
    speed: 'speed changes need',
  } satisfies Record<UnsupportedFeature['feature'], string>;
  const named = lacking.map(({ feature, filter }) => `the ${filter} filter, which ${needs[feature]}`);
  return exportError(
    'unsupported_feature',
    `The server's ffmpeg lacks ${named.join(', and ')}: remove those effects, or ask the operator for a full ` +
      'ffmpeg 5 or newer',
  );
}

/** The answer of an export whose project was deleted while it ran: the route's own 404. */
const projectGone = () => new AppError('not_found', 'Project not found');

/**
 * The segments the cache lacks encoded by the cluster (`farmSegments`) while this node mixes the sound, when it
 * is not cached, as a task of its own (`soundOnly`): the join then only joins, and the sound, one step after the
 * other on one core, is off the export's critical path. Answers the staged segments, the sound among the reused
 * ones once it is made, and the time the sound held a worker.
 */
async function farmBesideSound(
  cached: StagedSegments,
  render: ExportRenderer,
  planned: ExportPlanResult,
  context: Omit<FarmContext, 'plan'>,
): Promise<{ staged: StagedSegments; soundMs: number }> {
  const { gone, logger: log } = context;
  const stopSound = new AbortController();
  const mixing =
    farmsAny(cached, planned.plan) && !cached.sound.reused
      ? render(
          context.userId,
          { ...planned, plan: { ...planned.plan, segmented: { ...cached.work, soundOnly: true } } },
          context.deadline,
          AbortSignal.any([gone, stopSound.signal]),
          () => {},
        )
          // Said when it is done, which may be before the cluster's segments are.
          .then((mixed) => {
            if (mixed.result.ok)
              log.info({ encode_ms: mixed.encodeMs }, 'export sound mixed beside the cluster');
            return mixed;
          })
      : undefined;
  let staged: StagedSegments;
  try {
    staged = await farmSegments(cached, { ...context, plan: planned.plan });
  } catch (error) {
    // Its ffmpeg is gone before the export's folder is.
    stopSound.abort();
    await mixing?.catch(() => undefined);
    throw error;
  }
  if (!mixing) return { staged, soundMs: 0 };
  const soundMs = throwIfFailed(await mixing, gone, log).encodeMs;
  return {
    staged: { ...staged, work: { ...staged.work, reused: [...staged.work.reused, staged.sound.key] } },
    soundMs,
  };
}

/** `rendered` when ffmpeg succeeded; else throws the export's error (a 404 when the project was deleted). */
function throwIfFailed(rendered: Rendered, gone: AbortSignal, log: Logger): Rendered {
  const { result, encoding, late } = rendered;
  if (result.ok) return rendered;
  if (gone.aborted && !late) throw projectGone();
  if (result.reason === 'exit') log.error({ ffmpeg: result }, 'export ffmpeg failed');
  throw runFailure(result, encoding, late);
}

/** Whether a project event is its deletion (the bus carries the project's events as plain JSON). */
const isDeletion = (event: unknown): boolean =>
  typeof event === 'object' && event !== null && (event as { type?: unknown }).type === 'project.deleted';

/**
 * `work`, or export_timeout once the deadline passes (staging and probing count: docs/editor.md), or the 404
 * once `gone` aborts.
 */
async function beforeDeadline<T>(
  work: Promise<T>,
  deadline: number,
  clock: Clock,
  gone: AbortSignal,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onGone: (() => void) | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(exportError('export_timeout', timeoutMessage('before encoding started'))),
      Math.max(0, deadline - clock.now()),
    );
    onGone = () => reject(projectGone());
    if (gone.aborted) onGone();
    else gone.addEventListener('abort', onGone, { once: true });
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
    gone.removeEventListener('abort', onGone!);
    // A late stage still settles; its rejection must not go unhandled.
    work.catch(() => undefined);
  }
}
