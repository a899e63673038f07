export { createAuditLog, type AuditLog } from './audit/audit-log.ts';
export type { AuditEntry, AuditQuery, AuditSink } from './audit/audit-sink.ts';
export { createFileAuditSink } from './audit/file-sink.ts';
export { createMongoAuditSink } from './audit/mongo-sink.ts';
export { ConfigError, loadCliSettings, loadConfig, type Config } from './config.ts';
export { systemClock, type Clock } from './core/clock.ts';
export {
  createDomainEvents,
  NotHandledYet,
  type DomainEventHandler,
  type DomainEventMap,
  type DomainEvents,
} from './core/domain-events.ts';
export { AppError, ProjectNotFound, type ErrorCode } from './core/errors.ts';
export type { EventBus, Unsubscribe } from './core/event-bus.ts';
export { newId, randomBase62 } from './core/ids.ts';
export { RollingWindowLimiter } from './core/rolling-window.ts';
export { niceAutogroup, tiedToThisThread } from './core/tied-child.ts';
export type { Feature } from './feature.ts';
export { createDrainGate } from './http/drain-gate.ts';
export { cookieOf, FORM_MAX_BYTES, fromOwnOrigin, html, Html, page, seeOther } from './http/html.ts';
export { metricsRoute } from './http/metrics-route.ts';
export { buildOpenApiDocument } from './http/openapi.ts';
export { createPipeline, type SessionGuard } from './http/pipeline.ts';
export { isSessionPrincipal, SESSION_PRINCIPAL_PREFIX, type KeyPrincipal } from './http/principal.ts';
export { healthRoute, livenessRoute, openApiRoute, rateLimited, unauthorised } from './http/public-routes.ts';
export {
  defineRoute,
  FORM_TYPE,
  JsonText,
  RawText,
  reply,
  type Reply,
  type RequestContext,
  type ResponseSpec,
  type RouteDefinition,
} from './http/route.ts';
export { Router } from './http/router.ts';
export { startHttpServer, type HttpServer, type ServerSocket } from './http/server.ts';
export { SocketUpgrade, StreamedBody } from './http/wire.ts';
export { createLogger } from './logger.ts';
export {
  assetLinks,
  checked,
  jobLinks,
  jobResult,
  link,
  pause,
  progressReporter,
  requireScope,
  submitted,
  untilCancelled,
} from './mcp-tool/tool-support.ts';
export {
  defineTool,
  MCP_PATH,
  ToolError,
  type McpTool,
  type ToolContext,
  type ToolResult,
} from './mcp-tool/tool.ts';
export { fontFile, resolveFfmpeg } from './media/ffmpeg-path.ts';
export type { IntakeResult, MediaIntake } from './media/media-intake-port.ts';
export { createMediaIntake } from './media/media-intake.ts';
// The probe of hostile media lives in workers/ (the export's probe thread runs it); the platform passes it on.
export {
  frameRate,
  imageLimitBreach,
  interpretProbe,
  mainStreams,
  mediaLimits,
  MediaOverLimit,
  probeChecked,
  readImageSize,
  sniffImageType,
  unsupportedMedia,
  type ImageSize,
  type MediaLimits,
  type MediaProbeOptions,
  type ProbeJson,
  type ProbeStream,
  type SniffedContainer,
} from '../../workers/index.ts';
export { connectMongo, isDuplicateKeyError, type MongoConnection } from './mongo/connect.ts';
export { mongoCompatFor, type MongoCompat } from './mongo/compat.ts';
export { startEmbeddedMongo } from './mongo/embedded-jongodb.ts';
export { fromIdDoc, toIdDoc, type IdDoc } from './mongo/id-docs.ts';
export { dropIndexesIfPresent } from './mongo/indexes.ts';
export { detectMongoServer, type MongoServer } from './mongo/server.ts';
export { createJetStreamTransport } from './nats/actor-transport.ts';
export { connectNats, type NatsLink } from './nats/connect.ts';
export { createNatsEventBus, eventSubject } from './nats/event-bus.ts';
export { createJetStreamWorkQueue } from './nats/work-queue.ts';
export { ensureDurableConsumer, ensureWorkQueueStream } from './nats/streams.ts';
export { isNonPublicHost } from './net/address-policy.ts';
export { createGuardedFetch, guardedGet, guardedPost } from './net/guarded-fetch.ts';
export { actorMetrics } from './observability/actor-metrics.ts';
export { createMetricsRegistry, type MetricsRegistry } from './observability/metrics.ts';
export { registerProcessMetrics } from './observability/process-metrics.ts';
export { workerExecArgv, workerModuleUrl } from './processes/worker-module.ts';
export { startPeriodicTask, type PeriodicTask } from './scheduling/periodic-task.ts';
export { createScheduler } from './scheduling/scheduler.ts';
export type { PollVerdict, WorkScheduler } from './scheduling/work-scheduler.ts';
export { createFsMediaStore } from './storage/fs-store.ts';
export { createGridFsMediaStore } from './storage/gridfs-store.ts';
export { derivedMediaId, extensionFor, newMediaId } from './storage/media-id.ts';
export type { ByteRange, MediaStore, StoredMedia } from './storage/media-store.ts';
export type { Platform } from './platform.ts';
export { VERSION } from './version.ts';
export type { RequestAuthenticator } from './http/request-authenticator.ts';
