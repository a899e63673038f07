import type { Logger } from 'pino';
import {
  type Config,
  type Clock,
  type AuditSink,
  type EventBus,
  type MediaStore,
  type MongoConnection,
  startEmbeddedMongo,
  connectMongo,
  createMongoAuditSink,
  createFileAuditSink,
  createFsMediaStore,
  createGridFsMediaStore,
  connectNats,
  type NatsLink,
  createJetStreamTransport,
  createNatsEventBus,
  actorMetrics,
  createAuditLog,
  type Platform,
} from '../platform/index.ts';
import {
  type UsersRepository,
  type ApiKeysRepository,
  type UserCredentialsRepository,
  type WebSessionsRepository,
  type OAuthStore,
  createMongoUsers,
  createMongoApiKeys,
  createMongoUserCredentials,
  createMongoWebSessions,
  createMongoOAuthStore,
  apiKeysOnServer,
  oauthStoreOnServer,
  webSessionsOnServer,
} from '../accounts/index.ts';
import {
  type CreditLedger,
  type ProjectsRepository,
  type AssetsRepository,
  type ThreadRepository,
  type EventHistory,
  createActorSystem,
  createInProcessEventBus,
  createInProcessTransport,
  projectActor,
  projectCommands,
  userActor,
  userCredits,
  type ActorSystem,
  type ProjectCommands,
  type UserCredits,
} from '../../actors/index.ts';
import { type JobsRepository, createMongoJobs, jobsOnServer, ownMediaPrefix } from '../jobs/index.ts';
import {
  type WebhookDeliveriesRepository,
  createMongoWebhookDeliveries,
  webhookDeliveriesOnServer,
} from '../webhooks/index.ts';
import { createMongoCreditLedger } from '../credits/index.ts';
import {
  createMongoAssets,
  createMongoEventHistory,
  createMongoProjects,
  createMongoThread,
  createJetStreamEventHistory,
  ensureEventsStream,
} from '../editor/index.ts';

/** The repositories every feature shares (ports; MongoDB adapters). */
export interface Repositories {
  users: UsersRepository;
  keys: ApiKeysRepository;
  ledger: CreditLedger;
  jobs: JobsRepository;
  deliveries: WebhookDeliveriesRepository;
  projects: ProjectsRepository;
  assets: AssetsRepository;
  thread: ThreadRepository;
  history: EventHistory;
  credentials: UserCredentialsRepository;
  /** Browser sign-in sessions (docs/accounts.md). */
  webSessions: WebSessionsRepository;
  /** The OAuth server's clients, codes, grants and tokens (docs/mcp.md, Authorization (OAuth 2.1)). */
  oauth: OAuthStore;
}

/**
 * What every feature is wired from: the infrastructure of the configured mode, started once, with what the
 * wiring adds for the slices: every repository and the actors' clients.
 */
export interface AppPlatform extends Platform {
  repositories: Repositories;
  actors: ActorSystem;
  /** The one way services change balances (the user actor). */
  credits: UserCredits;
  /** The one way services change projects (the project actor). */
  projects: ProjectCommands;
  /**
   * Where sockets replay project events from: JetStream's MF_EVENTS in cluster mode (any node, no MongoDB read
   * when it holds them), backed by the MongoDB history it falls back to; the MongoDB history otherwise.
   */
  replay: EventHistory;
  /** Stops the actors, flushes the audit log and closes the connections (and the embedded database). */
  close(): Promise<void>;
}

/** What the platform is started from: the process's clock, logger, metrics and public base URL. */
type PlatformBase = Pick<Platform, 'clock' | 'log' | 'metrics' | 'baseUrl'>;

/** A list of shutdown steps; each part of start-up adds its own as soon as it holds something open. */
type Closers = Array<() => Promise<void>>;

/**
 * Starts the infrastructure of the configured mode (docs/operator.md, Modes): embedded (jongodb started here,
 * actors in-process), single node (MongoDB, actors in-process) or cluster (MongoDB, actors over JetStream).
 * On a failure part-way, what was started is closed again before the error is rethrown.
 */
