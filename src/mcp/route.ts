import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import Type from 'typebox';
import { ErrorSchema } from '../../schemas/common.ts';
import {
  type KeyPrincipal,
  MCP_PATH,
  StreamedBody,
  JsonText,
  RawText,
  defineRoute,
  reply,
  type Reply,
  type RequestContext,
  type RouteDefinition,
} from '../platform/index.ts';
import { SCOPES } from '../../schemas/scopes.ts';

// `/api/mcp` (docs/mcp.md) on the uWebSockets.js front: the pipeline authenticates, limits and audits each
// HTTP request like any other; the request is then handed to the MCP endpoint as a web-standard `Request`, and
// its `Response` written back — JSON at once, an event stream (`text/event-stream`) chunk by chunk.

/** What serves MCP (src/mcp's endpoint). */
export interface McpHttpEndpoint {
  handle(input: { request: Request; principal: KeyPrincipal; body: unknown }): Promise<Response>;
}

export interface McpRouteOptions {
  /** Absolute base of the service's URLs (`PUBLIC_BASE_URL`). */
  baseUrl: string;
}

const METADATA_PATH = '/.well-known/oauth-protected-resource';

/** The MCP routes: POST (messages), GET (the server's event stream), DELETE (end the session). */
export function mcpRoutes(endpoint: McpHttpEndpoint, options: McpRouteOptions): RouteDefinition[] {
  // A 401 tells the client where to learn how to authorise (RFC 9728 §5.1, MCP authorization).
  const challenge = `Bearer resource_metadata="${options.baseUrl}${METADATA_PATH}${MCP_PATH}"`;
  const responses = {
    200: { description: 'A JSON-RPC answer, or an event stream of them' },
    401: { description: 'Missing or invalid credentials', schema: ErrorSchema },
    429: { description: 'Rate limit exceeded', schema: ErrorSchema },
  };
  const serve = async (ctx: RequestContext<{ kind: 'key'; oauth: true }>): Promise<Reply> => {
    const request = new Request(`${options.baseUrl}${ctx.path}`, {
      method: ctx.method === 'HEAD' ? 'GET' : ctx.method,
      headers: ctx.headers,
      ...(ctx.method === 'POST' ? { body: JSON.stringify(ctx.body) } : {}),
    });
    const response = await endpoint.handle({ request, principal: ctx.principal, body: ctx.body });
    return toReply(response, ctx.method !== 'POST');
  };
  return [
    defineRoute({
      method: 'POST',
      path: MCP_PATH,
      auth: { kind: 'key', oauth: true },
      summary: 'MCP Streamable HTTP: a JSON-RPC message',
      body: Type.Object({}, { additionalProperties: true }),
      challenge,
      responses,
      handle: serve,
    }),
    defineRoute({
      method: 'GET',
      path: MCP_PATH,
      auth: { kind: 'key', oauth: true },
      summary: "MCP Streamable HTTP: the session's event stream",
      challenge,
      responses,
      handle: serve,
    }),
    defineRoute({
      method: 'DELETE',
      path: MCP_PATH,
      auth: { kind: 'key', oauth: true },
      summary: 'MCP Streamable HTTP: end the session',
      challenge,
      responses,
      handle: serve,
    }),
    // RFC 9728 §3.1 puts the resource's path after the well-known one; clients also ask the bare one.
    protectedResourceRoute(options.baseUrl, `${METADATA_PATH}${MCP_PATH}`),
    protectedResourceRoute(options.baseUrl, METADATA_PATH),
  ];
}

/**
 * `/.well-known/oauth-protected-resource/api/mcp` (RFC 9728): what `/api/mcp` is and how to send credentials
 * to it. API keys and OAuth access tokens go in `Authorization: Bearer`.
 */
function protectedResourceRoute(baseUrl: string, path: string): RouteDefinition {
  const body = new JsonText(
    JSON.stringify({
      resource: `${baseUrl}${MCP_PATH}`,
      // The service is its own authorization server (docs/mcp.md): OAuth clients start there.
      authorization_servers: [baseUrl],
      scopes_supported: [...SCOPES],
      bearer_methods_supported: ['header'],
      resource_name: 'MediaForge MCP server',
      resource_documentation: `${baseUrl}/api/v1/openapi.json`,
    }),
  );
  return {
    method: 'GET',
    path,
    auth: { kind: 'none' },
    summary: 'OAuth protected resource metadata of the MCP server (RFC 9728)',
    responses: { 200: { description: 'The metadata' } },
    handle: async () => reply(200, body, { 'cache-control': 'public, max-age=3600' }),
  };
}

/**
 * The endpoint's web `Response` as the front's reply: an event stream streams, anything else is read whole. A
 * session's own stream (`opens`: GET) starts with a comment line, so it shows itself open at once; an answer's
 * stream (POST) needs none, its first event comes at once.
 */
async function toReply(response: Response, opens: boolean): Promise<Reply> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'content-length') headers[name] = value;
  });
  const type = response.headers.get('content-type') ?? '';
  if (response.body && type.startsWith('text/event-stream')) {
    const events = Readable.fromWeb(response.body as unknown as NodeReadableStream);
    const stream = opens ? Readable.from(opened(events)) : events;
    return { status: response.status, headers, body: new StreamedBody(stream, undefined) };
  }
  const text = await response.text();
  if (!type) headers['content-type'] = 'application/json; charset=utf-8';
  return { status: response.status, headers, body: new RawText(text) };
}

/** An event stream's chunks after an opening comment line. */
async function* opened(events: Readable): AsyncGenerator<Buffer> {
  yield OPENING;
  try {
    for await (const chunk of events) yield chunk as Buffer;
  } finally {
    events.destroy(); // the client went away: the endpoint's stream is cancelled
  }
}

const OPENING = Buffer.from(': stream open\n\n');
