import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError } from '../domain/errors.ts';
import type { RollingWindowLimiter, WindowDecision } from '../domain/rolling-window.ts';
import type { AuditLog } from '../services/audit-log.ts';
import type { Authenticator } from '../services/authenticator.ts';
import {
  ClientGoneError,
  type IncomingRequest,
  type OutgoingResponse,
  type RequestHandler,
} from './server.ts';
import {
  JsonText,
  type HttpMethod,
  type KeyPrincipal,
  type Reply,
  type RequestContext,
  type RouteAuth,
} from './route.ts';
import type { Router } from './router.ts';
import { clientAddress } from './client-address.ts';
import { parseJson } from './json-body.ts';

/** What the pipeline needs: the routes and the cross-cutting services every request passes through. */
export interface PipelineDeps {
  router: Router;
  auth: Authenticator;
  /** Per API key, RATE_LIMIT_PER_MINUTE. */
  keyLimiter: RollingWindowLimiter;
  /** Per client address, AUTH_FAILURES_PER_MINUTE failed authentications. */
  authFailureLimiter: RollingWindowLimiter;
  audit: AuditLog;
  log: Logger;
  trustProxy: boolean;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Every request: request id → audit slot → route → authentication (per-address failure limit) → rate limit
 * → scope → handler → one error envelope → audit entry. Audit entries are written off the request path.
 */
export function createPipeline(deps: PipelineDeps): RequestHandler {
  const { router, auth, log } = deps;

  // The path of a request with a cached key is synchronous up to the route handler: every promise hop on
  // the way costs throughput (a bare uWebSockets.js handler loses a quarter of its rate per hop or two).
  return function handleRequest(request: IncomingRequest): Promise<OutgoingResponse> {
    const started = performance.now();
    const given = request.headers['x-request-id'];
    const requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
    const audited = request.path.startsWith('/api/');
    // Waits when the audit sink has fallen behind: nothing is dropped.
    const room = audited ? deps.audit.reserve() : true;
    if (room !== true) return room.then(() => run(request, requestId, audited, started));
    return run(request, requestId, audited, started);
  };

  function run(request: IncomingRequest, requestId: string, audited: boolean, started: number) {
    const ip = clientAddress(request, deps.trustProxy);
    if (log.isLevelEnabled('debug')) {
      // Headers and query may hold keys and tokens: the logger redacts them by field and by shape.
      const { method, path, rawQuery: query, headers } = request;
      log.debug({ request_id: requestId, method, path, query, headers }, 'request');
    }
    const state: RequestState = { principal: null, limit: undefined };
    let pending: Reply | Promise<Reply>;
    try {
      pending = dispatch(request, requestId, ip, state);
    } catch (error) {
      pending = errorReply(error, requestId, log);
    }
    const finish = (result: Reply): OutgoingResponse => {
      if (audited) {
        deps.audit.record({
          kind: 'request',
          request_id: requestId,
          ts: new Date().toISOString(),
          key_id: state.principal?.keyId ?? null,
          user_id: state.principal?.userId ?? null,
          method: request.method,
          path: request.path,
          status: request.aborted ? 499 : result.status,
          duration_ms: Math.round((performance.now() - started) * 100) / 100,
          ip,
          user_agent: request.headers['user-agent'] ?? null,
        });
      }
      return toResponse(result, requestId, request.path.startsWith('/api/v1') ? state.limit : undefined);
    };
    return Promise.resolve(pending).then(finish, (error: unknown) =>
      finish(errorReply(error, requestId, log)),
    );
  }

  function dispatch(
    request: IncomingRequest,
    requestId: string,
    ip: string,
    state: RequestState,
  ): Reply | Promise<Reply> {
    const match = router.match(request.method, request.path);
    // Unknown /api paths still authenticate first, so a 404 never tells a stranger which paths exist.
    const guard: RouteAuth = match.kind === 'found' ? match.route.auth : implicitAuth(request.path);

    const proceed = (principal: KeyPrincipal | null): Promise<Reply> => {
      if (guard.kind === 'key' && principal) {
        state.principal = principal;
        const decision = deps.keyLimiter.hit(principal.keyId);
        state.limit = decision;
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
      }
      if (match.kind === 'not_found') throw new AppError('not_found', 'Not found');
      if (match.kind === 'method_not_allowed') {
        throw new AppError(
          'method_not_allowed',
          'Method not allowed',
          {},
          { allow: match.allowed.join(', ') },
        );
      }
      return match.route.handle(new Context(requestId, request, match.params, ip, state.principal, deps.log));
    };

    if (guard.kind === 'key') {
      const principal = authenticate(ip, state, () => auth.authenticateKey(request.headers.authorization));
      return principal instanceof Promise ? principal.then(proceed) : proceed(principal);
    }
    if (guard.kind === 'admin')
      authenticate(ip, state, () => auth.authenticateAdmin(request.headers.authorization));
    return proceed(null);
  }

  /** Runs one authentication; a failure counts against the client address, which is refused past its limit. */
  function authenticate<T>(ip: string, state: RequestState, attempt: () => T | Promise<T>): T | Promise<T> {
    const failures = deps.authFailureLimiter.peek(ip);
    if (!failures.allowed) {
      state.limit = failures;
      throw new AppError(
        'rate_limited',
        'Too many failed authentication attempts',
        {},
        { 'retry-after': String(failures.retryAfter) },
      );
    }
    const counted = (error: unknown): never => {
      if (error instanceof AppError && error.code === 'unauthorized')
        state.limit = deps.authFailureLimiter.hit(ip);
      throw error;
    };
    let result: T | Promise<T>;
    try {
      result = attempt();
    } catch (error) {
      return counted(error);
    }
    return result instanceof Promise ? result.catch(counted) : result;
  }
}

interface RequestState {
  principal: KeyPrincipal | null;
  limit: WindowDecision | undefined;
}

/** The answer as the front writes it: JSON body, request id, and the rate-limit headers of /api/v1. */
function toResponse(result: Reply, requestId: string, limit: WindowDecision | undefined): OutgoingResponse {
  const headers: Record<string, string> = {
    'content-type': JSON_TYPE,
    'x-request-id': requestId,
    ...result.headers,
  };
  if (limit) Object.assign(headers, rateLimitHeaders(limit));
  const body = result.body instanceof JsonText ? result.body.text : JSON.stringify(result.body);
  return { status: result.status, headers, body };
}

/**
 * The handler's view of a request. A class, so its lazy getters live on one shared prototype: a per-request
 * object literal with getters would get a hidden class of its own each time (and cost GC pauses).
 */
class Context implements RequestContext {
  readonly method: HttpMethod;
  readonly path: string;
  readonly headers: Record<string, string>;
  private logger: Logger | undefined;
  private parsedQuery: URLSearchParams | undefined;

