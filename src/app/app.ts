import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import {
  type Config,
  createLogger,
  systemClock,
  type Clock,
  createMetricsRegistry,
  registerProcessMetrics,
  Router,
  createPipeline,
  startHttpServer,
  type Feature,
  type HttpServer,
  createDrainGate,
  randomBase62,
  createDomainEvents,
} from '../platform/index.ts';
import { SCOPES } from '../../schemas/scopes.ts';
import { type AdminService, accountsFeature, dashboardFeature } from '../accounts/index.ts';
import { type AppPlatform, closeInReverse, startPlatform } from './platform.ts';
import { keyDeliveries, webhooksFeature } from '../webhooks/index.ts';
import { jobsFeature, type JobEvents } from '../jobs/index.ts';
import { metaFeature } from './meta.ts';
import { assetPicturesFeature, editorFeature } from '../editor/index.ts';
import { eventsFeature } from '../events/index.ts';
import { exportFeature, videoExporter } from '../export/index.ts';
import { mcpFeature } from '../mcp/index.ts';

/** Parts a test may replace (fakes go through the same factory: docs/architecture.md, Conventions). */
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
  demo?: { userId: string; email: string; apiKey: string; password: string; credits: number };
  /** The service's logger (what the process itself has to say, such as the signals it got, goes there too). */
  log: Logger;
  stop(): Promise<void>;
}

/**
 * Wires the service; the only place that does (docs/architecture.md, Wiring and lifecycle). The front binds
 * first (answering 503 until it is wired), so the service's own URL is known before anything that hands out
 * URLs is built; then the platform of the configured mode, then each feature, then the routes are served and
 * the features started. Stop runs it backwards: the front drains, the features stop (awaiting their running
 * work), the platform closes.
 */
