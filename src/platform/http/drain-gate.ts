import type { OutgoingResponse, RequestHandler } from './wire.ts';

// A stopping node (docs/deploy.md, How a node stops) first says so: readiness turns 503 and every new
// request, including a WebSocket handshake, is refused with 503 on a connection that is then closed, so that
// clients and proxies retry on another node. The requests already running are not touched: they finish within
// the grace.

/** Paths still answered while draining: the probes, which must tell the orchestrator what is happening. */
const PROBE_PATHS = new Set(['/livez', '/healthz']);

const SHUTTING_DOWN: OutgoingResponse = {
  status: 503,
  headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' },
  body: '{"error":"This node is shutting down: retry the request, another node will answer"}',
  closeConnection: true,
};

export interface DrainGate {
  readonly draining: boolean;
  /** From now on, refuse new requests (the probes excepted). */
  close(): void;
  /** `handle`, behind the gate. */
  guard(handle: RequestHandler): RequestHandler;
}

export function createDrainGate(): DrainGate {
  let draining = false;
  return {
    get draining() {
      return draining;
    },
    close() {
      draining = true;
    },
    guard: (handle) => (request) =>
      draining && !PROBE_PATHS.has(request.path) ? Promise.resolve(SHUTTING_DOWN) : handle(request),
  };
}
