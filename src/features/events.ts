import type { Config } from '../config.ts';
import { createEventSockets } from '../http/event-sockets.ts';
import type { HttpServer } from '../http/server.ts';
import { eventsRoute } from '../http/routes/events.ts';
import { ownedProject } from '../services/editor.ts';
import type { Feature } from './feature.ts';
import type { Platform } from './platform.ts';

type EventsConfig = Pick<Config, 'wsAllowedOrigins' | 'wsRecheckMs' | 'tuning'>;

/**
 * The events WebSocket (CONTRACT §4, §4.2): its handshake route, the node's sockets and their fan-out. Project
 * events reach every node over the platform's bus (NATS subjects in cluster mode) and are replayed from the
 * platform's replay history (JetStream's MF_EVENTS in cluster mode, MongoDB otherwise).
 */
export function eventsFeature(
  config: EventsConfig,
  platform: Platform,
  server: HttpServer,
  /** The dashboard's tokens, checked again while their sockets are open (a sign-out closes them). */
  sessionTokens?: { authenticateToken(token: string): Promise<unknown> },
): Feature {
  const { tuning } = config;
  const sockets = createEventSockets({
    server,
    bus: platform.events,
    history: platform.replay,
    keys: platform.repositories.keys,
    sessionTokens,
    projects: platform.repositories.projects,
    clock: platform.clock,
    log: platform.log,
    metrics: platform.metrics,
    options: {
      maxBufferedBytes: tuning.socketMaxBufferedBytes,
      backpressureCheckMs: tuning.socketBackpressureCheckMs,
      recheckMs: config.wsRecheckMs,
      idleTimeoutSec: tuning.socketIdleTimeoutSec,
      windowSize: tuning.eventWindowSize,
    },
  });
  const route = eventsRoute({
    owned: (userId, projectId) => ownedProject(platform.repositories.projects, userId, projectId),
    allowedOrigins: config.wsAllowedOrigins ?? [new URL(platform.baseUrl).origin],
  });
  let started = false;
  return {
    routes: [route],
    async start() {
      sockets.start();
      started = true;
    },
    // Sockets are closed (1012) before the front stops accepting: clients reconnect to another node at once.
    drain: () => sockets.stop(),
    async stop() {
      if (started) await sockets.stop();
    },
  };
}
