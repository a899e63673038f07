import type { Counter, Histogram, MetricsRegistry } from '../observability/metrics.ts';
import type { RouteMatch } from './router.ts';

/** The `route` label of requests that match no route (404 and 405): raw paths would be unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';
// Anything else a client sends as a method is folded into one series, for the same reason.
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** `mf_http_requests_total{method,route,status}` and `mf_http_request_duration_seconds{method,route}`. */
export class HttpMetrics {
  private readonly requests: Counter;
  private readonly duration: Histogram;

  constructor(registry: MetricsRegistry) {
    this.requests = registry.counter({
      name: 'mf_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status.',
      labels: ['method', 'route', 'status'],
    });
    this.duration = registry.histogram({
      name: 'mf_http_request_duration_seconds',
      help: 'Time from receiving a request to its answer, by method and route pattern.',
      labels: ['method', 'route'],
    });
  }

  /** One finished request; `match` is undefined when the request never reached the router. */
  record(method: string, match: RouteMatch | undefined, status: number, seconds: number): void {
    const route = match?.kind === 'found' ? match.route.path : UNMATCHED_ROUTE;
    const label = METHODS.has(method) ? method : 'OTHER';
    this.requests.inc([label, route, String(status)]);
    this.duration.observe([label, route], seconds);
  }
}
