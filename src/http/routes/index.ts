export { adminRoutes } from './admin.ts';
export { accountRoute, healthRoute, modelsRoute, openApiRoute } from './public.ts';
export { metricsRoute } from './metrics.ts';
