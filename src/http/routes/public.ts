import { AccountResponse, HealthResponse } from '../../../schemas/account.ts';
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

/** `GET /healthz` — no auth; 503 when a dependency is down. */
export function healthRoute(
  check: () => Promise<{ mongo: 'up' | 'down'; nats: 'up' | 'down' | 'embedded' }>,
  nodeId: string,
): RouteDefinition {
  return {
    method: 'GET',
    path: '/healthz',
    auth: { kind: 'none' },
    tags: ['health'],
    summary: 'Liveness and dependency health',
    responses: {
      200: { description: 'Healthy', schema: HealthResponse },
      503: { description: 'A dependency is down' },
    },
    handle: async () => {
      const status = await check();
      const ok = status.mongo === 'up' && status.nats !== 'down';
      return reply(ok ? 200 : 503, { ok, node_id: nodeId, ...status });
    },
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