export async function startPlatform(config: Config, base: PlatformBase): Promise<AppPlatform> {
  const { clock, log } = base;
  const closers: Closers = [];
  const close = () => closeInReverse(closers, log);
  try {
    const mongo = await startDatabase(config, log, closers);
    let nats: NatsLink | undefined;
    if (config.mode === 'cluster') {
      nats = await connectNats(config.natsUrls, config.nodeId);
      closers.push(() => nats!.close());
    }
    const { store, repositories } = await openRepositories(config, mongo, clock);
    const mediaUrl = (mediaId: string) => ownMediaPrefix(base.baseUrl) + mediaId;
    const { events, replay } = await startProjectEvents(config, nats, repositories.history, log);

    const auditSink: AuditSink =
      config.auditSink === 'file'
        ? createFileAuditSink({ dir: config.auditDir, clock })
        : await createMongoAuditSink(mongo.db);
    const audit = createAuditLog({ sink: auditSink, logger: log });
    closers.push(() => audit.close());

    const actors = await startActors(config, { ...base, nats, repositories, events, mediaUrl });
    closers.push(() => actors.close());

    return {
      ...base,
      mongo,
      nats,
      store,
      repositories,
      auditSink,
      audit,
      actors,
      credits: userCredits(actors),
      projects: projectCommands(actors),
      events,
      replay,
      mediaUrl,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Connects to the mode's database: in embedded mode jongodb is started first (in memory only, which is
 * worth a warning). Says which operations the server's wire compatibility makes the service emulate.
 */
async function startDatabase(config: Config, log: Logger, closers: Closers): Promise<MongoConnection> {
  let mongoUrl = config.mongoUrl;
  if (config.mode === 'embedded') {
    const embedded = await startEmbeddedMongo();
    closers.push(() => embedded.stop());
    mongoUrl = embedded.uri;
    log.warn('embedded mode: data is kept in memory only and is lost when the service stops');
  }
  const mongo = await connectMongo(mongoUrl!, config.mongoDb);
  closers.push(() => mongo.close());
  const { compat } = mongo;
  if (compat.emulations.length > 0) {
    log.info({ server: compat.server, emulations: compat.emulations }, 'MongoDB-wire server: emulating');
  }
  return mongo;
}

/** The media store and every repository, opened together (each creates its indexes). */
async function openRepositories(
  config: Config,
  mongo: MongoConnection,
  clock: Clock,
): Promise<{ store: MediaStore; repositories: Repositories }> {
  const [
    store,
    users,
    keys,
    ledger,
    jobs,
    deliveries,
    projects,
    assets,
    thread,
    history,
    webSessions,
    oauth,
  ] = await Promise.all([
    config.mediaStore === 'gridfs'
      ? createGridFsMediaStore(mongo.db)
      : createFsMediaStore({ dir: config.mediaDir }),
    createMongoUsers(mongo.db),
    createMongoApiKeys(mongo.db),
    createMongoCreditLedger(mongo.db, clock),
    createMongoJobs(mongo.db),
    createMongoWebhookDeliveries(mongo.db),
    createMongoProjects(mongo.db),
    createMongoAssets(mongo.db),
    createMongoThread(mongo.db),
    createMongoEventHistory(mongo.db),
    createMongoWebSessions(mongo.db),
    createMongoOAuthStore(mongo.db),
  ]);
  // Conditional updates that must have one winner, made safe where the server needs it (`compat`).
  const { compat } = mongo;
  const repositories: Repositories = {
    users,
    keys: apiKeysOnServer(compat, keys),
    ledger,
    jobs: jobsOnServer(compat, jobs),
    deliveries: webhookDeliveriesOnServer(compat, deliveries),
    projects,
    assets,
    thread,
    history,
    credentials: createMongoUserCredentials(mongo.db),
    webSessions: webSessionsOnServer(compat, webSessions),
    oauth: oauthStoreOnServer(compat, oauth),
  };
  return { store, repositories };
}

/**
 * How project events travel: the bus that reaches every node's subscribers (NATS subjects in cluster mode:
 * docs/architecture.md) and the history sockets replay from (JetStream's MF_EVENTS, whose stream is made
 * sure of here, backed by the MongoDB history; the MongoDB history alone otherwise).
 */
async function startProjectEvents(
  config: Config,
  nats: NatsLink | undefined,
  history: EventHistory,
  log: Logger,
): Promise<{ events: EventBus; replay: EventHistory }> {
  if (!nats) return { events: createInProcessEventBus({ logger: log }), replay: history };
  const events = createNatsEventBus({ connection: nats.connection, logger: log });
  await ensureEventsStream(nats.connection, {
    replicas: config.natsReplicas,
    maxAgeMs: config.tuning.eventStreamMaxAgeMs,
    maxPerProject: config.tuning.eventStreamMaxPerProject,
  });
  const replay = createJetStreamEventHistory({ connection: nats.connection, durable: history, logger: log });
  return { events, replay };
}

/**
 * The user and project actors: over JetStream in cluster mode (any node may handle any key), in-process
 * otherwise.
 */
function startActors(
  config: Config,
  deps: PlatformBase & {
    nats: NatsLink | undefined;
    repositories: Repositories;
    events: EventBus;
    mediaUrl: (mediaId: string) => string;
  },
): Promise<ActorSystem> {
  const { nats, log, repositories } = deps;
  const { projects, assets, thread, history } = repositories;
  const settings = { ackWaitMs: config.actorAckWaitMs };
  return createActorSystem({
    transport: nats
      ? createJetStreamTransport({
          connection: nats.connection,
          partitions: config.actorPartitions,
          replicas: config.natsReplicas,
          logger: log,
        })
      : createInProcessTransport(),
    kinds: [
      { actor: userActor, ports: { ledger: repositories.ledger }, settings },
      {
        actor: projectActor,
        ports: {
          projects,
          assets,
          thread,
          history,
          mediaUrl: deps.mediaUrl,
          turnLeaseMs: config.turnLeaseMs,
          turnQueueMax: config.turnQueueMax,
          timelineMaxSec: config.timelineMaxSec,
        },
        settings,
      },
    ],
    events: deps.events,
    logger: log,
    clock: deps.clock,
    metrics: actorMetrics(deps.metrics),
  });
}

/** Runs closers last-first, logging (not throwing) each failure, so one failure never leaks the rest. */
export async function closeInReverse(closers: Closers, log: Logger): Promise<void> {
  for (const close of closers.splice(0).reverse()) {
    try {
      await close();
    } catch (error) {
      log.error({ err: error }, 'error while shutting down');
    }
  }
}
