import { HealthResponse, LivenessResponse } from '../../../schemas/account.ts';
import { ErrorSchema } from '../../../schemas/common.ts';
import { JsonText, reply, type RouteDefinition } from './route.ts';

/** The answers every API-key route may give before it runs. */
export const unauthorised = { 401: { description: 'Missing or invalid API key', schema: ErrorSchema } };
export const rateLimited = { 429: { description: 'Rate limit exceeded', schema: ErrorSchema } };

/**
 * `GET /healthz` — readiness, no auth (docs/deploy.md, How a node stops): 503 when a dependency is down or
 * while the node drains (it stops; a load balancer should send no more requests here).
 */
export function healthRoute(
  check: () => Promise<{ mongo: 'up' | 'down'; nats: 'up' | 'down' | 'embedded' }>,
  nodeId: string,
  draining: () => boolean,
): RouteDefinition {
  return {
    method: 'GET',
    path: '/healthz',
    auth: { kind: 'none' },
    tags: ['health'],
    summary: 'Readiness: dependency health, and whether the node is draining',
    responses: {
      200: { description: 'Ready', schema: HealthResponse },
      503: { description: 'A dependency is down, or the node is shutting down', schema: HealthResponse },
    },
    handle: async () => {
      const status = await check();
      const stopping = draining();
      const ok = status.mongo === 'up' && status.nats !== 'down' && !stopping;
      return reply(ok ? 200 : 503, {
        ok,
        node_id: nodeId,
        ...status,
        ...(stopping ? { draining: true } : {}),
      });
    },
  };
}

/**
 * `GET /livez` — liveness, no auth: 200 while the process runs and serves (docs/api.md, GET /livez); checks
 * nothing else.
 */
export function livenessRoute(nodeId: string): RouteDefinition {
  return {
    method: 'GET',
    path: '/livez',
    auth: { kind: 'none' },
    tags: ['health'],
    summary: 'Liveness: the process is running',
    responses: { 200: { description: 'Alive', schema: LivenessResponse } },
    handle: async () => reply(200, { ok: true, node_id: nodeId }),
  };
}

/** `GET /api/v1/openapi.json` — the description generated from the route schemas. */
export function openApiRoute(document: () => object): RouteDefinition {
  let cached: JsonText | undefined;
  return {
    method: 'GET',
    path: '/api/v1/openapi.json',
    auth: { kind: 'key' },
    tags: ['meta'],
    summary: 'The OpenAPI 3.1 description of this API',
    responses: { 200: { description: 'OpenAPI document' }, ...unauthorised },
    handle: async () => reply(200, (cached ??= new JsonText(JSON.stringify(document())))),
  };
}
