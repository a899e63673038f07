export { startHttpServer, type HttpServer } from './server.ts';
export { Router, type RouteMatch } from './router.ts';
export { createPipeline, type PipelineDeps } from './pipeline.ts';
export { HttpMetrics, UNMATCHED_ROUTE } from './http-metrics.ts';
export { buildOpenApiDocument } from './openapi.ts';
export { JsonText, RawText, reply, type RouteDefinition, type RequestContext, type Reply } from './route.ts';
export { parseJson } from './json-body.ts';
export { compileRouteInput, type RouteInputChecker } from './route-input.ts';
