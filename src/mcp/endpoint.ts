import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { createChecker } from '../../schemas/validate.ts';
import {
  AppError,
  type KeyPrincipal,
  type Clock,
  type EventBus,
  ToolError,
  type McpTool,
  type ToolResult,
} from '../platform/index.ts';
import type { McpSessionRecord, McpSessionsRepository } from './mcp-sessions.ts';

// The MCP server (docs/mcp.md) over the SDK's web-standard Streamable HTTP transport. Every HTTP request gets
// its own SDK server and transport, in the transport's stateless mode; the session (`Mcp-Session-Id`) is ours,
// kept in MongoDB, so any node serves any session without affinity. A `notifications/cancelled` reaches the
// call it names on whichever node runs it (over the event bus when it is another).

export interface McpEndpointOptions {
  tools: readonly McpTool[];
  sessions: McpSessionsRepository;
  clock: Clock;
  /** `MCP_SESSION_IDLE_MS`: a session unused this long is gone. */
  idleMs: number;
  /** The service's own origin: a request's `Origin`, when sent, must be it (DNS-rebinding protection). */
  origin: string;
  /** What `initialize` answers as `instructions`. */
  instructions: string;
  version: string;
  log: Logger;
  /** Carries cancellations to the node running the call (every node hears `mcp.cancel`). */
  bus: EventBus;
}

/** One HTTP request to `/api/mcp`, already authenticated. */
export interface McpHttpRequest {
  request: Request;
  principal: KeyPrincipal;
  /** The parsed JSON body of a POST. */
  body: unknown;
}

/** A session is read from the database at most this often per node (a deletion elsewhere shows within it). */
const SESSION_CACHE_MS = 5000;
/** `last_seen_at` is written at most this often per session, and at most every quarter of the idle time. */
const TOUCH_EVERY_MS = 30_000;
const SESSION_HEADER = 'mcp-session-id';
const CANCEL_TOPIC = 'mcp.cancel';
const ENDED_TOPIC = 'mcp.ended';

