import type { Config } from '../config.ts';
import { buildModelsCatalog } from '../services/models-catalog.ts';
import { buildOpenApiDocument } from '../http/openapi.ts';
import type { RouteDefinition } from '../http/route.ts';
import { healthRoute, livenessRoute, modelsRoute, openApiRoute } from '../http/routes/public.ts';
import { metricsRoute } from '../http/routes/metrics.ts';
import type { Feature } from './feature.ts';
import type { Platform } from './platform.ts';

export const VERSION = '0.1.0';

/**
 * What the service says about itself: the models catalogue, the OpenAPI document of every route (`routes` is
 * read when the document is first asked for, once every feature is wired), readiness and liveness, and metrics.
 */
export function metaFeature(
  config: Pick<Config, 'provider' | 'providerEndpoints' | 'nodeId'>,
  platform: Platform,
  routes: () => readonly RouteDefinition[],
  draining: () => boolean,
): Feature {
  const { mongo, nats } = platform;
  const models = buildModelsCatalog({ provider: config.provider, endpoints: config.providerEndpoints });
  return {
    routes: [
      modelsRoute(models),
      openApiRoute(() => buildOpenApiDocument(routes(), { version: VERSION, serverUrl: platform.baseUrl })),
      healthRoute(
        async () => ({
          mongo: (await mongo.ping()) ? 'up' : 'down',
          nats: nats ? nats.health() : 'embedded',
        }),
        config.nodeId,
        draining,
      ),
      livenessRoute(config.nodeId),
      metricsRoute(platform.metrics),
    ],
    start: async () => undefined,
    stop: async () => undefined,
  };
}
