import {
  type Config,
  buildOpenApiDocument,
  type RouteDefinition,
  healthRoute,
  livenessRoute,
  openApiRoute,
  metricsRoute,
  type Feature,
  type Platform,
  VERSION,
} from '../platform/index.ts';
import { buildModelsCatalog, modelsRoute } from '../jobs/index.ts';

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
