import { ErrorSchema } from '../../../schemas/common.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import { RawText, reply, type RouteDefinition } from './route.ts';

const PROMETHEUS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** `GET /metrics` — Prometheus text, for operators (the admin token, docs/operator.md, Metrics). */
export function metricsRoute(registry: MetricsRegistry): RouteDefinition {
  return {
    method: 'GET',
    path: '/metrics',
    auth: { kind: 'admin' },
    tags: ['admin'],
    summary: 'Metrics in the Prometheus text format 0.0.4',
    responses: {
      200: { description: 'Prometheus text' },
      401: { description: 'Missing or wrong admin token', schema: ErrorSchema },
    },
    handle: async () => reply(200, new RawText(registry.render()), { 'content-type': PROMETHEUS_TYPE }),
  };
}
