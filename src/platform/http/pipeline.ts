import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError } from '../core/errors.ts';
import type { RollingWindowLimiter, WindowDecision } from '../core/rolling-window.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { RequestAuthenticator } from './request-authenticator.ts';
import {
  ClientGoneError,
  SocketUpgrade,
  StreamedBody,
  type IncomingRequest,
  type OutgoingResponse,
  type RequestHandler,
} from './wire.ts';
import {
  FORM_TYPE,
  RawText,
  type HttpMethod,
  type Reply,
  type RequestContext,
  type RouteAuth,
  type RouteDefinition,
  type UploadBody,
} from './route.ts';
import { isSessionPrincipal, type KeyPrincipal } from './principal.ts';
import type { RouteMatch, Router } from './router.ts';
import { clientAddress } from './client-address.ts';
import { compileRouteInput, type RouteInputChecker } from './route-input.ts';
import { parseJson } from './json-body.ts';
import { HttpMetrics } from './http-metrics.ts';

/** What the pipeline needs: the routes and the cross-cutting services every request passes through. */
export interface PipelineDeps {
  router: Router;
  auth: RequestAuthenticator;
  /** Per API key, RATE_LIMIT_PER_MINUTE. */
  keyLimiter: RollingWindowLimiter;
  /** Per dashboard session, its session API and bearer tokens together: DASHBOARD_RATE_PER_MINUTE. */
  sessionLimiter: RollingWindowLimiter;
  /** Per client address, AUTH_FAILURES_PER_MINUTE failed authentications. */
  authFailureLimiter: RollingWindowLimiter;
  audit: AuditLog;
  log: Logger;
  trustProxy: boolean;
  /** Receives `mf_http_requests_total` and `mf_http_request_duration_seconds`. */
  metrics: MetricsRegistry;
  /** Authenticates session routes (the dashboard's session API); without it they answer 401. */
  sessions?: SessionGuard;
  /** A page for a GET that matched no route (the dashboard's not-found page), or undefined for the JSON 404. */
  notFoundPage?: (request: { path: string; headers: Record<string, string> }) => Promise<Reply> | undefined;
}

/** Resolves a browser's session for a session route: its principal, or 401/403 (docs/dashboard.md). */
export interface SessionGuard {
  authenticate(headers: Record<string, string>, method: string): Promise<KeyPrincipal>;
}

/** The deps plus what the pipeline builds from them once. */
interface PipelineState extends PipelineDeps {
  httpMetrics: HttpMetrics;
  /** Each route's input checkers, compiled from its definition when the pipeline is built. */
  inputs: Map<RouteDefinition, RouteInputChecker>;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Every request: request id → audit slot → route → authentication (per-address failure limit) → rate limit
 * → scope → handler → one error envelope → audit entry and request metrics. Audit entries are written off the
 * request path.
 *
 * Hot-path rules, each measured: with a cached key the path is synchronous up to the route handler (promise
 * hops cost throughput); per-request state lives in one class instance, with its methods on the prototype —
 * no object literal with getters (a hidden class per request) and no named closure per request (tsx keeps
 * function names, so each one costs an `Object.defineProperty`).
 */
export function createPipeline(pipelineDeps: PipelineDeps): RequestHandler {
  const inputs = new Map(pipelineDeps.router.routes.map((route) => [route, compileRouteInput(route)]));
  const deps: PipelineState = { ...pipelineDeps, httpMetrics: new HttpMetrics(pipelineDeps.metrics), inputs };
  return function handleRequest(request: IncomingRequest): Promise<OutgoingResponse> {
    const exchange = new Exchange(deps, request);
    // Waits when the audit sink has fallen behind: nothing is dropped.
    const room = exchange.audited ? deps.audit.reserve() : true;
    return room === true ? exchange.run() : room.then(() => exchange.run());
  };
}

/** One request on its way through the pipeline; also the handler's view of it (RequestContext). */
class Exchange implements RequestContext {
  readonly requestId: string;
  readonly method: HttpMethod | 'HEAD';
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly ip: string;
  readonly audited: boolean;
  principal: KeyPrincipal | null = null;
  params: unknown = undefined;
  query: unknown = undefined;
  body: unknown = undefined;
  resource: unknown = undefined;
  upload: UploadBody | undefined = undefined;
  form: URLSearchParams | null | undefined = undefined;
  private readonly started = performance.now();
  private limit: WindowDecision | undefined;
  private match: RouteMatch | undefined;
  private logger: Logger | undefined;

  constructor(
    private readonly deps: PipelineState,
    private readonly request: IncomingRequest,
  ) {
    const given = request.headers['x-request-id'];
    this.requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
    this.method = request.method as HttpMethod | 'HEAD';
    this.path = request.path;
    this.headers = request.headers;
    this.ip = clientAddress(request, deps.trustProxy);
    this.audited = request.path.startsWith('/api/');
  }

  get log(): Logger {
    return (this.logger ??= this.deps.log.child({ request_id: this.requestId }));
  }

