import type { Readable } from 'node:stream';
import type { Static, TSchema } from 'typebox';
import type { Logger } from 'pino';
import type { KeyPrincipal } from './principal.ts';
import type { Scope } from '../../../schemas/scopes.ts';
import type { FieldRule } from '../../../schemas/validate.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';

/**
 * Who may call a route: an API key (optionally with a scope; `oauth` routes also take the OAuth access tokens
 * the service issued), the admin token, or anyone.
 */
export type RouteAuth =
  | { kind: 'key'; scope?: Scope; oauth?: boolean }
  /** A signed-in browser: the session cookie; state changes also need its CSRF token and our Origin. */
  | { kind: 'session' }
  | { kind: 'admin' }
  | { kind: 'none' };

/**
 * The caller a handler sees: the key's owner on API-key routes, the session's user on session routes (with
 * every scope, under the session's public id), nobody on admin and open routes.
 */
export type PrincipalOf<A extends RouteAuth> = A extends { kind: 'key' } | { kind: 'session' }
  ? KeyPrincipal
  : null;

/**
 * Everything a handler may read about the request, copied out of uWebSockets.js before any await. `params`,
 * `query` and `body` have already been validated against the route's schemas (the pipeline does it).
 */
/** A raw media body (a route with `upload`): streamed with backpressure, never whole in memory. */
export interface UploadBody {
  contentType: string;
  stream: Readable;
}

export interface RequestContext<
  A extends RouteAuth = RouteAuth,
  P = unknown,
  Q = unknown,
  B = unknown,
  R = unknown,
> {
  requestId: string;
  /** `HEAD` when a GET route answers a HEAD request (the front then sends the headers only). */
  method: HttpMethod | 'HEAD';
  path: string;
  headers: Record<string, string>;
  ip: string;
  log: Logger;
  principal: PrincipalOf<A>;
  params: P;
  query: Q;
  body: B;
  /** What the route's `resource` loaded (undefined without one). */
  resource: R;
  /** Set when a route with `upload` received a raw media body (then `body` is undefined). */
  upload: UploadBody | undefined;
  /**
   * A route with `form`: the fields of an `application/x-www-form-urlencoded` body, or null for any other body
   * (another type, too large, none) — which the route answers in its own way (a page, an OAuth error).
   */
  form: URLSearchParams | null | undefined;
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

/**
 * A route: its place, who may call it, its schemas and its handler. The schemas are the one source of both
 * the OpenAPI document and the validation the pipeline runs before the handler, so the two cannot drift:
 * `params` failures answer 404 (an id that cannot exist is not found), `query` and `body` failures 400.
 */
export interface RouteDefinition<
  A extends RouteAuth = RouteAuth,
  P extends TSchema = TSchema,
  Q extends TSchema = TSchema,
  B extends TSchema = TSchema,
  R = unknown,
> {
  method: HttpMethod;
  /** Path pattern with `:name` parameters, e.g. `/api/v1/jobs/:job_id`. */
  path: string;
  auth: A;
  summary: string;
  tags?: string[];
  params?: P;
  query?: Q;
  /** A JSON object body, checked in order: valid JSON → nesting → an object → fields (docs/errors.md). */
  body?: B;
  /**
   * Body checks a schema cannot express (URL rules, field combinations, a bound that depends on the resource),
   * run at their field's place; each gets the route's `resource` as its context.
   */
  bodyRules?: readonly FieldRule<Static<B>, NoInfer<R>>[];
  /**
   * Loads what the route acts on (a project) after authentication and the path and query checks but before the
   * body is checked, so a missing resource answers 404 before a bad body answers 400 (docs/editor.md,
   * Routes). `json` is the body parsed but unchecked (undefined when it is not a JSON object), for ids in a
   * body that must 404 too.
   */
  resource?: (ctx: RequestContext<A, Static<P>, Static<Q>, undefined>, json: unknown) => Promise<R>;
  /**
   * Accepts a raw media body as well as the JSON one: a request whose `Content-Type` is one of `contentTypes`
   * is handed over as `ctx.upload` (a stream of at most `maxBytes`) instead of being parsed.
   */
  upload?: { contentTypes: readonly string[]; maxBytes: number };
  /** Takes a form body of at most `maxBytes` as `ctx.form` (the account pages and OAuth endpoints). */
  form?: { maxBytes: number };
  responses: Record<number, ResponseSpec>;
  /** The `WWW-Authenticate` header of its 401 answers (RFC 6750; MCP's points at the resource metadata). */
  challenge?: string;
  handle(ctx: RequestContext<A, Static<P>, Static<Q>, Static<B>, R>): Promise<Reply>;
}

/** Declares a route with its handler typed from its schemas and its auth kind. */
export function defineRoute<
  const A extends RouteAuth,
  P extends TSchema = TSchema,
  Q extends TSchema = TSchema,
  B extends TSchema = TSchema,
  R = unknown,
>(route: RouteDefinition<A, P, Q, B, R>): RouteDefinition {
  return route as unknown as RouteDefinition;
}

/** The media type of HTML forms' bodies (routes with `form`). */
export const FORM_TYPE = 'application/x-www-form-urlencoded';

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
