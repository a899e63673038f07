import type { Logger } from 'pino';
import type { AuditLog } from './audit/audit-log.ts';
import type { AuditSink } from './audit/audit-sink.ts';
import type { Clock } from './core/clock.ts';
import type { EventBus } from './core/event-bus.ts';
import type { MongoConnection } from './mongo/connect.ts';
import type { NatsLink } from './nats/connect.ts';
import type { MetricsRegistry } from './observability/metrics.ts';
import type { MediaStore } from './storage/media-store.ts';

/**
 * What every slice is wired from: the infrastructure of the configured mode, started once by the app. A slice
 * names what else it needs from the wiring (its repositories, the actors' clients) in its own feature's type.
 */
export interface Platform {
  clock: Clock;
  log: Logger;
  metrics: MetricsRegistry;
  /** Absolute base of every URL the service hands out (`PUBLIC_BASE_URL`, else the bound address). */
  baseUrl: string;
  mongo: MongoConnection;
  /** Set in cluster mode. */
  nats: NatsLink | undefined;
  store: MediaStore;
  auditSink: AuditSink;
  audit: AuditLog;
  /** Where actors' events go (project events: `project.<id>`). */
  events: EventBus;
  /** The public URL of a stored file. */
  mediaUrl(mediaId: string): string;
}
