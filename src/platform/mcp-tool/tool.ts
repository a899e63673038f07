import type { Static, TSchema } from 'typebox';
import type { KeyPrincipal } from '../http/principal.ts';
import type { Scope } from '../../../schemas/scopes.ts';

// One MCP tool (docs/mcp.md, The tools): its JSON Schemas (TypeBox, offered as `inputSchema` / `outputSchema`
// and checked before it runs), the scope it needs, and what it does through the same services as the REST
// routes.

/** Where the MCP endpoint is served (the OAuth resource the tools belong to). */
export const MCP_PATH = '/api/mcp';

/** What a running tool may use besides its input. */
export interface ToolContext {
  principal: KeyPrincipal;
  /**
   * Reports progress (`notifications/progress`) when the client gave a `progressToken`; a no-op otherwise.
   * `progress` only grows; `total` when known.
   */
  progress(progress: number, total?: number, message?: string): Promise<void>;
  /** Aborted when the client cancels the call (`notifications/cancelled`) or goes away. */
  signal: AbortSignal;
}

/** Media a result points to, as an MCP `resource_link` (a `/media/...` URL). */
export interface ToolLink {
  uri: string;
  name: string;
  mimeType?: string;
  description?: string;
}

/** A tool's answer: `structuredContent` (matches the output schema), a one-line text summary, media links. */
export interface ToolResult {
  structured: Record<string, unknown>;
  text: string;
  links?: ToolLink[];
}

/**
 * A failure the caller should read as a tool error (`isError: true`, the message as text): a missing scope, a
 * check that failed, a job that does not exist. Service `AppError`s below 500 are turned into this by the server.
 */
export class ToolError extends Error {
  override name = 'ToolError';
  constructor(
    message: string,
    /** Fields of the REST error body worth keeping (`credits_required`, `credits_remaining`, ...). */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface McpTool<I extends TSchema = TSchema, O extends TSchema = TSchema> {
  name: string;
  title: string;
  /** What the tool does and when to use it, for the model reading the tool list. */
  description: string;
  input: I;
  output: O;
  /** The REST scope the tool needs (none: any key). */
  scope?: Scope;
  /** Whether it only reads (the MCP `readOnlyHint` annotation). */
  readOnly: boolean;
  run(ctx: ToolContext, input: Static<I>): Promise<ToolResult>;
}

/** Declares a tool with `run` typed from its input schema. */
export function defineTool<I extends TSchema, O extends TSchema>(tool: McpTool<I, O>): McpTool {
  return tool as unknown as McpTool;
}
