export { mcpFeature } from './feature.ts';
export type { McpToolDeps } from './tools.ts';
