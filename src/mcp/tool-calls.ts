import type { Logger } from 'pino';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { createChecker } from '../../schemas/validate.ts';
import { AppError, type KeyPrincipal, ToolError, type McpTool, type ToolResult } from '../platform/index.ts';

/** A `tools/call` as the SDK hands it over. */
export interface ToolCallParams {
  name: string;
  arguments?: Record<string, unknown> | undefined;
}

/** What the SDK gives a call besides its parameters: its abort signal, id and the means to report progress. */
export interface ToolCallExtra {
  signal: AbortSignal;
  requestId: string | number;
  _meta?: { progressToken?: string | number | undefined } | undefined;
  sendNotification(notification: {
    method: 'notifications/progress';
    params: { progressToken: string | number; progress: number; total?: number; message?: string };
  }): Promise<void>;
}

/** The tools, as MCP lists and calls them. */
export interface ToolCalls {
  /** `tools/list`'s answer. */
  readonly listed: Tool[];
  /**
   * Runs a tool for the principal: scope and input checked first; the tool's and the service's errors become
   * tool errors (`isError`) the model can read. The call can be cancelled by `<session> <request id>`.
   */
  call(
    principal: KeyPrincipal,
    sessionId: string,
    params: ToolCallParams,
    extra: ToolCallExtra,
  ): Promise<CallToolResult>;
  /** Stops the call running on this node under `key` (`<session> <request id>`); false when none does. */
  cancel(key: string): boolean;
}

/** The tools by name, each with its input's checker, and the calls running on this node. */
export function createToolCalls(tools: readonly McpTool[], log: Logger): ToolCalls {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const checkers = new Map(tools.map((tool) => [tool.name, createChecker(tool.input)]));
  /** Calls running on this node, by `<session> <JSON-RPC id>`, so a cancellation can stop them. */
  const inflight = new Map<string, AbortController>();

  return {
    listed: tools.map(toolEntry),

    cancel(key) {
      const running = inflight.get(key);
      running?.abort();
      return running !== undefined;
    },

    async call(principal, sessionId, params, extra) {
      const tool = byName.get(params.name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
      if (tool.scope && !principal.scopes.includes(tool.scope)) {
        return failure(`Missing required scope: ${tool.scope}`);
      }
      const checked = checkers.get(tool.name)!.check(params.arguments ?? {});
      if (!checked.ok) return failure(checked.message);
      const progressToken = extra._meta?.progressToken;
      const key = `${sessionId} ${extra.requestId}`;
      const controller = new AbortController();
      extra.signal.addEventListener('abort', () => controller.abort(), { once: true });
      inflight.set(key, controller);
      try {
        const result = await tool.run(
          {
            principal,
            signal: controller.signal,
            progress: (progress, total, message) =>
              progressToken === undefined
                ? Promise.resolve()
                : extra
                    .sendNotification({
                      method: 'notifications/progress',
                      params: {
                        progressToken,
                        progress,
                        ...(total === undefined ? {} : { total }),
                        ...(message === undefined ? {} : { message }),
                      },
                    })
                    .catch(() => undefined), // the client went away: the tool goes on as REST would
          },
          checked.value,
        );
        return success(result);
      } catch (error) {
        if (error instanceof ToolError) return failure(error.message, error.details);
        if (error instanceof AppError) {
          const { error: message, ...details } = error.toBody() as { error: string } & Record<
            string,
            unknown
          >;
          return failure(message, details);
        }
        log.error({ err: error, tool: tool.name }, 'MCP tool failed');
        return failure('Internal server error');
      } finally {
        if (inflight.get(key) === controller) inflight.delete(key);
      }
    },
  };
}

function toolEntry(tool: McpTool): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: jsonSchema(tool.input) as Tool['inputSchema'],
    outputSchema: jsonSchema(tool.output) as Tool['outputSchema'],
    annotations: { title: tool.title, readOnlyHint: tool.readOnly, openWorldHint: false },
  };
}

/** A TypeBox schema as plain JSON Schema (TypeBox's own markers dropped). */
function jsonSchema(schema: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

function success(result: ToolResult): CallToolResult {
  return {
    content: [
      { type: 'text', text: result.text },
      ...(result.links ?? []).map((link) => ({ type: 'resource_link' as const, ...link })),
    ],
    structuredContent: result.structured,
  };
}

/** A tool error: the model reads it and may try again (MCP: `isError`, not a protocol error). */
function failure(message: string, details: Record<string, unknown> = {}): CallToolResult {
  const extra = Object.keys(details).length > 0 ? ` ${JSON.stringify(details)}` : '';
  return { isError: true, content: [{ type: 'text', text: `${message}${extra}` }] };
}
