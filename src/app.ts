import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { createLogger } from './logger.ts';
import { systemClock, type Clock } from './ports/clock.ts';
import { SCOPES } from './domain/scopes.ts';
import { buildModelsCatalog } from './domain/models-catalog.ts';
import { RollingWindowLimiter } from './domain/rolling-window.ts';
import type { AuditSink } from './ports/audit-sink.ts';
import { connectMongo, type MongoConnection } from './adapters/mongo/connect.ts';
import { createMongoUsers } from './adapters/mongo/users.ts';
import { createMongoApiKeys } from './adapters/mongo/api-keys.ts';
import { createMongoCreditLedger } from './adapters/mongo/credit-ledger.ts';
import { createMongoAuditSink } from './adapters/mongo/audit-sink.ts';
import { createFileAuditSink } from './adapters/audit/index.ts';
import { startEmbeddedMongo, type EmbeddedMongo } from './adapters/embedded/jongodb.ts';
import { connectNats, type NatsLink } from './adapters/nats/connect.ts';
import { createJetStreamTransport } from './adapters/nats/actor-transport.ts';
import { createJetStreamPollQueue } from './adapters/nats/job-poll-queue.ts';
import { createActorSystem, createInProcessTransport, userActor, userCredits } from '../actors/index.ts';
import { actorMetrics, createMetricsRegistry, registerProcessMetrics } from './observability/index.ts';
import { createAuditLog } from './services/audit-log.ts';
import { createAuthenticator } from './services/authenticator.ts';
import { createAdminService } from './services/admin.ts';
import { Router } from './http/router.ts';
import { createPipeline } from './http/pipeline.ts';
import { startHttpServer, type HttpServer } from './http/server.ts';
import { buildOpenApiDocument } from './http/openapi.ts';
import { adminRoutes } from './http/routes/admin.ts';
import { accountRoute, healthRoute, modelsRoute, openApiRoute } from './http/routes/public.ts';
import { metricsRoute } from './http/routes/metrics.ts';
import { mediaRoute } from './http/routes/media.ts';
import { createFsMediaStore, createGridFsMediaStore } from './adapters/storage/index.ts';
import { jobRoutes } from './http/routes/jobs.ts';
import { createMongoJobs } from './adapters/mongo/jobs.ts';
import { createSandboxProvider } from './adapters/providers/sandbox/provider.ts';
import { createSandboxRenderer } from './adapters/providers/sandbox/render.ts';
import { createFalProvider } from './adapters/providers/fal.ts';
import { resolveFfmpeg } from './adapters/media/index.ts';
import { guardedGet, guardedPost } from './adapters/net/index.ts';
import type { JobRecord } from './ports/jobs-repository.ts';
import { newMediaId } from './domain/media-id.ts';
import type { MediaProvider } from './ports/media-provider.ts';
import type { MediaStore } from './ports/media-store.ts';
import { createJobsService } from './services/jobs.ts';
import { createJobCompletion } from './services/job-completion.ts';
import { createJobSweeper } from './services/job-sweeper.ts';
import { createInProcessScheduler } from './services/work-scheduler.ts';
import { startWebhookRuntime } from './webhook-runtime.ts';
import { createMongoWebhookDeliveries } from './adapters/mongo/webhook-deliveries.ts';
import { createInboundImages, INBOUND_IMAGE_MAX_BYTES } from './services/inbound-images.ts';

const MAX_BODY_BYTES = 1024 * 1024;
const SHUTDOWN_GRACE_MS = 10_000;
const VERSION = '0.1.0';
const INBOUND_FETCH_TIMEOUT_MS = 15_000;
/** Cluster mode: a job poll unacknowledged this long (its node died) goes to another node. */
const JOB_POLL_ACK_WAIT_MS = 30_000;
/** Cluster mode: provider polls one node runs at once (each is mostly waiting on the provider). */
const JOB_POLLS_PER_NODE = 32;

/** Parts a test may replace (DESIGN.md §5: fakes go through the same factory). */
export interface AppDeps {
  clock?: Clock;
  logger?: Logger;
}

