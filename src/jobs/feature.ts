import {
  type Config,
  newMediaId,
  mediaLimits,
  guardedGet,
  resolveFfmpeg,
  startPeriodicTask,
  type PeriodicTask,
  type Feature,
  createScheduler,
  type Platform,
  type DomainEvents,
} from '../platform/index.ts';
import type { MediaProvider } from './ports/media-provider.ts';
import type { JobRecord, JobsRepository } from './ports/jobs-repository.ts';
import type { UsersRepository } from '../accounts/index.ts';
import type { UserCredits } from '../../actors/index.ts';
import { createFalProvider } from './providers/fal.ts';
import { createSandboxProvider } from './providers/sandbox/provider.ts';
import { createSandboxRenderer } from './providers/sandbox/render.ts';
import { createJobsService, type JobsService } from './jobs-service.ts';
import { createJobCompletion } from './job-completion.ts';
import { createJobSweeper } from './job-sweeper.ts';
import { createJobOutbox, type JobEvents } from './job-outbox.ts';
import { createInboundImages, INBOUND_IMAGE_MAX_BYTES, isAcceptedImageUrl } from './inbound-images.ts';
import { jobRoutes } from './routes.ts';
import { mediaRoute } from './media-route.ts';

type JobsConfig = Pick<
  Config,
  | 'provider'
  | 'fal'
  | 'providerEndpoints'
  | 'providerTimeoutMs'
  | 'providerPollIntervalMs'
  | 'ffmpegPath'
  | 'ffprobePath'
  | 'sandboxRenderConcurrency'
  | 'sandboxVideoMs'
  | 'sandboxImageMs'
  | 'webhookAllowPrivate'
  | 'imageMaxPixels'
  | 'jobRetentionDays'
  | 'jobSweepIntervalMs'
  | 'submitAbandonedMs'
  | 'natsReplicas'
  | 'tuning'
>;

/** The platform and what the wiring gives the jobs slice. */
export type JobsPlatform = Platform & {
  repositories: { jobs: JobsRepository; users: UsersRepository };
  /** The user actor's client: every charge and refund. */
  credits: UserCredits;
  /** Where the slice tells that a job ended (`job.finished`); the webhooks and the editor subscribe. */
  jobEvents: DomainEvents<JobEvents>;
};

/**
 * Generation jobs (docs/api.md): the provider, submits, completion polling (the `MF_JOBS` queue in cluster
 * mode, timers otherwise), the sweeper, `/media`, and the ended-job outbox that announces every job that
 * ends (`job.finished`) until its subscribers have all handled it.
 */
export async function jobsFeature(
  config: JobsConfig,
  platform: JobsPlatform,
): Promise<Feature & { service: JobsService }> {
  const { clock, log, store, credits, baseUrl: publicBaseUrl } = platform;
  const { jobs, users } = platform.repositories;
  const pollIntervalMs = config.providerPollIntervalMs;
  const provider = await createProvider(config, platform);
  const outbox = createJobOutbox({ jobs, events: platform.jobEvents, clock, logger: log });
  // Not awaited: the job's end stands whatever its subscribers do; its outbox flag covers their failures.
  const onFinished = (job: JobRecord) => void outbox.announce(job);
  const completion = createJobCompletion({
    jobs,
    credits,
    provider,
    store,
    clock,
    logger: log,
    publicBaseUrl,
    newMediaId,
    onFinished,
  });
  const poller = await createScheduler({
    nats: platform.nats?.connection,
    replicas: config.natsReplicas,
    queue: {
      stream: 'MF_JOBS',
      subject: 'mf.jobs.poll',
      consumer: 'mf_job_pollers',
      itemLifetimeMs: config.providerTimeoutMs,
      maxPending: config.tuning.maxProcessingJobs,
      ackWaitMs: config.tuning.jobPollAckWaitMs,
      concurrency: config.tuning.jobPollsPerNode,
    },
    work: async (jobId) => ((await completion.poll(jobId)) === 'done' ? 'done' : pollIntervalMs),
    retryAfterErrorMs: pollIntervalMs,
    label: 'job poll',
    logger: log,
  });
  const service = createJobsService({
    jobs,
    credits,
    balanceOf: async (userId) => (await users.get(userId))?.credits ?? 0,
    provider,
    inbound: createInboundImages({
      store,
      newMediaId,
      publicBaseUrl,
      limits: mediaLimits(config.imageMaxPixels),
      fetchImage: (url) =>
        guardedGet(url, {
          allowPrivate: config.webhookAllowPrivate,
          timeoutMs: config.tuning.inboundFetchTimeoutMs,
          maxBytes: INBOUND_IMAGE_MAX_BYTES,
        }),
    }),
    store,
    poller,
    onFinished,
    clock,
    logger: log,
    providerTimeoutMs: config.providerTimeoutMs,
    pollIntervalMs,
  });
  const sweeper = createJobSweeper({
    jobs,
    credits,
    store,
    poller,
    clock,
    logger: log,
    retentionDays: config.jobRetentionDays,
    abandonedSubmitMs: config.submitAbandonedMs,
    pollIntervalMs,
    onFinished,
  });
  let sweep: PeriodicTask | undefined;
  let outboxSweep: PeriodicTask | undefined;
  return {
    service,
    routes: [...jobRoutes(service, (url) => isAcceptedImageUrl(url, publicBaseUrl)), mediaRoute(store)],
    async start() {
      await sweeper.resume(); // a restart forgot the timers; the jobs are all in MongoDB
      sweep = startPeriodicTask({
        name: 'job sweep',
        intervalMs: config.jobSweepIntervalMs,
        logger: log,
        run: async () => void (await sweeper.sweep()),
      });
      outboxSweep = startPeriodicTask({
        name: 'job outbox sweep',
        intervalMs: config.jobSweepIntervalMs,
        logger: log,
        run: async () => void (await outbox.sweep()),
      });
    },
    async stop() {
      await outboxSweep?.stop();
      await sweep?.stop();
      await poller.close();
      await provider.close?.();
    },
  };
}

/** The configured upstream provider (`PROVIDER`): the offline sandbox, or fal's queue API. */
async function createProvider(
  config: JobsConfig,
  platform: JobsPlatform,
): Promise<MediaProvider & { close?(): Promise<void> }> {
  if (config.fal) {
    return createFalProvider({ ...config.fal, endpoints: config.providerEndpoints });
  }
  const ffmpeg = resolveFfmpeg({ ffmpegPath: config.ffmpegPath, ffprobePath: config.ffprobePath });
  return createSandboxProvider({
    db: platform.mongo.db,
    store: platform.store,
    renderer: createSandboxRenderer({
      ffmpegPath: ffmpeg.ffmpeg,
      concurrency: config.sandboxRenderConcurrency,
    }),
    endpoints: config.providerEndpoints,
    clock: platform.clock,
    logger: platform.log,
    videoMs: config.sandboxVideoMs,
    imageMs: config.sandboxImageMs,
  });
}
