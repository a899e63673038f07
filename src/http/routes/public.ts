import { AccountResponse, HealthResponse, LivenessResponse } from '../../../schemas/account.ts';
import { ModelsResponseSchema } from '../../../schemas/models.ts';
import { ErrorSchema } from '../../../schemas/common.ts';
import { AppError } from '../../domain/errors.ts';
import type { Model } from '../../../schemas/models.ts';
import type { UsersRepository } from '../../ports/users-repository.ts';
import { JsonText, defineRoute, reply, type RouteDefinition } from '../route.ts';

const unauthorised = { 401: { description: 'Missing or invalid API key', schema: ErrorSchema } };
const rateLimited = { 429: { description: 'Rate limit exceeded', schema: ErrorSchema } };

/** `GET /api/v1/models` — the catalogue is fixed per process, so its JSON is computed once. */
export function modelsRoute(models: readonly Model[]): RouteDefinition {
  const body = new JsonText(JSON.stringify({ models }));
  return {
    method: 'GET',
    path: '/api/v1/models',
    auth: { kind: 'key', scope: 'models:read' },
    tags: ['models'],
    summary: 'List the available models with their parameters and credit prices',
    responses: {
      200: { description: 'The models catalogue', schema: ModelsResponseSchema },
      ...unauthorised,
      403: { description: 'Missing scope models:read', schema: ErrorSchema },
      ...rateLimited,
    },
    handle: async () => reply(200, body),
  };
}

/** `GET /api/v1/account` — the key's user and live balance. */
export function accountRoute(users: UsersRepository): RouteDefinition {
  return defineRoute({
    method: 'GET',
    path: '/api/v1/account',
    auth: { kind: 'key' },
    tags: ['account'],
    summary: "The key's user and credit balance",
    responses: { 200: { description: 'Account', schema: AccountResponse }, ...unauthorised, ...rateLimited },
    handle: async (ctx) => {
      const user = await users.get(ctx.principal.userId);
      if (!user) throw new AppError('not_found', 'User not found');
      return reply(200, { user_id: user.id, credits: user.credits });
    },
  });
}

/**
 * `GET /healthz` — readiness, no auth (CONTRACT §12): 503 when a dependency is down or while the node drains
 * (it stops; a load balancer should send no more requests here).
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

/** `GET /livez` — liveness, no auth: 200 while the process runs and serves (CONTRACT §12); checks nothing else. */
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