  constructor(
    readonly requestId: string,
    private readonly request: IncomingRequest,
    readonly params: Record<string, string>,
    readonly ip: string,
    readonly principal: KeyPrincipal | null,
    private readonly rootLog: Logger,
  ) {
    this.method = request.method as HttpMethod;
    this.path = request.path;
    this.headers = request.headers;
  }

  get log(): Logger {
    return (this.logger ??= this.rootLog.child({ request_id: this.requestId }));
  }

  get query(): URLSearchParams {
    return (this.parsedQuery ??= new URLSearchParams(this.request.rawQuery));
  }

  async json(): Promise<unknown> {
    return parseJson(await this.request.body());
  }
}

function implicitAuth(path: string): RouteAuth {
  if (path === '/api/v1' || path.startsWith('/api/v1/')) return { kind: 'key' };
  if (path === '/api/admin' || path.startsWith('/api/admin/')) return { kind: 'admin' };
  return { kind: 'none' };
}

function rateLimitHeaders(decision: WindowDecision): Record<string, string> {
  return {
    'x-ratelimit-limit': String(decision.limit),
    'x-ratelimit-remaining': String(decision.remaining),
    'x-ratelimit-reset': String(decision.resetAt),
  };
}

/** The one error envelope: AppErrors as `{ error, ...fields }`; anything else is a logged, opaque 500. */
function errorReply(error: unknown, requestId: string, log: Logger): Reply {
  if (error instanceof AppError)
    return { status: error.status, body: error.toBody(), headers: error.headers };
  // Nobody is left to answer; 499 (nginx's "client closed request") is what the audit log records.
  if (error instanceof ClientGoneError) return { status: 499, body: { error: 'Client closed request' } };
  log.error({ err: error, request_id: requestId }, 'unhandled error');
  return { status: 500, body: { error: 'Internal server error', request_id: requestId } };
}