  run(): Promise<OutgoingResponse> {
    const { log } = this.deps;
    if (log.isLevelEnabled('debug')) {
      // Headers and query may hold keys and tokens: the logger redacts them by field and by shape.
      const { method, path, rawQuery: query, headers } = this.request;
      log.debug({ request_id: this.requestId, method, path, query, headers }, 'request');
    }
    let pending: Reply | Promise<Reply>;
    try {
      pending = this.dispatch();
    } catch (error) {
      pending = this.errorReply(error);
    }
    return Promise.resolve(pending).then(
      (result) => this.finish(result),
      (error: unknown) => this.finish(this.errorReply(error)),
    );
  }

  private dispatch(): Reply | Promise<Reply> {
    // HEAD is answered by the GET route; the front then writes the headers only.
    const method = this.request.method === 'HEAD' ? 'GET' : this.request.method;
    const match = this.deps.router.match(method, this.request.path);
    this.match = match;
    // Unknown /api paths still authenticate first, so a 404 never tells a stranger which paths exist.
    const guard: RouteAuth = match.kind === 'found' ? match.route.auth : implicitAuth(this.request.path);
    if (guard.kind === 'key') {
      const principal = this.authenticate(guard);
      return principal instanceof Promise
        ? principal.then((p) => this.authorise(p, guard))
        : this.authorise(principal, guard);
    }
    if (guard.kind === 'session') {
      if (!this.deps.sessions) throw new AppError('unauthorized', 'Not signed in');
      return this.deps.sessions
        .authenticate(this.headers, this.request.method)
        .then((principal) => this.authorise(principal, { kind: 'key' }));
    }
    if (guard.kind === 'admin') this.authenticate(guard);
    return this.handle();
  }

  /** One authentication; a failure counts against the client address, which is refused past its limit. */
  private authenticate(guard: RouteAuth): KeyPrincipal | Promise<KeyPrincipal> {
    const failures = this.deps.authFailureLimiter.peek(this.ip);
    if (!failures.allowed) {
      this.limit = failures;
      throw new AppError(
        'rate_limited',
        'Too many failed authentication attempts',
        {},
        { 'retry-after': String(failures.retryAfter) },
      );
    }
    const authorization = this.request.headers.authorization;
    let result: KeyPrincipal | Promise<KeyPrincipal> | undefined;
    try {
      if (guard.kind === 'key') result = this.deps.auth.authenticateKey(authorization, guard.oauth === true);
      else this.deps.auth.authenticateAdmin(authorization);
    } catch (error) {
      return this.countFailure(error);
    }
    return result instanceof Promise ? result.catch((error: unknown) => this.countFailure(error)) : result!;
  }

  private countFailure(error: unknown): never {
    if (error instanceof AppError && error.code === 'unauthorized') {
      this.limit = this.deps.authFailureLimiter.hit(this.ip);
    }
    throw error;
  }

  /**
   * Rate limit, then scope, for a key route. A dashboard session (its session API and its bearer tokens alike)
   * has a budget of its own, not an API key's (docs/dashboard.md "Rate limits").
   */
  private authorise(principal: KeyPrincipal, guard: RouteAuth & { kind: 'key' }): Promise<Reply> {
    this.principal = principal;
    const limiter = isSessionPrincipal(principal) ? this.deps.sessionLimiter : this.deps.keyLimiter;
    const decision = limiter.hit(principal.keyId);
    this.limit = decision;
    if (!decision.allowed) {
      throw new AppError(
        'rate_limited',
        'Rate limit exceeded',
        {},
        { 'retry-after': String(decision.retryAfter) },
      );
    }
    if (guard.scope && !principal.scopes.includes(guard.scope)) {
      throw new AppError('forbidden', `Missing required scope: ${guard.scope}`);
    }
    return this.handle();
  }

  private handle(): Promise<Reply> {
    const match = this.match!;
    if (match.kind === 'not_found') {
      const page =
        this.method === 'GET' || this.method === 'HEAD' ? this.deps.notFoundPage?.(this) : undefined;
      if (page) return page;
      throw new AppError('not_found', 'Not found');
    }
    if (match.kind === 'method_not_allowed') {
      throw new AppError('method_not_allowed', 'Method not allowed', {}, { allow: match.allowed.join(', ') });
    }
    const { route } = match;
    let input = this.deps.inputs.get(route);
    if (!input) this.deps.inputs.set(route, (input = compileRouteInput(route))); // a route added late
    const { params, query } = input.paramsAndQuery(match.params, this.request.rawQuery);
    this.params = params;
    this.query = query;
    if (route.form) return this.withForm(route, route.form.maxBytes);
    if (!input.hasBody && !route.resource && !route.upload) return route.handle(this);
    return this.withBody(route, input);
  }

