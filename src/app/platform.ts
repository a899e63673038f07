import type { Logger } from 'pino';
import {
  type Config,
  type Clock,
  type AuditSink,
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
  type MetricsRegistry,
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

/** What every feature is wired from: the infrastructure of the configured mode, started once. */
/** The platform with what the wiring adds for the slices: every repository and the actors' clients. */
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

/**
 * Starts the infrastructure of the configured mode (docs/operator.md, Modes): embedded (jongodb started here,
 * actors in-process), single node (MongoDB, actors in-process) or cluster (MongoDB, actors over JetStream).
 * On a failure part-way, what was started is closed again before the error is rethrown.
 */
export async function startPlatform(
  config: Config,
  base: { clock: Clock; log: Logger; metrics: MetricsRegistry; baseUrl: string },
): Promise<AppPlatform> {
  const { clock, log } = base;
  const closers: Array<() => Promise<void>> = [];
  const close = () => closeInReverse(closers, log);
  try {
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
    let nats: NatsLink | undefined;
    if (config.mode === 'cluster') {
      nats = await connectNats(config.natsUrls, config.nodeId);
      closers.push(() => nats!.close());
    }

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
    const mediaUrl = (mediaId: string) => ownMediaPrefix(base.baseUrl) + mediaId;
    // Project events reach every node's subscribers (NATS subjects in cluster mode: docs/architecture.md).
    const events = nats
      ? createNatsEventBus({ connection: nats.connection, logger: log })
      : createInProcessEventBus({ logger: log });
    if (nats) {
      await ensureEventsStream(nats.connection, {
        replicas: config.natsReplicas,
        maxAgeMs: config.tuning.eventStreamMaxAgeMs,
        maxPerProject: config.tuning.eventStreamMaxPerProject,
      });
    }
    const replay = nats
      ? createJetStreamEventHistory({ connection: nats.connection, durable: history, logger: log })
      : history;

    const auditSink: AuditSink =
      config.auditSink === 'file'
        ? createFileAuditSink({ dir: config.auditDir, clock })
        : await createMongoAuditSink(mongo.db);
    const audit = createAuditLog({ sink: auditSink, logger: log });
    closers.push(() => audit.close());

    // Actors: over JetStream in cluster mode (any node may handle any key), in-process otherwise.
    const actors = await createActorSystem({
      transport: nats
        ? createJetStreamTransport({
            connection: nats.connection,
            partitions: config.actorPartitions,
            replicas: config.natsReplicas,
            logger: log,
          })
        : createInProcessTransport(),
      kinds: [
        { actor: userActor, ports: { ledger }, settings: { ackWaitMs: config.actorAckWaitMs } },
        {
          actor: projectActor,
          ports: {
            projects,
            assets,
            thread,
            history,
            mediaUrl,
            turnLeaseMs: config.turnLeaseMs,
            turnQueueMax: config.turnQueueMax,
            timelineMaxSec: config.timelineMaxSec,
          },
          settings: { ackWaitMs: config.actorAckWaitMs },
        },
      ],
      events,
      logger: log,
      clock,
      metrics: actorMetrics(base.metrics),
    });
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

/** Runs closers last-first, logging (not throwing) each failure, so one failure never leaks the rest. */
export async function closeInReverse(closers: Array<() => Promise<void>>, log: Logger): Promise<void> {
  for (const close of closers.splice(0).reverse()) {
    try {
      await close();
    } catch (error) {
      log.error({ err: error }, 'error while shutting down');
    }
  }
}