/** What start-up produced, for the banner. */
export interface StartedApp {
  url: string;
  /** Set when this process generated the admin token (embedded mode without ADMIN_TOKEN). */
  generatedAdminToken?: string;
  /** The demo account created in embedded mode. */
  demo?: { userId: string; email: string; apiKey: string; credits: number };
  stop(): Promise<void>;
}

/** Wires adapters, services and the HTTP front together; the only place that does (DESIGN.md §1). */
export async function startApp(config: Config, deps: AppDeps = {}): Promise<StartedApp> {
  const clock = deps.clock ?? systemClock;
  const generatedAdminToken = config.adminToken ? undefined : randomBytes(24).toString('base64url');
  const adminToken = config.adminToken ?? generatedAdminToken!;
  const log =
    deps.logger ?? createLogger({ level: config.logLevel, nodeId: config.nodeId, secrets: [adminToken] });
  const closers: Array<() => Promise<void>> = []; // run in reverse order on stop
  // One registry per process, served at GET /metrics: HTTP and process metrics here, actor metrics too.
  const metrics = createMetricsRegistry();
  const stopProcessMetrics = registerProcessMetrics(metrics);
  closers.push(async () => stopProcessMetrics());

  try {
    let embedded: EmbeddedMongo | undefined;
    if (config.mode === 'embedded') {
      embedded = await startEmbeddedMongo();
      closers.push(() => embedded!.stop());
      log.warn('embedded mode: data is kept in memory only and is lost when the service stops');
    }
    const mongo: MongoConnection = await connectMongo(config.mongoUrl ?? embedded!.uri, config.mongoDb);
    closers.push(() => mongo.close());
    // Media (MEDIA_STORE): files in MEDIA_DIR, or GridFS in the service's database.
    const mediaStore =
      config.mediaStore === 'gridfs'
        ? await createGridFsMediaStore(mongo.db)
        : await createFsMediaStore({ dir: config.mediaDir });

    let nats: NatsLink | undefined;
    if (config.mode === 'cluster') {
      nats = await connectNats(config.natsUrls, config.nodeId);
      closers.push(() => nats!.close());
    }

    const [users, keys, ledger] = await Promise.all([
      createMongoUsers(mongo.db),
      createMongoApiKeys(mongo.db),
      createMongoCreditLedger(mongo.db, clock),
    ]);
    // Actors: over JetStream in cluster mode (any node may handle any key), in-process otherwise.
    const actors = await createActorSystem({
      transport: nats
        ? createJetStreamTransport({
            connection: nats.connection,
            partitions: config.actorPartitions,
            replicas: config.natsReplicas,
            ackWaitMs: config.actorAckWaitMs,
            logger: log,
          })
        : createInProcessTransport(),
      actors: [userActor],
      ports: { ledger },
      logger: log,
      clock,
      metrics: actorMetrics(metrics),
    });
    closers.push(() => actors.close());
    const credits = userCredits(actors); // the one way services change balances
    const auditSink: AuditSink =
      config.auditSink === 'file'
        ? createFileAuditSink({ dir: config.auditDir, clock })
        : await createMongoAuditSink(mongo.db);
    const audit = createAuditLog({ sink: auditSink, logger: log });
    closers.push(() => audit.close());

    const auth = createAuthenticator({ keys, adminToken, clock });
    const webhookDeliveries = await createMongoWebhookDeliveries(mongo.db);
    const admin = createAdminService({
      deliveries: webhookDeliveries,
      users,
      keys,
      credits,
      ledger,
      audit: auditSink,
      auth,
      clock,
      webhookAllowPrivate: config.webhookAllowPrivate,
    });
    const keyLimiter = new RollingWindowLimiter(config.rateLimitPerMinute, clock.now);
    const authFailureLimiter = new RollingWindowLimiter(config.authFailuresPerMinute, clock.now);
    const sweeper = setInterval(() => {
      keyLimiter.sweep();
      authFailureLimiter.sweep();
    }, 60_000).unref();
    closers.push(async () => clearInterval(sweeper));

    const router = new Router();
    const models = buildModelsCatalog({ provider: config.provider, endpoints: config.providerEndpoints });
    let publicBaseUrl = config.publicBaseUrl ?? '';
    const baseUrl = () => publicBaseUrl;

    // Generation jobs: provider, completion polling, sweeper.
    const jobStore = await createMongoJobs(mongo.db);

    // Job webhooks: deliveries live in MongoDB; attempts are timed by `MF_WEBHOOKS` in cluster mode.
    const { webhooks, close: closeWebhooks } = await startWebhookRuntime({
      deliveries: webhookDeliveries,
      keys,
      jobs: jobStore,
      audit,
      post: guardedPost,
      clock,
      logger: log.child({ component: 'webhooks' }),
      retryDelaysMs: config.webhookRetryDelaysMs,
      timeoutMs: config.webhookTimeoutMs,
      allowPrivate: config.webhookAllowPrivate,
      retentionDays: config.jobRetentionDays,
      ...(nats ? { nats: nats.connection } : {}),
      natsReplicas: config.natsReplicas,
    });
    closers.push(closeWebhooks);
    /** A job ended: announce it (if this fails, the sweeper announces it from the job's `notify_due`). */
    const onFinished = (job: JobRecord) => {
      webhooks.jobFinished(job).catch((error: unknown) => {
        log.warn({ err: error, job_id: job.id }, 'webhook not queued yet; the sweeper will queue it');
      });
    };
    const provider = await createProvider(config, { db: mongo.db, store: mediaStore, clock, log });
    closers.push(async () => provider.close?.());
    const completion = createJobCompletion({
      jobs: jobStore,
      credits,
      provider,
      store: mediaStore,
      clock,
      logger: log,
      publicBaseUrl: baseUrl,
      newMediaId,
      onFinished,
    });
    const poll = (jobId: string) => completion.poll(jobId);
    // Cluster mode: a JetStream work queue shared by every node; otherwise timers (all state is in MongoDB).
    const poller = nats
      ? await createJetStreamPollQueue({
          poll,
          intervalMs: config.providerPollIntervalMs,
          logger: log,
          connection: nats.connection,
          jobLifetimeMs: config.providerTimeoutMs,
          replicas: config.natsReplicas,
          ackWaitMs: JOB_POLL_ACK_WAIT_MS,
          concurrency: JOB_POLLS_PER_NODE,
        })
      : createInProcessScheduler({
          work: async (jobId) => ((await poll(jobId)) === 'done' ? 'done' : config.providerPollIntervalMs),
          retryAfterErrorMs: config.providerPollIntervalMs,
          label: 'job poll',
          logger: log,
        });
    closers.push(async () => poller.close());
    const jobsService = createJobsService({
      jobs: jobStore,
      credits,
      provider,
      inbound: createInboundImages({
        store: mediaStore,
        newMediaId,
        publicBaseUrl: baseUrl,
        fetchImage: (url) =>
          guardedGet(url, {
            allowPrivate: config.webhookAllowPrivate,
            timeoutMs: INBOUND_FETCH_TIMEOUT_MS,
            maxBytes: INBOUND_IMAGE_MAX_BYTES,
          }),
      }),
      store: mediaStore,
      poller,
      onFinished,
      clock,
      logger: log,
      publicBaseUrl: baseUrl,
      providerTimeoutMs: config.providerTimeoutMs,
      pollIntervalMs: config.providerPollIntervalMs,
    });
    const jobSweeper = createJobSweeper({
      jobs: jobStore,
      credits,
      store: mediaStore,
      poller,
      clock,
      logger: log,
      retentionDays: config.jobRetentionDays,
      abandonedSubmitMs: config.submitAbandonedMs,
      pollIntervalMs: config.providerPollIntervalMs,
      onFinished,
    });
    // A restart forgot the timers; the jobs and deliveries are all in MongoDB.
    await jobSweeper.resume();
    await webhooks.resume();
    const jobSweep = setInterval(() => {
      jobSweeper.sweep().catch((error: unknown) => log.error({ err: error }, 'job sweep failed'));
      webhooks.sweep().catch((error: unknown) => log.error({ err: error }, 'webhook sweep failed'));
    }, config.jobSweepIntervalMs).unref();
    closers.push(async () => clearInterval(jobSweep));
    const routes = [
      modelsRoute(models),
      accountRoute(users),
      openApiRoute(() => buildOpenApiDocument(router.routes, { version: VERSION, serverUrl: publicBaseUrl })),
      healthRoute(
        async () => ({
          mongo: (await mongo.ping()) ? 'up' : 'down',
          nats: nats ? nats.health() : 'embedded',
        }),
        config.nodeId,
      ),
      ...adminRoutes(admin),
      metricsRoute(metrics),
      mediaRoute(mediaStore),
      ...jobRoutes(jobsService),
    ];
    for (const route of routes) router.add(route);

    const server: HttpServer = await startHttpServer({
      host: config.host,
      port: config.port,
      maxBodyBytes: MAX_BODY_BYTES,
      log,
      handle: createPipeline({
        router,
        auth,
        keyLimiter,
        authFailureLimiter,
        audit,
        log,
        trustProxy: config.trustProxy,
        metrics,
      }),
    });
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${server.port}`;
    publicBaseUrl ||= url;

    const demo = config.mode === 'embedded' ? await createDemoAccount(admin) : undefined;
    log.info({ mode: config.mode, url, audit_sink: config.auditSink }, 'service started');

    let stopping: Promise<void> | undefined;
    return {
      url,
      generatedAdminToken,
      demo,
      stop: () =>
        (stopping ??= (async () => {
          await server.close(SHUTDOWN_GRACE_MS); // stop accepting, let in-flight requests finish (bounded)
          await runClosers(closers, log);
          log.info('service stopped');
          log.flush();
        })()),
    };
  } catch (error) {
    await runClosers(closers, log);
    throw error;
  }
}

async function runClosers(closers: Array<() => Promise<void>>, log: Logger): Promise<void> {
  for (const close of closers.reverse()) {
    try {
      await close();
    } catch (error) {
      log.error({ err: error }, 'error while shutting down');
    }
  }
  closers.length = 0;
}

const DEMO_EMAIL = 'demo@mediaforge.local';
const DEMO_CREDITS = 100_000;

async function createDemoAccount(admin: ReturnType<typeof createAdminService>) {
  const { user } = await admin.createUser({ email: DEMO_EMAIL, credits: DEMO_CREDITS });
  const { api_key } = await admin.createKey(user.id, { name: 'demo', scopes: [...SCOPES] });
  return { userId: user.id, email: user.email, apiKey: api_key, credits: user.credits };
}

/** The configured upstream provider (`PROVIDER`): the offline sandbox, or fal's queue API. */
async function createProvider(
  config: Config,
  deps: { db: MongoConnection['db']; store: MediaStore; clock: Clock; log: Logger },
): Promise<MediaProvider & { close?(): Promise<void> }> {
  if (config.provider === 'fal') {
    if (!config.falKey) throw new Error('PROVIDER=fal needs FAL_KEY');
    return createFalProvider({
      queueUrl: config.falQueueUrl,
      key: config.falKey,
      endpoints: config.providerEndpoints,
    });
  }
  const ffmpeg = resolveFfmpeg({ ffmpegPath: config.ffmpegPath, ffprobePath: config.ffprobePath });
  return createSandboxProvider({
    db: deps.db,
    store: deps.store,
    renderer: createSandboxRenderer({
      ffmpegPath: ffmpeg.ffmpeg,
      concurrency: config.sandboxRenderConcurrency,
    }),
    endpoints: config.providerEndpoints,
    clock: deps.clock,
    logger: deps.log,
    videoMs: config.sandboxVideoMs,
    imageMs: config.sandboxImageMs,
  });
}
