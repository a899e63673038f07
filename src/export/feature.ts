import type { AssetsRepository, ProjectCommands, ProjectsRepository } from '../../actors/index.ts';
import { join } from 'node:path';
import { availableParallelism } from 'node:os';
import {
  type Config,
  resolveFfmpeg,
  startPeriodicTask,
  type PeriodicTask,
  type Feature,
  type Platform,
} from '../platform/index.ts';
import {
  type FilterSupport,
  listFilters,
  missingFeatureFilters,
  outputSize,
  soundFilterReport,
  unsupportedFeatures,
} from '../../workers/index.ts';
import { createExportChildren } from './child-records.ts';
import { createExportPool } from './pool.ts';
import { createExportWorkspaces } from './workspace.ts';
import { createProbePool } from './probe-pool.ts';
import { exportRoute } from './routes.ts';
import { createExportService, type ExportService } from './export-service.ts';
import { createExportQueue } from './export-queue.ts';
import { createExportMetrics } from './export-metrics.ts';
import { createSegmentCache, type SegmentCache } from './segment-cache.ts';
import { createMongoSegmentIndex } from './mongo-segment-index.ts';
import { createSegmentFarm } from './segment-farm.ts';
import { startSegmentEncoder, type SegmentEncoder } from './segment-encoder.ts';
import { ownedProject, videoOf } from '../editor/index.ts';

type ExportConfig = Pick<
  Config,
  | 'exportConcurrency'
  | 'exportPerUser'
  | 'segmentCacheMaxBytes'
  | 'exportSegments'
  | 'exportTimeoutMs'
  | 'exportRatePerMinute'
  | 'exportWorkDir'
  | 'ffmpegPath'
  | 'ffprobePath'
  | 'tuning'
  | 'nodeId'
  | 'natsReplicas'
>;

/** Added niceness of every export ffmpeg: the API answers first, the encode takes what is left. */
const EXPORT_NICENESS = 10;
/** A work folder older than the export time-out by this much belongs to no running export. */
const LEFTOVER_MARGIN_MS = 60_000;
/**
 * How often the projects of the exports in flight are checked to still exist: the event `project.deleted` stops
 * an export at once; this only catches a deletion whose event the node missed (core NATS delivers at most once).
 */
const PROJECT_CHECK_INTERVAL_MS = 5_000;

/**
 * The export (docs/editor.md, Export): the Piscina pool, the per-export work folders, the records of ffmpeg
 * children (a restarted process kills what a killed one left running), and the route. At start-up it asks the
 * resolved ffmpeg which filters it has, and says once what the export will do without.
 */
/** The platform and what the wiring gives the export slice. */
export type ExportPlatform = Platform & {
  repositories: { projects: ProjectsRepository; assets: AssetsRepository };
  /** The project actor's commands (an export is recorded on its project). */
  projects: ProjectCommands;
};

