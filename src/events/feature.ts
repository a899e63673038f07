import type { Config, HttpServer, Feature, Platform } from '../platform/index.ts';
import { createEventSockets } from './event-sockets.ts';
import { eventsRoute } from './routes.ts';
import { ownedProject } from '../editor/index.ts';
import type { EventHistory, ProjectsRepository } from '../../actors/index.ts';
import type { ApiKeysRepository } from '../accounts/index.ts';

type EventsConfig = Pick<Config, 'wsAllowedOrigins' | 'wsRecheckMs' | 'tuning'>;

/**
 * The events WebSocket (docs/editor.md, The events WebSocket): its handshake route, the node's sockets and
 * their fan-out. Project events reach every node over the platform's bus (NATS subjects in cluster mode) and
 * are replayed from the platform's replay history (JetStream's MF_EVENTS in cluster mode, MongoDB otherwise).
 */
/** The platform and what the wiring gives the events slice. */
export type EventsPlatform = Platform & {
  repositories: { keys: ApiKeysRepository; projects: ProjectsRepository };
  /** Where sockets replay project events from (docs/editor.md, replay). */
  replay: EventHistory;
};

export function eventsFeature(
  config: EventsConfig,
  platform: EventsPlatform,
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
