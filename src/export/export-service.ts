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
import {
  AppError,
  newId,
  newMediaId,
  RollingWindowLimiter,
  type Clock,
  type EventBus,
  type MediaStore,
} from '../platform/index.ts';
import { exportError, exportErrorCode } from './export-errors.ts';
import type {
  ExportChildren,
  ExportPool,
  ExportSource,
  ExportWorkspace,
  ExportWorkspaces,
  FilterSupport,
  RunResult,
} from '../../workers/index.ts';
import { exportPlan, type ExportPlanResult } from './export-plan.ts';
import type { ExportQueue } from './export-queue.ts';

// The export call (docs/editor.md, Export): the timeline of one video, resolved against its staged and probed
// sources, rendered by the pool, stored, and added to the library as an asset — announced through the
// project's actor as `export.*` events. Synchronous for the caller, but a caller that goes away does not stop
// it: the result still becomes an asset and `export.completed` tells the project's sockets. Deleting the
// project does stop it, on whichever node it runs (docs/editor.md, "Time, concurrency and going away"): the
// export listens for `project.deleted` on the event bus while it lives, and a periodic check of its project
// catches a deletion whose event it missed.

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
  /** The output's size for a video's aspect ratio (short side 720 px). */
  outputSize(aspectRatio: ProjectAspectRatio): { width: number; height: number };
  mediaUrl(mediaId: string): string;
  /** `EXPORT_TIMEOUT_MS`: queue wait, staging, probing and encoding of one export. */
  timeoutMs: number;
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
  /** When EXPORT_TIMEOUT_MS runs out (clock time). */
  deadline: number;
  /** The project's assets, read once. */
  library: AssetRecord[];
  /** Aborted once the project is deleted. */
  gone: AbortSignal;
}

/** The 200 body (docs/editor.md, Routes). */
export interface ExportResponse {
  asset_id: string;
  video_url: string;
  duration_sec: number;
  video_clip_count: number;
  audio_overlay_count: number;
}

const OUTPUT_FPS = 30;
/** Sources copied and probed at once. */
const STAGING_CONCURRENCY = 3;
/** `export.progress` at most this often, and only for this much more done: each is one write of the project. */
const PROGRESS_EVERY_MS = 1000;
const PROGRESS_STEP = 0.02;

/** What an export asset's metadata records: where it came from and what the answer said. */
interface ExportedFrom {
  video_id: string;
  revision: number;
  fit: 'fit' | 'fill';
}

const isExportOf = (asset: AssetRecord, wanted: ExportedFrom): boolean => {
  const from = asset.metadata.exported_from as Partial<ExportedFrom> | undefined;
  return (
    asset.source === 'export' &&
    from?.video_id === wanted.video_id &&
    from.revision === wanted.revision &&
    from.fit === wanted.fit
  );
};

