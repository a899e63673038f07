import { ModelsResponseSchema, type Model } from '../../schemas/models.ts';
import { ErrorSchema } from '../../schemas/common.ts';
import { JsonText, rateLimited, reply, unauthorised, type RouteDefinition } from '../platform/index.ts';

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