export async function startApp(config: Config, deps: AppDeps = {}): Promise<StartedApp> {
  const clock = deps.clock ?? systemClock;
  const generatedAdminToken = config.adminToken ? undefined : randomBytes(24).toString('base64url');
  const adminToken = config.adminToken ?? generatedAdminToken!;
  const log =
    deps.logger ??
    createLogger({ level: config.logLevel, nodeId: config.nodeId, secrets: secretsOf(config, adminToken) });
  const closers: Array<() => Promise<void>> = []; // run in reverse order on stop
  const metrics = createMetricsRegistry(); // one per process, served at GET /metrics
  const stopProcessMetrics = registerProcessMetrics(metrics);
  closers.push(async () => stopProcessMetrics());

  const server = await startHttpServer({
    host: config.host,
    port: config.port,
    maxBodyBytes: config.tuning.maxBodyBytes,
    log,
  });
  const features: Feature[] = [];
  const gate = createDrainGate();
  const shutdown = drainThenClose({ gate, features, server, closers, log });
  try {
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${server.port}`;
    const baseUrl = config.publicBaseUrl ?? url;

    const platform = await startPlatform(config, { clock, log, metrics, baseUrl });
    closers.push(() => platform.close());
    // A feature's stop is registered as soon as it exists: a start-up that fails later still releases what
    // the feature built (its scheduler, its provider), and `stop` is safe on a feature that never started.
    const wired: Wire = (feature) => {
      features.push(feature);
      closers.push(() => feature.stop());
      return feature;
    };
    const accounts = wired(
      accountsFeature(
        config,
        { ...platform, keyDeliveries: keyDeliveries(platform.repositories.deliveries) },
        adminToken,
      ),
    );
    await wireServiceFeatures(config, platform, { server, sessionTokens: accounts.sessions, wired });
    const dashboard = wired(dashboardFeature(platform));
    const router = new Router();
    wired(
      metaFeature(
        config,
        platform,
        () => router.routes,
        () => gate.draining,
      ),
    );
    for (const route of features.flatMap((feature) => feature.routes)) router.add(route);
    for (const feature of features) await feature.start();
    server.serve(
      gate.guard(
        createPipeline({
          router,
          auth: accounts.auth,
          keyLimiter: accounts.keyLimiter,
          sessionLimiter: accounts.sessionLimiter,
          authFailureLimiter: accounts.authFailureLimiter,
          sessions: accounts.sessionGuard,
          notFoundPage: dashboard.notFoundPage,
          audit: platform.audit,
          log,
          trustProxy: config.trustProxy,
          metrics,
        }),
      ),
    );

    const demo = config.mode === 'embedded' ? await createDemoAccount(accounts.admin) : undefined;
    log.info(
      { mode: config.mode, url, audit_sink: config.auditSink, mongo: platform.mongo.server },
      'service started',
    );

    let stopping: Promise<void> | undefined;
    return {
      url,
      generatedAdminToken,
      demo,
      log,
      stop: () =>
        (stopping ??= (async () => {
          await shutdown(config.shutdownGraceMs);
          log.info('service stopped');
          log.flush();
        })()),
    };
  } catch (error) {
    await shutdown(0);
    throw error;
  }
}

/** Registers a feature: it is started, drained and stopped with the others, in the order it was wired. */
type Wire = <F extends Feature>(feature: F) => F;

/**
 * How a node stops (docs/deploy.md): readiness turns 503 and new requests are refused (retry elsewhere),
 * clients hear what they must (sockets: reconnect elsewhere), in-flight requests — turns, exports — finish
 * within the grace, and only then is closed what they may need.
 */
function drainThenClose(parts: {
  /** The front's drain gate (closing it turns readiness 503 and refuses new requests). */
  gate: { close(): void };
  features: readonly Feature[];
  server: HttpServer;
  closers: Array<() => Promise<void>>;
  log: Logger;
}): (graceMs: number) => Promise<void> {
  const { gate, features, server, closers, log } = parts;
  return async (graceMs) => {
    const deadline = Date.now() + graceMs; // one grace for everything that runs, not one per step
    const remaining = () => Math.max(0, deadline - Date.now());
    // Still listening until the grace ends: probes on new connections are answered (`/livez` 200, `/healthz`
    // 503), and any other new request gets the gate's 503, which a proxy retries elsewhere.
    gate.close();
    for (const feature of features) {
      await feature.drain?.(remaining()).catch((error: unknown) => log.error({ err: error }, 'drain failed'));
    }
    await server.close(remaining());
    await closeInReverse(closers, log);
  };
}

/**
 * The features between the accounts (which the front authenticates with) and the dashboard's page, in the
 * order they depend on each other; each stops after the ones wired after it.
 */
async function wireServiceFeatures(
  config: Config,
  platform: AppPlatform,
  deps: {
    server: HttpServer;
    /** The dashboard's tokens, checked again while their events sockets are open. */
    sessionTokens: { authenticateToken(token: string): Promise<unknown> };
    wired: Wire;
  },
): Promise<void> {
  const { wired } = deps;
  // How the jobs slice tells that a job ended (`job.finished`): the webhooks and the editor subscribe, and
  // the jobs' outbox announces each job until they have all handled it.
  const jobEvents = createDomainEvents<JobEvents>({ log: platform.log });
  wired(await webhooksFeature(config, { ...platform, jobEvents }));
  const jobs = wired(await jobsFeature(config, { ...platform, jobEvents }));
  // The pictures of assets first: every asset the export and the editor create gets its pictures through
  // these commands, and the children making them stop last.
  const { pictures } = wired(assetPicturesFeature(config, platform));
  const projects = pictures.commands;
  // The export before the editor: the agents export too (`export_video`), and it stops after them.
  const exports = wired(exportFeature(config, { ...platform, projects }));
  const editor = wired(
    editorFeature(
      config,
      { ...platform, jobEvents, projects, pictures },
      jobs.service,
      videoExporter(exports.service, exports.segments),
    ),
  );
  wired(eventsFeature(config, platform, deps.server, deps.sessionTokens));
  wired(
    await mcpFeature(config, platform, {
      jobs: jobs.service,
      editor: editor.editor,
      turns: editor.turns,
      exports: exports.service,
    }),
  );
}

const DEMO_EMAIL = 'demo@mediaforge.local';
const DEMO_CREDITS = 100_000;

async function createDemoAccount(admin: AdminService) {
  const { user } = await admin.createUser({ email: DEMO_EMAIL, credits: DEMO_CREDITS });
  const { api_key } = await admin.createKey(user.id, { name: 'demo', scopes: [...SCOPES] });
  // The dashboard's sign-in (docs/accounts.md): printed once in the banner, like the key.
  const password = randomBase62(20);
  await admin.setPassword(user.id, password);
  return { userId: user.id, email: user.email, apiKey: api_key, password, credits: user.credits };
}

/** Secrets that no log line may hold, literally: the admin token and the upstream providers' keys. */
function secretsOf(config: Config, adminToken: string): string[] {
  return [adminToken, config.llm.apiKey, config.fal?.key].filter((secret): secret is string =>
    Boolean(secret),
  );
}
