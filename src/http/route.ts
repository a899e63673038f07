import type { TSchema } from 'typebox';
import type { Logger } from 'pino';
import type { Scope } from '../domain/scopes.ts';
import type { KeyPrincipal } from '../domain/principal.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';

/** Who may call a route: an API key (optionally with a scope), the admin token, or anyone. */
export type RouteAuth = { kind: 'key'; scope?: Scope } | { kind: 'admin' } | { kind: 'none' };

/** Everything a handler may read about the request; copied out of uWebSockets.js before any await. */
export interface RequestContext {
  requestId: string;
  /** `HEAD` when a GET route answers a HEAD request (the front then sends the headers only). */
  method: HttpMethod | 'HEAD';
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: Record<string, string>;
  ip: string;
  principal: KeyPrincipal | null;
  log: Logger;
  /** The parsed JSON body (`undefined` when there is none); throws `Invalid JSON body` when it does not parse. */
  json(): Promise<unknown>;
}

/** What a handler answers. */
export interface Reply {
  status: number;
  /** Serialised to JSON, except a `RawText` (sent as it is) and a `StreamedBody` (streamed, from server.ts). */
  body: unknown;
  headers?: Record<string, string>;
}

/** One response of a route, for the OpenAPI description. */
export interface ResponseSpec {
  description: string;
  schema?: TSchema;
}

/** A route: its place, who may call it, its schemas (the OpenAPI source) and its handler. */
export interface RouteDefinition {
  method: HttpMethod;
  /** Path pattern with `:name` parameters, e.g. `/api/v1/jobs/:job_id`. */
  path: string;
  auth: RouteAuth;
  summary: string;
  tags?: string[];
  params?: TSchema;
  query?: TSchema;
  body?: TSchema;
  responses: Record<number, ResponseSpec>;
  handle(ctx: RequestContext): Promise<Reply>;
}

/** A body already serialised, written as it is; its `content-type` comes from the reply's headers. */
export class RawText {
  constructor(readonly text: string) {}
}

/** A body already serialised to JSON, for answers that never change (the catalogue, OpenAPI). */
export class JsonText extends RawText {}

/** Builds a JSON reply. */
export function reply(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return headers ? { status, body, headers } : { status, body };
}
