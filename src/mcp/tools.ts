import type { McpTool } from '../platform/index.ts';
import { editorTools, type EditorToolDeps } from '../editor/index.ts';
import { jobTools, type JobToolDeps } from '../jobs/index.ts';

// The 17 tools (docs/mcp.md, The tools). Each calls the service its REST route calls, the same way: the same
// ownership checks (another user's job or project is the same 404, here a tool error), the same body schemas
// and rules (so the same validation messages), the same charges. The server (endpoint.ts) checks `scope` and
// `input` before `run`, and turns a thrown AppError into a tool error carrying its message and body fields.

/** What the tools use: the services and repositories the REST routes use. */
export type McpToolDeps = JobToolDeps & EditorToolDeps;

/** The MCP tools (docs/mcp.md), bound to the services. */
export function createMcpTools(deps: McpToolDeps): McpTool[] {
  return [...jobTools(deps), ...editorTools(deps)];
}