export function exportFeature(
  config: ExportConfig,
  platform: ExportPlatform,
): Feature & { service: ExportService; segments: SegmentCache } {
  const { log, store, clock, mediaUrl } = platform;
  const { projects, assets } = platform.repositories;
  const ffmpeg = resolveFfmpeg({ ffmpegPath: config.ffmpegPath, ffprobePath: config.ffprobePath });
  // Sources are probed from a worker thread: spawning a child forks the whole process, which blocks the
  // thread that spawns for 10–40 ms, and an export probes a dozen files or more.
  const probes = createProbePool({ ffmpegPath: ffmpeg.ffmpeg, ffprobePath: ffmpeg.ffprobe, logger: log });
  const children = createExportChildren({ dir: join(config.exportWorkDir, 'children'), logger: log });
  const workspaces = createExportWorkspaces({
    root: join(config.exportWorkDir, 'exports'),
    store,
    probe: (path) => probes.probe(path),
    leftoverAgeMs: config.exportTimeoutMs + LEFTOVER_MARGIN_MS,
    logger: log,
  });
  const pool = createExportPool({
    concurrency: config.exportConcurrency,
    ffmpegPath: ffmpeg.ffmpeg,
    niceness: EXPORT_NICENESS,
    logger: log,
  });
  const queue = createExportQueue({ slots: config.exportConcurrency, perUser: config.exportPerUser });
  platform.metrics.gauge(
    { name: 'mf_exports_waiting', help: 'Exports waiting for an export worker of this process.', labels: [] },
    () => [[[], queue.counts().waiting]],
  );
  platform.metrics.gauge(
    { name: 'mf_exports_running', help: 'Exports holding an export worker of this process.', labels: [] },
    () => [[[], queue.counts().holding]],
  );
  let filters: FilterSupport = { loudnorm: true, sidechaincompress: true };
  // Every filter the resolved ffmpeg has, once start() has asked it (until then nothing is refused).
  let available: Set<string> | undefined;
  // Encoded segments kept for re-exports, per user and project (segment-cache.ts).
  const segmentIndex = createMongoSegmentIndex(platform.mongo.db);
  const segments = createSegmentCache({
    index: segmentIndex,
    store,
    maxBytes: config.segmentCacheMaxBytes,
    clock,
    logger: log,
  });

  const metrics = createExportMetrics(platform.metrics);
  // Cluster mode: an export's segments are encoded by whichever nodes have a free worker, through the cache
  // (so not when SEGMENT_CACHE_MAX_BYTES is 0: nothing could be handed over).
  const connection = platform.nats?.connection;
  const farmed = config.exportSegments && config.segmentCacheMaxBytes > 0 ? connection : undefined;
  const farm =
    farmed &&
    createSegmentFarm({
      connection: farmed,
      cache: segments,
      lookupMs: config.tuning.exportSegmentLookupMs,
      logger: log,
    });
  let encoder: SegmentEncoder | undefined;

  const service = createExportService({
    commands: platform.projects,
    assets,
    store,
    pool,
    queue,
    events: platform.events,
    projectExists: async (projectId) => (await projects.get(projectId)) !== null,
    workspaces,
    children,
    filters: () => filters,
    unsupported: (plan) => (available ? unsupportedFeatures(plan, available) : []),
    outputSize,
    mediaUrl,
    timeoutMs: config.exportTimeoutMs,
    metrics,
    ...(config.exportSegments && {
      segments: { cache: segments, parallel: availableParallelism(), ...(farm && { farm }) },
    }),
    ratePerMinute: config.exportRatePerMinute,
    clock,
    logger: log,
  });

  let sweep: PeriodicTask | undefined;
  let projectCheck: PeriodicTask | undefined;
  return {
    service,
    segments,
    routes: [
      exportRoute(service, {
        owned: (userId, projectId) => ownedProject(projects, userId, projectId),
        videoOf,
      }),
    ],
    async start() {
      await segmentIndex.ensureIndexes();
      sweep = startPeriodicTask({
        name: 'export rate sweep',
        intervalMs: config.tuning.limiterSweepIntervalMs,
        logger: log,
        run: async () => service.sweepLimits(),
      });
      projectCheck = startPeriodicTask({
        name: 'export project check',
        intervalMs: PROJECT_CHECK_INTERVAL_MS,
        logger: log,
        run: () => service.checkProjects(),
      });
      const killed = await children.killLeftovers();
      if (killed.length > 0) log.warn({ pids: killed }, 'killed ffmpeg left running by a stopped process');
      await workspaces.removeLeftovers();
      if (farmed) {
        encoder = await startSegmentEncoder({
          connection: farmed,
          replicas: config.natsReplicas,
          nodeId: config.nodeId,
          queue,
          slots: config.exportConcurrency,
          pool,
          children,
          store,
          cache: segments,
          workRoot: join(config.exportWorkDir, 'exports'),
          ackWaitMs: config.tuning.exportSegmentAckWaitMs,
          heartbeatMs: config.tuning.exportSegmentHeartbeatMs,
          itemLifetimeMs: config.exportTimeoutMs,
          metrics,
          logger: log,
        });
      }
      available = await listFilters(ffmpeg.ffmpeg);
      const detected = soundFilterReport(available);
      filters = { loudnorm: detected.loudnorm, sidechaincompress: detected.sidechaincompress };
      if (detected.missing.length > 0) {
        const effects = [
          ...(detected.loudnorm ? [] : ['the mix is only limited, not normalised to -14 LUFS']),
          ...(detected.sidechaincompress ? [] : ['music is not ducked under voice']),
        ];
        log.warn(
          { ffmpeg: ffmpeg.ffmpeg, missing: detected.missing },
          `ffmpeg lacks ${detected.missing.join(', ')}: ${effects.join('; ') || 'exports may fail'} (FFMPEG_PATH can name ffmpeg 5 or newer)`,
        );
      }
      const lacking = missingFeatureFilters(available);
      if (lacking.length > 0) {
        log.warn(
          { ffmpeg: ffmpeg.ffmpeg, missing: lacking },
          `ffmpeg lacks ${lacking.join(', ')}: exports with the effects that need them answer 422 unsupported_feature (FFMPEG_PATH can name ffmpeg 5 or newer)`,
        );
      }
    },
    // Segments running here get the same grace as exports, then go back to the queue for other nodes.
    drain: async (graceMs) => {
      await Promise.all([service.drain(graceMs), encoder?.close(graceMs)]);
    },
    async stop() {
      await sweep?.stop();
      await projectCheck?.stop();
      await encoder?.close(0);
      await pool.close();
      await probes.close();
    },
  };
}
