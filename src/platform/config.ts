import { availableParallelism, hostname } from 'node:os';
import Type, { type Static, type TSchema } from 'typebox';
import { createChecker } from '../../schemas/validate.ts';
import { DEFAULT_PROVIDER_ENDPOINTS, type ProviderEndpoints } from '../../schemas/models-catalog.ts';

// The only module that reads process.env (docs/architecture.md, Conventions). Every variable listed in
// docs/operator.md (Configuration), validated once.

const Int = (options: { minimum?: number; maximum?: number; default?: number } = {}) =>
  Type.Integer({ minimum: 0, ...options });
const Bool = (fallback: boolean) => Type.Boolean({ default: fallback });
const Text = () => Type.Optional(Type.String({ minLength: 1 }));
const OneOf = <T extends string>(values: readonly T[], fallback?: T) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    fallback === undefined ? {} : { default: fallback },
  );
const Url = (description: string) =>
  Type.Optional(Type.String({ pattern: '^[a-z][a-z0-9+.-]*://\\S+$', errorMessage: description }));

/** The environment as the service understands it (names exactly as in docs/operator.md, Configuration). */
export const EnvSchema = Type.Object({
  PORT: Int({ maximum: 65535, default: 8080 }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  PUBLIC_BASE_URL: Url('PUBLIC_BASE_URL must be an absolute URL, e.g. https://media.example.com'),
  ADMIN_TOKEN: Type.Optional(
    Type.String({ minLength: 16, errorMessage: 'ADMIN_TOKEN must be at least 16 characters' }),
  ),
  MONGO_URL: Url('MONGO_URL must be a mongodb:// or mongodb+srv:// URL'),
  MONGO_DB: Type.String({ minLength: 1, default: 'mediaforge' }),
  NATS_URL: Text(),
  NODE_ID: Text(),
  MEDIA_STORE: OneOf(['fs', 'gridfs'], 'fs'),
  MEDIA_DIR: Type.String({ minLength: 1, default: './data/media' }),
  PROVIDER: OneOf(['sandbox', 'fal'], 'sandbox'),
  FAL_KEY: Text(),
  FAL_QUEUE_URL: Type.String({ minLength: 1, default: 'https://queue.fal.run' }),
  FAL_ENDPOINT_TEXT_TO_VIDEO: Type.String({ minLength: 1, default: DEFAULT_PROVIDER_ENDPOINTS.textToVideo }),
  FAL_ENDPOINT_IMAGE_TO_VIDEO: Type.String({
    minLength: 1,
    default: DEFAULT_PROVIDER_ENDPOINTS.imageToVideo,
  }),
  FAL_ENDPOINT_FAST_TEXT_TO_VIDEO: Type.String({
    minLength: 1,
    default: DEFAULT_PROVIDER_ENDPOINTS.fastTextToVideo,
  }),
  FAL_ENDPOINT_TEXT_TO_IMAGE: Type.String({ minLength: 1, default: DEFAULT_PROVIDER_ENDPOINTS.textToImage }),
  FAL_ENDPOINT_IMAGE_EDIT: Type.String({ minLength: 1, default: DEFAULT_PROVIDER_ENDPOINTS.imageEdit }),
  PROVIDER_TIMEOUT_MS: Int({ minimum: 1, default: 600_000 }),
  PROVIDER_POLL_INTERVAL_MS: Int({ minimum: 1, default: 2000 }),
  WEBHOOK_RETRY_DELAYS_MS: Type.String({
    pattern: '^\\d+(,\\d+)*$',
    default: '30000,120000,600000',
    errorMessage: 'WEBHOOK_RETRY_DELAYS_MS must be a comma-separated list of integers (milliseconds)',
  }),
  WEBHOOK_TIMEOUT_MS: Int({ minimum: 1, default: 10_000 }),
  WEBHOOK_ALLOW_PRIVATE: Bool(false),
  RATE_LIMIT_PER_MINUTE: Int({ minimum: 1, default: 60 }),
  SANDBOX_VIDEO_MS: Int({ default: 4000 }),
  SANDBOX_IMAGE_MS: Int({ default: 1500 }),
  LOG_LEVEL: OneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
  ACTOR_PARTITIONS: Int({ minimum: 1, maximum: 4096, default: 64 }),
  NATS_REPLICAS: Int({ minimum: 1, maximum: 5, default: 1 }),
  ACTOR_ACK_WAIT_MS: Int({ minimum: 1000, default: 30_000 }),
  SANDBOX_RENDER_CONCURRENCY: Int({ minimum: 1, default: 2 }),
  FFMPEG_PATH: Text(),
  FFPROBE_PATH: Text(),
  TRUST_PROXY: Bool(false),
  AUTH_FAILURES_PER_MINUTE: Int({ minimum: 1, default: 100 }),
  AUDIT_SINK: Type.Optional(OneOf(['file', 'mongo'])),
  AUDIT_DIR: Type.String({ minLength: 1, default: './data/audit' }),
  JOB_RETENTION_DAYS: Int({ minimum: 1, default: 30 }),
  JOB_SWEEP_INTERVAL_MS: Int({ minimum: 100, default: 30_000 }),
  SHUTDOWN_GRACE_MS: Int({ default: 30_000 }),
  SUBMIT_ABANDONED_MS: Int({ minimum: 1000, default: 300_000 }),
  AGENT: OneOf(['builtin', 'llm'], 'builtin'),
  LLM_API_KEY: Text(),
  LLM_BASE_URL: Type.String({
    pattern: '^https?://\\S+$',
    default: 'https://api.openai.com/v1',
    errorMessage: 'LLM_BASE_URL must be an http(s) URL, e.g. https://api.openai.com/v1',
  }),
  LLM_MODEL: Type.String({ minLength: 1, default: 'gpt-4.1-mini' }),
  LLM_TIMEOUT_MS: Int({ minimum: 1000, default: 120_000 }),
  AGENT_MAX_STEPS: Int({ minimum: 1, maximum: 64, default: 8 }),
  MCP_SESSION_IDLE_MS: Int({ minimum: 1000, default: 600_000 }),
  OAUTH_ACCESS_TOKEN_TTL_SECONDS: Int({ minimum: 1, maximum: 86_400, default: 3600 }),
  SIGNUP: OneOf(['closed', 'open'], 'closed'),
  SIGNUP_CREDITS: Int({ maximum: 1_000_000_000, default: 0 }),
  TURN_LEASE_MS: Int({ minimum: 1000, default: 30_000 }),
  TURN_QUEUE_MAX: Int({ minimum: 0, default: 10 }),
  UPLOAD_MAX_BYTES: Int({ minimum: 1, default: 209_715_200 }),
  WS_ALLOWED_ORIGINS: Text(),
  WS_RECHECK_MS: Int({ minimum: 100, default: 15_000 }),
  EXPORT_RATE_PER_MINUTE: Int({ minimum: 1, default: 5 }),
  EXPORT_TIMEOUT_MS: Int({ minimum: 1000, default: 600_000 }),
  EXPORT_CONCURRENCY: Type.Optional(Int({ minimum: 1, maximum: 64 })),
  EXPORT_WORK_DIR: Type.String({ minLength: 1, default: './data/export' }),
  TIMELINE_MAX_SEC: Int({ minimum: 1, maximum: 86_400, default: 1800 }),
  IMAGE_MAX_PIXELS: Int({ minimum: 1, default: 40_000_000 }),
  EXPORT_PER_USER: Int({ minimum: 1, default: 1 }),
  EXPORT_SEGMENTS: Bool(true),
  SEGMENT_CACHE_MAX_BYTES: Int({ minimum: 0, default: 10_737_418_240 }),
  DASHBOARD_RATE_PER_MINUTE: Int({ minimum: 1, default: 600 }),
});

export type Env = Static<typeof EnvSchema>;
export type Mode = 'embedded' | 'single-node' | 'cluster';

/** The validated configuration handed down to every part of the service. */
export interface Config {
  mode: Mode;
  port: number;
  host: string;
  /** Absolute base of every URL we hand out; `undefined` until the port is known when PORT=0. */
  publicBaseUrl: string | undefined;
  adminToken: string | undefined;
  mongoUrl: string | undefined;
  mongoDb: string;
  natsUrls: string[];
  nodeId: string;
  mediaStore: Env['MEDIA_STORE'];
  mediaDir: string;
  provider: Env['PROVIDER'];
  /** fal's queue API: set exactly when `PROVIDER=fal` (which needs `FAL_KEY`). */
  fal: { key: string; queueUrl: string } | undefined;
  providerEndpoints: ProviderEndpoints;
  providerTimeoutMs: number;
  providerPollIntervalMs: number;
  webhookRetryDelaysMs: number[];
  webhookTimeoutMs: number;
  webhookAllowPrivate: boolean;
  rateLimitPerMinute: number;
  sandboxVideoMs: number;
  sandboxImageMs: number;
  sandboxRenderConcurrency: number;
  logLevel: Env['LOG_LEVEL'];
  actorPartitions: number;
  natsReplicas: number;
  /** How long JetStream waits for a node to acknowledge an actor message before redelivering it. */
  actorAckWaitMs: number;
  ffmpegPath: string | undefined;
  ffprobePath: string | undefined;
  trustProxy: boolean;
  authFailuresPerMinute: number;
  auditSink: 'file' | 'mongo';
  auditDir: string;
  jobRetentionDays: number;
  /** How often the job sweeper runs (abandoned submits, unconfirmed refunds, orphaned polls, retention). */
  jobSweepIntervalMs: number;
  /** Age at which a job still `submitting` counts as left by a crash (longer than any provider submit). */
  submitAbandonedMs: number;
  /** How long a stopping node lets in-flight requests finish (`SHUTDOWN_GRACE_MS`). */
  shutdownGraceMs: number;
  /** The editor's agent (`AGENT`). */
  agent: Env['AGENT'];
  /**
   * The LLM agent's server (docs/editor.md, The LLM agent): any OpenAI-compatible Chat Completions endpoint.
   * `apiKey` undefined: instruct answers 503 when `AGENT=llm`.
   */
  llm: { baseUrl: string; apiKey: string | undefined; model: string; timeoutMs: number; maxSteps: number };
  /** A granted agent turn whose node stops renewing is failed after this long (`TURN_LEASE_MS`). */
  turnLeaseMs: number;
  /** Agent turns waiting per project before instruct answers 429 (`TURN_QUEUE_MAX`). */
  turnQueueMax: number;
  /** MCP sessions unused this long are dropped (`MCP_SESSION_IDLE_MS`). */
  mcpSessionIdleMs: number;
  /** Lifetime of the OAuth access tokens issued (`OAUTH_ACCESS_TOKEN_TTL_SECONDS`, docs/mcp.md). */
  oauthAccessTokenTtlMs: number;
  /** Self-registration (`SIGNUP=open`) and the opening balance it gives (docs/accounts.md, Signing up). */
  signup: { open: boolean; credits: number };
  /** Largest asset upload or import (`UPLOAD_MAX_BYTES`). */
  uploadMaxBytes: number;
  /** Origins whose pages may open the events WebSocket (`WS_ALLOWED_ORIGINS`; default: PUBLIC_BASE_URL's). */
  wsAllowedOrigins: string[] | undefined;
  /** How often open events sockets' keys and projects are checked again (`WS_RECHECK_MS`). */
  wsRecheckMs: number;
  /** Exports one user may start per minute on this process (`EXPORT_RATE_PER_MINUTE`). */
  exportRatePerMinute: number;
  /** One export's limit, queue wait and probing included (`EXPORT_TIMEOUT_MS`). */
  exportTimeoutMs: number;
  /** Exports encoded at once: the Piscina pool's threads (`EXPORT_CONCURRENCY`, default the CPU count). */
  exportConcurrency: number;
  /** Where exports stage their sources and record their ffmpeg pids (`EXPORT_WORK_DIR`). */
  exportWorkDir: string;
  /** Longest timeline of one video, the end of its last clip on any track (`TIMELINE_MAX_SEC`). */
  timelineMaxSec: number;
  /** Largest image, width × height, accepted from users (`IMAGE_MAX_PIXELS`). */
  imageMaxPixels: number;
  /** Exports of one user encoding at once; the user's others wait their turn (`EXPORT_PER_USER`). */
  exportPerUser: number;
  /** Bytes of encoded export segments kept for re-exports, least recently used going first (`SEGMENT_CACHE_MAX_BYTES`). */
  segmentCacheMaxBytes: number;
  /** Whether exports render their picture in segments kept for re-exports, or whole (`EXPORT_SEGMENTS`). */
  exportSegments: boolean;
  /** Requests per minute of one dashboard session, its bearer tokens included (`DASHBOARD_RATE_PER_MINUTE`). */
  dashboardRatePerMinute: number;
  /** Fixed tuning (not environment variables): measured choices, kept here so every setting is in one place. */
  tuning: Tuning;
}

/** The service's fixed tuning constants; each says why it has its value. */
export interface Tuning {
  /** Largest JSON request body (1 MiB): every JSON route fits in far less. */
  maxBodyBytes: number;
  /** One input image's download (job `image_url`/`image_urls`), DNS to the last byte. */
  inboundFetchTimeoutMs: number;
  /** How often the per-key and per-address rate-limit windows drop keys that went quiet. */
  limiterSweepIntervalMs: number;
  /** OAuth client registrations per client address per minute: registration is open, so it is bounded. */
  oauthRegistrationsPerMinute: number;
  /** Dashboard sign-ups per client address per minute (with SIGNUP=open anyone may register). */
  signupsPerMinute: number;
  /** Cluster mode: a job poll unacknowledged this long (its node died) goes to another node. */
  jobPollAckWaitMs: number;
  /** Cluster mode: provider polls one node runs at once (each is mostly waiting on the provider). */
  jobPollsPerNode: number;
  /** Cluster mode: jobs processing at once, cluster-wide (delayed naks stay pending until redelivered). */
  maxProcessingJobs: number;
  /**
   * Cluster mode: webhook attempts one node runs at once. Attempts mostly wait on the network, so this is high:
   * 50 endpoints hanging until WEBHOOK_TIMEOUT_MS must not hold a healthy endpoint's delivery back.
   */
  webhookAttemptsPerNode: number;
  /** Cluster mode: deliveries waiting for an attempt at once, cluster-wide. */
  maxPendingWebhooks: number;
  /** Cluster mode: a node that died mid-attempt hands it over after this (and at least twice the time-out). */
  webhookMinAckWaitMs: number;
  /** How often a turn looks at the job it waits for (the job itself is polled by the jobs feature). */
  turnJobCheckMs: number;
  /** How often a turn waiting for its job announces `media.progress`. */
  mediaProgressIntervalMs: number;
  /**
   * Bytes an events socket may have waiting to be sent before it is closed (1013): a client this far behind
   * reconnects with `since=` faster than it would catch up, and a node's memory stays bounded.
   */
  socketMaxBufferedBytes: number;
  /** How often sockets' buffered bytes are looked at (a few µs for a thousand sockets). */
  socketBackpressureCheckMs: number;
  /**
   * uWS's idle time-out of events sockets: it pings a socket silent for half of it (16 s, well below the 60 s
   * idle time-out of common proxies) and drops one that stays silent for all of it.
   */
  socketIdleTimeoutSec: number;
  /** Newest events a node keeps in memory per watched project, so reconnecting clients skip the history. */
  eventWindowSize: number;
  /**
   * Cluster mode, segmented exports: a segment unacknowledged this long (its node died) goes to another node.
   * Short, so an export loses seconds, not minutes, to a dead node; a live node heartbeats well within it.
   */
  exportSegmentAckWaitMs: number;
  /** Cluster mode: how often a node encoding a segment tells JetStream it is still at it. */
  exportSegmentHeartbeatMs: number;
  /**
   * Cluster mode: how often an export waiting for its segments looks them up in the segment cache, in case a
   * node's "done" message (core NATS: at most once) was lost.
   */
  exportSegmentLookupMs: number;
  /** Cluster mode: MF_EVENTS keeps a project's events this long… */
  eventStreamMaxAgeMs: number;
  /** …and at most this many per project (older replays are read from MongoDB). */
  eventStreamMaxPerProject: number;
}

const TUNING: Readonly<Tuning> = {
  maxBodyBytes: 1024 * 1024,
  inboundFetchTimeoutMs: 15_000,
  limiterSweepIntervalMs: 60_000,
  oauthRegistrationsPerMinute: 20,
  signupsPerMinute: 10,
  jobPollAckWaitMs: 30_000,
  jobPollsPerNode: 32,
  maxProcessingJobs: 100_000,
  webhookAttemptsPerNode: 512,
  maxPendingWebhooks: 1_000_000,
  webhookMinAckWaitMs: 30_000,
  turnJobCheckMs: 500,
  mediaProgressIntervalMs: 2000,
  socketMaxBufferedBytes: 1024 * 1024,
  socketBackpressureCheckMs: 50,
  socketIdleTimeoutSec: 32,
  eventWindowSize: 1000,
  exportSegmentAckWaitMs: 10_000,
  exportSegmentHeartbeatMs: 3_000,
  exportSegmentLookupMs: 2_000,
  eventStreamMaxAgeMs: 3_600_000,
  eventStreamMaxPerProject: 1000,
};

/**
 * `WS_ALLOWED_ORIGINS` as the origins browsers send (`https://app.example.com`: scheme, host and a non-default
 * port, lower case), so the comparison with `Origin` can be exact. Empty: undefined (the default applies).
 */
function allowedOrigins(value: string | undefined): string[] | undefined {
  const entries = (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.length === 0) return undefined;
  return entries.map((entry) => {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (!url || url.origin === 'null') {
      throw new ConfigError(`WS_ALLOWED_ORIGINS: ${entry} is not an origin, e.g. https://app.example.com`);
    }
    return url.origin;
  });
}

/** A configuration problem, reported to the operator as one line. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

const checker = createChecker(EnvSchema);

/** Parses and validates the environment once; throws ConfigError with a one-line reason. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const checked = checker.check(coerce(env));
  if (!checked.ok) throw new ConfigError(checked.message);
  return toConfig(checked.value);
}

/** Environment strings → typed values, following each property's schema type; the checker judges the rest. */
function coerce(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const properties = EnvSchema.properties as Record<string, TSchema & { type?: string }>;
  const out: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(properties)) {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') continue; // empty means unset, as in most shells' `VAR=`
    if (schema.type === 'integer') out[name] = /^-?\d+$/.test(raw) ? Number(raw) : raw;
    else if (schema.type === 'boolean') out[name] = parseBoolean(raw);
    else out[name] = raw;
  }
  return out;
}