  /**
   * The body's part of a request, in the documented order (docs/errors.md, Order of checks): the route's
   * resource is loaded first (404 before any 400), then the JSON body is checked — or, on an upload route
   * given a media type, handed over as a stream.
   */
  private async withBody(route: RouteDefinition, input: RouteInputChecker): Promise<Reply> {
    const media = route.upload
      ? mediaTypeOf(this.headers['content-type'], route.upload.contentTypes)
      : undefined;
    // Neither JSON nor a media type this route takes: said so (after the resource's 404), not `Invalid JSON body`.
    const unsupported = route.upload && !media && !isJsonOrUntyped(this.headers['content-type']);
    let parsed: { value: unknown } | { error: unknown } | undefined;
    if (input.hasBody && !media && !unsupported) {
      const raw = await this.request.body();
      try {
        parsed = { value: parseJson(raw) };
      } catch (error) {
        parsed = { error };
      }
    }
    if (route.resource) {
      const json = parsed && 'value' in parsed && isObject(parsed.value) ? parsed.value : undefined;
      this.resource = await route.resource(
        this as RequestContext<RouteAuth, unknown, unknown, undefined>,
        json,
      );
    }
    if (unsupported) {
      throw new AppError('unsupported_media', 'unsupported_media', {
        message: `Send JSON, or the file with one of these types: ${route.upload!.contentTypes.join(', ')}`,
      });
    }
    if (media) {
      this.upload = { contentType: media, stream: this.request.bodyStream(route.upload!.maxBytes) };
    } else if (parsed) {
      if ('error' in parsed) throw parsed.error;
      this.body = input.checkBody(parsed.value, this.resource);
    }
    return route.handle(this);
  }

  /**
   * A form route: its fields when the body is a form of at most `maxBytes`, null otherwise. Nothing is refused
   * here, so the route decides the answer (its `Origin` check first, then a page or an OAuth error).
   */
  private async withForm(route: RouteDefinition, maxBytes: number): Promise<Reply> {
    if (mediaTypeOf(this.headers['content-type'], [FORM_TYPE])) {
      try {
        const chunks: Buffer[] = [];
        for await (const chunk of this.request.bodyStream(maxBytes)) chunks.push(chunk as Buffer);
        this.form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      } catch (error) {
        if (!(error instanceof AppError && error.code === 'payload_too_large')) throw error;
        this.form = null;
      }
    } else this.form = null;
    return route.handle(this);
  }

  /** Records the audit entry and the request metrics, and shapes the answer. */
  private finish(result: Reply): OutgoingResponse {
    const { request } = this;
    const status = request.aborted ? 499 : result.status;
    const elapsedMs = performance.now() - this.started;
    this.deps.httpMetrics.record(this.method, this.match, status, elapsedMs / 1000);
    if (this.audited) {
      this.deps.audit.record({
        kind: 'request',
        request_id: this.requestId,
        ts: new Date().toISOString(),
        key_id: this.principal?.keyId ?? null,
        user_id: this.principal?.userId ?? null,
        method: request.method,
        path: request.path,
        status,
        duration_ms: Math.round(elapsedMs * 100) / 100,
        ip: this.ip,
        user_agent: request.headers['user-agent'] ?? null,
      });
    }
    const headers: Record<string, string> = { 'content-type': JSON_TYPE, 'x-request-id': this.requestId };
    for (const name in result.headers) headers[name] = result.headers[name]!;
    const limit = request.path.startsWith('/api/v1') ? this.limit : undefined;
    if (limit) {
      headers['x-ratelimit-limit'] = String(limit.limit);
      headers['x-ratelimit-remaining'] = String(limit.remaining);
      headers['x-ratelimit-reset'] = String(limit.resetAt);
    }
    const body =
      result.body instanceof StreamedBody || result.body instanceof SocketUpgrade
        ? result.body
        : result.body instanceof RawText
          ? result.body.text
          : JSON.stringify(result.body);
    return { status: result.status, headers, body };
  }

  /** The one error envelope: AppErrors as `{ error, ...fields }`; anything else is a logged, opaque 500. */
  private errorReply(error: unknown): Reply {
    if (error instanceof AppError) {
      const challenge = error.status === 401 && this.match?.kind === 'found' && this.match.route.challenge;
      const headers = challenge ? { ...error.headers, 'www-authenticate': challenge } : error.headers;
      return { status: error.status, body: error.toBody(), headers };
    }
    // Nobody is left to answer; 499 (nginx's "client closed request") is what the audit log records.
    if (error instanceof ClientGoneError) return { status: 499, body: { error: 'Client closed request' } };
    this.deps.log.error({ err: error, request_id: this.requestId }, 'unhandled error');
    return { status: 500, body: { error: 'Internal server error', request_id: this.requestId } };
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The request's media type (without parameters, lower case) when it is one of `accepted`. */
function mediaTypeOf(header: string | undefined, accepted: readonly string[]): string | undefined {
  const type = header?.split(';')[0]!.trim().toLowerCase();
  return type && accepted.includes(type) ? type : undefined;
}

function isJsonOrUntyped(header: string | undefined): boolean {
  const type = header?.split(';')[0]!.trim().toLowerCase();
  return !type || type === 'application/json' || type.endsWith('+json');
}

function implicitAuth(path: string): RouteAuth {
  if (path === '/api/v1' || path.startsWith('/api/v1/')) return { kind: 'key' };
  if (path === '/api/dashboard' || path.startsWith('/api/dashboard/')) return { kind: 'session' };
  if (path === '/api/admin' || path.startsWith('/api/admin/')) return { kind: 'admin' };
  return { kind: 'none' };
}