export function createExportService(deps: ExportServiceDeps) {
  const { commands, logger } = deps;
  const limiter = new RollingWindowLimiter(deps.ratePerMinute, deps.clock.now);
  const running = new Set<Promise<unknown>>();
  const stopping = new AbortController();
  /** Each export in flight on this node: its project, and how it is told that the project is gone. */
  const inFlight = new Map<string, { projectId: string; gone: AbortController }>();

  /** A stored export of exactly this timeline, if there is one whose file is still there. */
  async function stored(library: AssetRecord[], wanted: ExportedFrom): Promise<ExportResponse | undefined> {
    for (const asset of [...library].reverse()) {
      if (!isExportOf(asset, wanted) || !(await deps.store.stat(asset.media_id))) continue;
      const { metadata } = asset;
      return {
        asset_id: asset.id,
        video_url: deps.mediaUrl(asset.media_id),
        duration_sec: Number(metadata.duration_sec),
        video_clip_count: Number(metadata.video_clip_count),
        audio_overlay_count: Number(metadata.audio_overlay_count),
      };
    }
    return undefined;
  }

  /** Stages every source the video's clips use; clips whose asset is gone are left out by the plan. */
  async function stageSources(
    workspace: ExportWorkspace,
    project: ProjectRecord,
    video: VideoRecord,
    library: AssetRecord[],
  ): Promise<Map<string, ExportSource>> {
    const assets = new Map(library.map((asset) => [asset.id, asset]));
    const assetIds = [
      ...new Set(project.clips.filter((clip) => clip.video_id === video.id).map((c) => c.asset_id)),
    ];
    const sources = new Map<string, ExportSource>();
    // A few at a time: each is a copy and an ffprobe, mostly waiting, and a timeline holds a few dozen at most.
    const queue = [...assetIds];
    const stageNext = async (): Promise<void> => {
      for (let assetId = queue.shift(); assetId !== undefined; assetId = queue.shift()) {
        const asset = assets.get(assetId);
        if (!asset) continue;
        sources.set(assetId, await workspace.stage(asset.media_id));
      }
    };
    await Promise.all(Array.from({ length: STAGING_CONCURRENCY }, stageNext));
    return sources;
  }

  /**
   * Waits for the user's turn at a worker, then renders the plan, all within the deadline; answers how ffmpeg
   * ended, and whether it had started. `gone` (the project was deleted) stops either step at once.
   */
  async function render(
    userId: string,
    planned: ExportPlanResult,
    deadline: number,
    gone: AbortSignal,
    onProgress: (fraction: number) => void,
  ): Promise<{ result: RunResult; encoding: boolean; late: boolean }> {
    const remaining = deadline - deps.clock.now();
    if (remaining <= 0) return { result: timedOut, encoding: false, late: true };
    const abort = new AbortController();
    // Queue wait counts against the deadline too, so the time-out is ours, not only the worker's.
    // Whether it struck is remembered, not read back from the clock: a timer may fire a millisecond
    // before the wall clock reaches the deadline.
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      abort.abort();
    }, remaining);
    const onStop = () => abort.abort();
    stopping.signal.addEventListener('abort', onStop);
    gone.addEventListener('abort', onStop);
    if (gone.aborted) abort.abort();
    let encoding = false;
    let release: (() => void) | undefined;
    try {
      try {
        release = await deps.queue.acquire(userId, abort.signal);
      } catch {
        // Stopped while waiting for a worker: the caller tells why from `late` and its own signals.
        return { result: stoppedWaiting, encoding, late };
      }
      const result = await deps.pool.run(planned.plan, {
        timeoutMs: Math.max(1, deadline - deps.clock.now()),
        signal: abort.signal,
        onProgress,
        onPid: (pid, alive) => {
          if (alive) {
            encoding = true;
            deps.children.started(pid);
          } else deps.children.ended(pid);
        },
      });
      return { result, encoding, late };
    } finally {
      release?.();
      clearTimeout(timer);
      stopping.signal.removeEventListener('abort', onStop);
      gone.removeEventListener('abort', onStop);
    }
  }

  /** The export's error for an ffmpeg run that did not succeed. */
  function runFailure(result: Exclude<RunResult, { ok: true }>, encoding: boolean, late: boolean) {
    if (result.reason === 'timeout' || (result.reason === 'aborted' && late)) {
      return encoding
        ? exportError('ffmpeg_timeout', timeoutMessage('while encoding'), result)
        : exportError('export_timeout', timeoutMessage('before encoding started'), result);
    }
    if (result.reason === 'exit') {
      return exportError('ffmpeg_failed', 'The export could not be encoded from these sources', result);
    }
    return exportError('export_failed', 'The export could not be completed', result);
  }

  /** Runs one export while listening for its project's deletion (which stops it with a 404). */
  async function run(
    userId: string,
    project: ProjectRecord,
    video: VideoRecord,
    fit: 'fit' | 'fill',
    deadline: number,
    library: AssetRecord[],
  ): Promise<ExportResponse> {
    const exportId = newId('ex', 16);
    const gone = new AbortController();
    // Subscribed before `export.started` is announced: a deletion before that makes the announcement itself
    // answer 404, and one after it is heard here.
    const unsubscribe = deps.events.subscribe(`project.${project.id}`, (event) => {
      if (isDeletion(event)) gone.abort();
    });
    inFlight.set(exportId, { projectId: project.id, gone });
    try {
      return await exportOnce({
        exportId,
        userId,
        project,
        video,
        fit,
        deadline,
        library,
        gone: gone.signal,
      });
    } finally {
      unsubscribe();
      inFlight.delete(exportId);
    }
  }

  async function exportOnce(job: ExportJob): Promise<ExportResponse> {
    const { exportId, userId, project, video, fit, deadline, library, gone } = job;
    const log = logger.child({ export_id: exportId, project_id: project.id, video_id: video.id });
    const announce = (type: 'export.started' | 'export.progress' | 'export.failed', data: object) =>
      commands.export_event(project.id, {
        op_id: `${exportId}:${type}:${newId('op', 8)}`,
        video_id: video.id,
        event: type,
        data: { export_id: exportId, ...data },
      });
    await announce('export.started', {});
    const progress = progressAnnouncer((fraction) => announce('export.progress', { fraction }), deps.clock);
    let workspace: ExportWorkspace | undefined;
    let mediaId: string | undefined;
    let staging: Promise<unknown> | undefined;
    let stagingSettled = true;
    try {
      workspace = await deps.workspaces.open(exportId);
      const staged = stageSources(workspace, project, video, library);
      staging = staged;
      stagingSettled = false;
      void staged.then(
        () => (stagingSettled = true),
        () => (stagingSettled = true),
      );
      const sources = await beforeDeadline(staged, deadline, deps.clock, gone);
      const { width, height } = deps.outputSize(video.aspect_ratio);
      const planned = exportPlan({
        project,
        videoId: video.id,
        sources,
        output: { width, height, fps: OUTPUT_FPS, fit, path: workspace.outputPath },
        filters: deps.filters(),
      });
      if ('error' in planned || planned.videoClipCount === 0) {
        throw exportError('no_video_clips', 'No clip of the video track can be shown');
      }
      const { result, encoding, late } = await render(userId, planned, deadline, gone, progress.report);
      if (!result.ok) {
        if (gone.aborted && !late) throw projectGone();
        if (result.reason === 'exit') log.error({ ffmpeg: result }, 'export ffmpeg failed');
        throw runFailure(result, encoding, late);
      }
      const output = await workspace.probeOutput();
      const durationSec = output.durationSec ?? 0;
      mediaId = newMediaId('mp4');
      await workspace.storeOutput(mediaId);
      await progress.settled();
      const exportedFrom: ExportedFrom = { video_id: video.id, revision: project.revision, fit };
      const { asset } = await commands.export_completed(project.id, {
        op_id: `${exportId}:completed`,
        video_id: video.id,
        export_id: exportId,
        duration_sec: durationSec,
        asset: {
          id: newId('va', 16),
          user_id: userId,
          media_id: mediaId,
          metadata: {
            name: `${video.name} (export)`,
            duration_sec: durationSec,
            width,
            height,
            exported_from: exportedFrom,
            video_clip_count: planned.videoClipCount,
            audio_overlay_count: planned.audioOverlayCount,
          },
        },
      });
      log.info({ duration_sec: durationSec, asset_id: asset.id }, 'export completed');
      return {
        asset_id: asset.id,
        video_url: asset.url,
        duration_sec: durationSec,
        video_clip_count: planned.videoClipCount,
        audio_overlay_count: planned.audioOverlayCount,
      };
    } catch (error) {
      const failure = asExportError(error);
      if (failure.status >= 500) log.error({ err: error }, 'export failed');
      // A stored output that never became an asset is no one's: remove it.
      if (mediaId) await deps.store.delete(mediaId).catch(() => undefined);
      await progress.settled();
      if (failure.status === 404) {
        // The project is gone, and its events with it: there is no one to tell.
        log.info('export stopped: the project was deleted');
        throw failure;
      }
      await announce('export.failed', { error: exportErrorCode(failure) ?? failure.message }).catch(
        (announceError: unknown) => log.warn({ err: announceError }, 'export.failed not announced'),
      );
      throw failure;
    } finally {
      if (workspace) {
        const folder = workspace;
        const remove = () =>
          folder.remove().catch((error: unknown) => log.warn({ err: error }, 'export folder kept'));
        // A staging cut short by the deadline still writes into the folder: the folder goes once the staging
        // has settled (removed now, its last copy would land in it and keep it), without holding the answer.
        if (stagingSettled) await remove();
        else void staging!.then(remove, remove);
      }
    }
  }

  return {
    /**
     * Exports `video` of `project` (already loaded and owned: 404s are the route's). Order of answers: 400
     * `no_video_clips`, 429 `rate_limited`, then the stored result of an unchanged timeline, else a new export.
     */
    async export(
      userId: string,
      project: ProjectRecord,
      video: VideoRecord,
      body: ExportRequest,
    ): Promise<ExportResponse> {
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
      // The project's library, read once: the stored exports and the sources' files.
      const library = await deps.assets.listByProject(project.id);
      const cached = await stored(library, { video_id: video.id, revision: project.revision, fit });
      if (cached) return cached;
      const work = run(userId, project, video, fit, started + deps.timeoutMs, library);
      running.add(work);
      void work.catch(() => undefined).finally(() => running.delete(work));
      return work;
    },

    /** Forgets the rate windows of users who went quiet (run periodically). */
    sweepLimits: () => limiter.sweep(),

    /**
     * Stops the exports whose project no longer exists (run periodically): the check behind the
     * `project.deleted` event, for a deletion whose event this node missed.
     */
    async checkProjects(): Promise<void> {
      const projectIds = new Set([...inFlight.values()].map((entry) => entry.projectId));
      for (const projectId of projectIds) {
        if (await deps.projectExists(projectId)) continue;
        for (const entry of inFlight.values()) if (entry.projectId === projectId) entry.gone.abort();
      }
    },

    /** Waits for running exports up to `graceMs`, then stops the rest (they answer `export_failed`). */
    async drain(graceMs: number): Promise<void> {
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

export type ExportService = ReturnType<typeof createExportService>;

const timedOut: RunResult = { ok: false, reason: 'timeout', code: null, signal: null, stderrTail: '' };
const stoppedWaiting: RunResult = { ok: false, reason: 'aborted', code: null, signal: null, stderrTail: '' };

const timeoutMessage = (when: string) =>
  `The export ran out of time ${when}; split the video into shorter ones or try again later`;

/** Every failure as one of the export's answers: its own codes, a 404 as it is, anything else export_failed. */
function asExportError(error: unknown): AppError {
  if (exportErrorCode(error)) return error as AppError;
  if (error instanceof AppError && (error.code === 'not_found' || error.code === 'unavailable')) return error;
  return exportError('export_failed', 'The export could not be completed', error);
}

/** The answer of an export whose project was deleted while it ran: the route's own 404. */
const projectGone = () => new AppError('not_found', 'Project not found');

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

/**
 * Announces progress at most every PROGRESS_EVERY_MS and PROGRESS_STEP, one announcement in flight at a time
 * (a slow actor skips fractions rather than queueing them); `settled` waits for the last one, so
 * `export.completed` and `export.failed` always come after every `export.progress`.
 */
function progressAnnouncer(send: (fraction: number) => Promise<unknown>, clock: Clock) {
  let last = 0;
  let lastAt = 0;
  let inFlight: Promise<unknown> = Promise.resolve();
  let busy = false;
  return {
    report(fraction: number) {
      const now = clock.now();
      if (busy || fraction - last < PROGRESS_STEP || now - lastAt < PROGRESS_EVERY_MS || fraction >= 1)
        return;
      last = fraction;
      lastAt = now;
      busy = true;
      inFlight = send(Math.round(fraction * 1000) / 1000)
        .catch(() => undefined)
        .finally(() => (busy = false));
    },
    settled: () => inFlight,
  };
}
