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

  return async function handleRequest(request: IncomingRequest): Promise<OutgoingResponse> {
    const started = performance.now();
    const given = request.headers['x-request-id'];
    const requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
    const audited = request.path.startsWith('/api/');
    if (audited) {
      const room = deps.audit.reserve(); // waits when the audit sink has fallen behind: nothing is dropped
      if (room !== true) await room;
    }
    const ip = clientAddress(request, deps.trustProxy);
    if (log.isLevelEnabled('debug')) {
      // Headers and query may hold keys and tokens: the logger redacts them by field and by shape.
      log.debug(
        {
          request_id: requestId,
          method: request.method,
          path: request.path,
          query: request.rawQuery,
          headers: request.headers,
        },
        'request',
      );
    }
    const state: { principal: KeyPrincipal | null; limit: WindowDecision | undefined } = {
      principal: null,
      limit: undefined,
    };

    let result: Reply;
    try {
      result = await dispatch(request, requestId, ip, state);
    } catch (error) {
      result = errorReply(error, requestId, log);
    }

    const headers: Record<string, string> = {
      'content-type': JSON_TYPE,
      'x-request-id': requestId,
      ...result.headers,
    };
    if (state.limit && request.path.startsWith('/api/v1'))
      Object.assign(headers, rateLimitHeaders(state.limit));
    const body = result.body instanceof JsonText ? result.body.text : JSON.stringify(result.body);
    const response: OutgoingResponse = { status: result.status, headers, body };

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
    return response;
  };

  async function dispatch(
    request: IncomingRequest,
    requestId: string,
    ip: string,
    state: { principal: KeyPrincipal | null; limit: WindowDecision | undefined },
  ): Promise<Reply> {
    const match = router.match(request.method, request.path);
    // Unknown /api paths still authenticate first, so a 404 never tells a stranger which paths exist.
    const guard: RouteAuth = match.kind === 'found' ? match.route.auth : implicitAuth(request.path);

    if (guard.kind === 'key') {
      state.principal = await authenticate(ip, state, () =>
        auth.authenticateKey(request.headers.authorization),
      );
      const decision = deps.keyLimiter.hit(state.principal.keyId);
      state.limit = decision;
      if (!decision.allowed) {
        throw new AppError(
          'rate_limited',
          'Rate limit exceeded',
          {},
          { 'retry-after': String(decision.retryAfter) },
        );
      }
      if (guard.scope && !state.principal.scopes.includes(guard.scope)) {
        throw new AppError('forbidden', `Missing required scope: ${guard.scope}`);
      }
    } else if (guard.kind === 'admin') {
      await authenticate(ip, state, async () => auth.authenticateAdmin(request.headers.authorization));
    }

    if (match.kind === 'not_found') throw new AppError('not_found', 'Not found');
    if (match.kind === 'method_not_allowed') {
      throw new AppError('method_not_allowed', 'Method not allowed', {}, { allow: match.allowed.join(', ') });
    }

    let log: Logger | undefined;
    let query: URLSearchParams | undefined;
    const ctx: RequestContext = {
      requestId,
      method: request.method as HttpMethod,
      path: request.path,
      params: match.params,
      get query() {
        return (query ??= new URLSearchParams(request.rawQuery));
      },
      headers: request.headers,
      ip,
      principal: state.principal,
      get log() {
        return (log ??= deps.log.child({ request_id: requestId }));
      },
      json: async () => parseJson(await request.body()),
    };
    return match.route.handle(ctx);
  }

  /** Runs one authentication; a failure counts against the client address, which is refused past its limit. */
  async function authenticate<T>(
    ip: string,
    state: { limit: WindowDecision | undefined },
    attempt: () => Promise<T>,
  ): Promise<T> {
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
    try {
      return await attempt();
    } catch (error) {
      if (error instanceof AppError && error.code === 'unauthorized')
        state.limit = deps.authFailureLimiter.hit(ip);
      throw error;
    }
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
