import type { RouteDefinition } from './http/route.ts';

/**
 * One feature's wiring (accounts, jobs, webhooks; later editor, export, MCP, dashboard): its routes, what it
 * starts once the service is wired (resumed timers, periodic sweeps) and what it stops on shutdown. `stop`
 * resolves when nothing of the feature runs any more, and is safe on a feature whose `start` never ran.
 */
export interface Feature {
  routes: readonly RouteDefinition[];
  start(): Promise<void>;
  /**
   * Runs first on shutdown, while the front still serves: what clients must hear before the node goes (events
   * sockets are told to reconnect elsewhere), and work that may finish within `graceMs` (exports) before what
   * still runs is stopped.
   */
  drain?(graceMs: number): Promise<void>;
  stop(): Promise<void>;
}
