import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { KeyPrincipal, Clock, EventBus, McpTool } from '../platform/index.ts';
import type { McpSessionsRepository } from './mcp-sessions.ts';
import { createSessionLookup } from './session-lookup.ts';
import { createSessionStreams } from './session-streams.ts';
import { createToolCalls } from './tool-calls.ts';

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

/** The MCP endpoint of one node. */
export interface McpEndpoint {
  /** Answers one HTTP request: POST (`initialize` opens a session), GET (its event stream), DELETE (its end). */
  handle(input: McpHttpRequest): Promise<Response>;
  /** Closes every open event stream (the node is draining: clients reconnect to another node). */
  drain(): void;
  /** Stops hearing the other nodes (the node stops). */
  close(): void;
}

const SESSION_HEADER = 'mcp-session-id';
const CANCEL_TOPIC = 'mcp.cancel';
const ENDED_TOPIC = 'mcp.ended';

/** The endpoint: sessions (session-lookup.ts), their event streams (session-streams.ts), tools (tool-calls.ts). */
export function createMcpEndpoint(options: McpEndpointOptions): McpEndpoint {
  const { sessions, clock, log } = options;
  const lookup = createSessionLookup({ sessions, clock, idleMs: options.idleMs });
  const streams = createSessionStreams();
  const calls = createToolCalls(options.tools, log);
  const unsubscribes = [
    options.bus.subscribe(CANCEL_TOPIC, (event) => {
      const key = (event as { key?: unknown } | null)?.key;
      if (typeof key === 'string') calls.cancel(key);
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
    const session = await lookup.sessionOf(sessionId, principal);
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
    return method === 'GET' ? streams.track(sessionId, response, served.close) : response;
  }

  /** A session ended (here or on another node): forgotten, its event streams closed. */
  function ended(sessionId: string): void {
    lookup.forget(sessionId);
    streams.closeSession(sessionId);
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

  /** A `notifications/cancelled` stops the call it names, when that call runs on this node. */
  function cancelNamed(sessionId: string, body: unknown): void {
    const message = body as { method?: unknown; params?: { requestId?: unknown } } | null;
    if (message?.method !== 'notifications/cancelled') return;
    const requestId = message.params?.requestId;
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const key = `${sessionId} ${requestId}`;
    if (calls.cancel(key)) return;
    options.bus.publish(CANCEL_TOPIC, { key }).catch((error: unknown) => {
      log.warn({ err: error }, 'MCP cancellation not published');
    });
  }

  function transportFor(principal: KeyPrincipal, sessionId: string) {
    const server = new Server(
      { name: 'mediaforge', version: options.version },
      { capabilities: { tools: { listChanged: false } }, instructions: options.instructions },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: calls.listed }));
    server.setRequestHandler(CallToolRequestSchema, (call, extra) =>
      calls.call(principal, sessionId, call.params, extra),
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

  return {
    handle,
    drain: () => streams.closeAll(),
    close(): void {
      for (const unsubscribe of unsubscribes) unsubscribe();
    },
  };
}

interface InitializeBody {
  method: 'initialize';
  params?: { protocolVersion?: unknown };
}

function isInitialize(body: unknown): body is InitializeBody {
  return typeof body === 'object' && body !== null && (body as { method?: unknown }).method === 'initialize';
}

/** A JSON-RPC error answered over HTTP (no request id: it concerns the HTTP request). */
function rpcError(status: number, code: number, message: string, headers: Record<string, string> = {}) {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}