function parseBoolean(raw: string): boolean | string {
  const lower = raw.toLowerCase();
  if (['true', '1', 'yes'].includes(lower)) return true;
  if (['false', '0', 'no'].includes(lower)) return false;
  return raw;
}

function toConfig(env: Env): Config {
  if (env.NATS_URL && !env.MONGO_URL) {
    throw new ConfigError(
      'NATS_URL is set without MONGO_URL: cluster mode needs a shared MongoDB (set MONGO_URL, or unset NATS_URL)',
    );
  }
  if (env.MONGO_URL && !env.ADMIN_TOKEN) {
    throw new ConfigError('ADMIN_TOKEN is required when MONGO_URL is set');
  }
  if (env.PROVIDER === 'fal' && !env.FAL_KEY) {
    throw new ConfigError('PROVIDER=fal needs FAL_KEY (the fal API key)');
  }
  if (env.MONGO_URL && !/^mongodb(\+srv)?:\/\//.test(env.MONGO_URL)) {
    throw new ConfigError('MONGO_URL must be a mongodb:// or mongodb+srv:// URL');
  }
  const mode: Mode = env.NATS_URL ? 'cluster' : env.MONGO_URL ? 'single-node' : 'embedded';
  return {
    mode,
    port: env.PORT,
    host: env.HOST,
    publicBaseUrl: env.PUBLIC_BASE_URL?.replace(/\/+$/, ''),
    adminToken: env.ADMIN_TOKEN,
    mongoUrl: env.MONGO_URL,
    mongoDb: env.MONGO_DB,
    natsUrls: env.NATS_URL
      ? env.NATS_URL.split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : [],
    nodeId: env.NODE_ID ?? `${hostname()}-${process.pid}`,
    mediaStore: env.MEDIA_STORE,
    mediaDir: env.MEDIA_DIR,
    provider: env.PROVIDER,
    fal:
      env.PROVIDER === 'fal' && env.FAL_KEY
        ? { key: env.FAL_KEY, queueUrl: env.FAL_QUEUE_URL.replace(/\/+$/, '') }
        : undefined,
    providerEndpoints: {
      textToVideo: env.FAL_ENDPOINT_TEXT_TO_VIDEO,
      imageToVideo: env.FAL_ENDPOINT_IMAGE_TO_VIDEO,
      fastTextToVideo: env.FAL_ENDPOINT_FAST_TEXT_TO_VIDEO,
      textToImage: env.FAL_ENDPOINT_TEXT_TO_IMAGE,
      imageEdit: env.FAL_ENDPOINT_IMAGE_EDIT,
    },
    providerTimeoutMs: env.PROVIDER_TIMEOUT_MS,
    providerPollIntervalMs: env.PROVIDER_POLL_INTERVAL_MS,
    webhookRetryDelaysMs: env.WEBHOOK_RETRY_DELAYS_MS.split(',').map(Number),
    webhookTimeoutMs: env.WEBHOOK_TIMEOUT_MS,
    webhookAllowPrivate: env.WEBHOOK_ALLOW_PRIVATE,
    rateLimitPerMinute: env.RATE_LIMIT_PER_MINUTE,
    sandboxVideoMs: env.SANDBOX_VIDEO_MS,
    sandboxImageMs: env.SANDBOX_IMAGE_MS,
    sandboxRenderConcurrency: env.SANDBOX_RENDER_CONCURRENCY,
    logLevel: env.LOG_LEVEL,
    actorPartitions: env.ACTOR_PARTITIONS,
    natsReplicas: env.NATS_REPLICAS,
    actorAckWaitMs: env.ACTOR_ACK_WAIT_MS,
    ffmpegPath: env.FFMPEG_PATH,
    ffprobePath: env.FFPROBE_PATH,
    trustProxy: env.TRUST_PROXY,
    authFailuresPerMinute: env.AUTH_FAILURES_PER_MINUTE,
    auditSink: env.AUDIT_SINK ?? (mode === 'embedded' ? 'file' : 'mongo'),
    auditDir: env.AUDIT_DIR,
    jobRetentionDays: env.JOB_RETENTION_DAYS,
    jobSweepIntervalMs: env.JOB_SWEEP_INTERVAL_MS,
    submitAbandonedMs: env.SUBMIT_ABANDONED_MS,
    shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
    agent: env.AGENT,
    llm: {
      baseUrl: env.LLM_BASE_URL.replace(/\/+$/, ''),
      apiKey: env.LLM_API_KEY,
      model: env.LLM_MODEL,
      timeoutMs: env.LLM_TIMEOUT_MS,
      maxSteps: env.AGENT_MAX_STEPS,
    },
    turnLeaseMs: env.TURN_LEASE_MS,
    turnQueueMax: env.TURN_QUEUE_MAX,
    wsAllowedOrigins: allowedOrigins(env.WS_ALLOWED_ORIGINS),
    wsRecheckMs: env.WS_RECHECK_MS,
    uploadMaxBytes: env.UPLOAD_MAX_BYTES,
    mcpSessionIdleMs: env.MCP_SESSION_IDLE_MS,
    oauthAccessTokenTtlMs: env.OAUTH_ACCESS_TOKEN_TTL_SECONDS * 1000,
    signup: { open: env.SIGNUP === 'open', credits: env.SIGNUP_CREDITS },
    exportRatePerMinute: env.EXPORT_RATE_PER_MINUTE,
    exportTimeoutMs: env.EXPORT_TIMEOUT_MS,
    exportConcurrency: env.EXPORT_CONCURRENCY ?? availableParallelism(),
    exportWorkDir: env.EXPORT_WORK_DIR,
    timelineMaxSec: env.TIMELINE_MAX_SEC,
    imageMaxPixels: env.IMAGE_MAX_PIXELS,
    exportPerUser: env.EXPORT_PER_USER,
    segmentCacheMaxBytes: env.SEGMENT_CACHE_MAX_BYTES,
    exportSegments: env.EXPORT_SEGMENTS,
    dashboardRatePerMinute: env.DASHBOARD_RATE_PER_MINUTE,
    tuning: { ...TUNING },
  };
}

/** Settings of the `mediaforge admin` CLI (it talks to a running service, so it needs none of the above). */
export function loadCliSettings(env: NodeJS.ProcessEnv = process.env): {
  url: string;
  adminToken: string | undefined;
} {
  return {
    url: (env.MEDIAFORGE_URL?.trim() || 'http://127.0.0.1:8080').replace(/\/+$/, ''),
    adminToken: env.MEDIAFORGE_ADMIN_TOKEN?.trim() || undefined,
  };
}