export function createMcpEndpoint(options: McpEndpointOptions) {
  const { tools, sessions, clock, log } = options;
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const checkers = new Map(tools.map((tool) => [tool.name, createChecker(tool.input)]));
  const listed: Tool[] = tools.map(toolEntry);
  /** Calls running on this node, by `<session> <JSON-RPC id>`, so a cancellation can stop them. */
  const inflight = new Map<string, AbortController>();
  /** Sessions this node used lately: when it read them, when they were last used, when that was last written. */
  const cache = new Map<
    string,
    { session: McpSessionRecord; readAt: number; seenAt: number; writtenAt: number }
  >();
  const touchEveryMs = Math.min(TOUCH_EVERY_MS, Math.floor(options.idleMs / 4));
  /** The open event streams (GET) of each session on this node, by their closers. */
  const streams = new Map<string, Set<() => Promise<void>>>();
  const unsubscribes = [
    options.bus.subscribe(CANCEL_TOPIC, (event) => {
      const key = (event as { key?: unknown } | null)?.key;
      if (typeof key === 'string') inflight.get(key)?.abort();
    }),
    options.bus.subscribe(ENDED_TOPIC, (event) => {
      const session = (event as { session?: unknown } | null)?.session;
      if (typeof session === 'string') ended(session);
    }),
  ];

  async function handle({ request, principal, body }: McpHttpRequest): Promise<Response> {
    const origin = request.headers.get('origin');
    if (origin !== null && origin !== options.origin) {
      return rpcError(403, -32000, 'Forbidden: the Origin is not this service');
    }
    const method = request.method;
    if (method === 'POST' && isInitialize(body)) return initialize(request, principal, body);
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
      return rpcError(405, -32000, 'Method not allowed', { allow: 'GET, POST, DELETE' });
    }
    const sessionId = request.headers.get(SESSION_HEADER);
    if (!sessionId) return rpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    const session = await sessionOf(sessionId, principal);
    if (!session) return rpcError(404, -32001, 'Session not found');
    if (method === 'DELETE') {
      await sessions.delete(sessionId);
      ended(sessionId);
      options.bus.publish(ENDED_TOPIC, { session: sessionId }).catch((error: unknown) => {
        log.warn({ err: error }, 'MCP session end not published');
      });
      return new Response(null, { status: 200 });
    }
    if (method === 'POST') cancelNamed(sessionId, body);
    const served = transportFor(principal, sessionId);
    const response = await served.handleRequest(request, { parsedBody: body });
    return method === 'GET' ? tracked(sessionId, response, served.close) : response;
  }

  /**
   * A session's event stream (GET), kept until it ends: the session's end or the node's drain closes it, so a
   * stopping node does not wait on streams that never end by themselves.
   */
  function tracked(sessionId: string, response: Response, close: () => Promise<void>): Response {
    if (response.status !== 200 || !response.body) return response;
    const open = streams.get(sessionId) ?? new Set();
    streams.set(sessionId, open);
    open.add(close);
    const forget = () => {
      open.delete(close);
      if (open.size === 0 && streams.get(sessionId) === open) streams.delete(sessionId);
    };
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) {
          forget();
          controller.close();
        } else controller.enqueue(value);
      },
      cancel(reason) {
        forget();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  }

  /** A session ended (here or on another node): forgotten, its event streams closed. */
  function ended(sessionId: string): void {
    cache.delete(sessionId);
    for (const close of streams.get(sessionId) ?? []) void close().catch(() => undefined);
    streams.delete(sessionId);
  }

  async function initialize(request: Request, principal: KeyPrincipal, body: InitializeBody) {
    const sessionId = `mcps_${randomBytes(24).toString('base64url')}`;
    const response = await transportFor(principal, sessionId).handleRequest(request, { parsedBody: body });
    if (response.status !== 200) return response;
    const now = new Date(clock.now());
    await sessions.create({
      id: sessionId,
      key_id: principal.keyId,
      user_id: principal.userId,
      protocol_version: String(body.params?.protocolVersion ?? ''),
      created_at: now,
      last_seen_at: now,
    });
    const headers = new Headers(response.headers);
    headers.set(SESSION_HEADER, sessionId);
    return new Response(response.body, { status: response.status, headers });
  }

  /** The session when it exists, belongs to this key and is not idle; its use is recorded. */
  async function sessionOf(id: string, principal: KeyPrincipal): Promise<McpSessionRecord | null> {
    const now = clock.now();
    let cached = cache.get(id);
    if (!cached || now - cached.readAt > SESSION_CACHE_MS) {
      const session = await sessions.get(id);
      if (!session) {
        cache.delete(id);
        return null;
      }
      const stored = session.last_seen_at.getTime();
      const seenAt = Math.max(stored, cached?.seenAt ?? 0);
      cached = { session, readAt: now, seenAt, writtenAt: Math.max(stored, cached?.writtenAt ?? 0) };
      cache.set(id, cached);
    }
    const { session } = cached;
    if (session.key_id !== principal.keyId) return null;
    if (now - cached.seenAt > options.idleMs) {
      cache.delete(id);
      await sessions.delete(id);
      return null;
    }
    cached.seenAt = now;
    if (now - cached.writtenAt > touchEveryMs) {
      cached.writtenAt = now;
      await sessions.touch(id, new Date(now));
    }
    return session;
  }

  /** A `notifications/cancelled` stops the call it names, when that call runs on this node. */
  function cancelNamed(sessionId: string, body: unknown): void {
    const message = body as { method?: unknown; params?: { requestId?: unknown } } | null;
    if (message?.method !== 'notifications/cancelled') return;
    const requestId = message.params?.requestId;
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const key = `${sessionId} ${requestId}`;
    const running = inflight.get(key);
    if (running) return running.abort();
    options.bus.publish(CANCEL_TOPIC, { key }).catch((error: unknown) => {
      log.warn({ err: error }, 'MCP cancellation not published');
    });
  }

  function transportFor(principal: KeyPrincipal, sessionId: string) {
    const server = new Server(
      { name: 'mediaforge', version: options.version },
      { capabilities: { tools: { listChanged: false } }, instructions: options.instructions },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
    server.setRequestHandler(CallToolRequestSchema, (call, extra) =>
      callTool(principal, sessionId, call.params, extra),
    );
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    return {
      async handleRequest(request: Request, handleOptions: { parsedBody: unknown }) {
        await server.connect(transport);
        return transport.handleRequest(request, handleOptions);
      },
      close: () => server.close(),
    };
  }

  async function callTool(
    principal: KeyPrincipal,
    sessionId: string,
    params: { name: string; arguments?: Record<string, unknown> | undefined },
    extra: {
      signal: AbortSignal;
      requestId: string | number;
      _meta?: { progressToken?: string | number | undefined } | undefined;
      sendNotification(notification: {
        method: 'notifications/progress';
        params: { progressToken: string | number; progress: number; total?: number; message?: string };
      }): Promise<void>;
    },
  ): Promise<CallToolResult> {
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
        const { error: message, ...details } = error.toBody() as { error: string } & Record<string, unknown>;
        return failure(message, details);
      }
      log.error({ err: error, tool: tool.name }, 'MCP tool failed');
      return failure('Internal server error');
    } finally {
      if (inflight.get(key) === controller) inflight.delete(key);
    }
  }

  return {
    handle,
    /** Closes every open event stream (the node is draining: clients reconnect to another node). */
    drain(): void {
      for (const sessionId of [...streams.keys()]) {
        for (const close of streams.get(sessionId) ?? []) void close().catch(() => undefined);
        streams.delete(sessionId);
      }
    },
    /** Stops hearing the other nodes (the node stops). */
    close(): void {
      for (const unsubscribe of unsubscribes) unsubscribe();
    },
  };
}

export type McpEndpoint = ReturnType<typeof createMcpEndpoint>;

interface InitializeBody {
  method: 'initialize';
  params?: { protocolVersion?: unknown };
}

function isInitialize(body: unknown): body is InitializeBody {
  return typeof body === 'object' && body !== null && (body as { method?: unknown }).method === 'initialize';
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

/** A JSON-RPC error answered over HTTP (no request id: it concerns the HTTP request). */
function rpcError(status: number, code: number, message: string, headers: Record<string, string> = {}) {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}
