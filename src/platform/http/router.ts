import type { HttpMethod, RouteDefinition } from './route.ts';

/** The outcome of matching a request: a route with its decoded parameters, a 405, or nothing. */
export type RouteMatch =
  | { kind: 'found'; route: RouteDefinition; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allowed: HttpMethod[] }
  | { kind: 'not_found' };

interface CompiledRoute {
  route: RouteDefinition;
  segments: string[];
}

/** A small method + path-pattern router (`/api/v1/jobs/:job_id`); parameters are URL-decoded. */
export class Router {
  private readonly exact = new Map<string, Map<HttpMethod, RouteDefinition>>();
  private readonly patterns: CompiledRoute[] = [];
  readonly routes: RouteDefinition[] = [];

  add(route: RouteDefinition): this {
    const duplicate = this.routes.find((r) => r.method === route.method && r.path === route.path);
    if (duplicate) throw new Error(`route registered twice: ${route.method} ${route.path}`);
    this.routes.push(route);
    if (route.path.includes('/:')) {
      this.patterns.push({ route, segments: route.path.split('/') });
    } else {
      const byMethod = this.exact.get(route.path) ?? new Map<HttpMethod, RouteDefinition>();
      byMethod.set(route.method, route);
      this.exact.set(route.path, byMethod);
    }
    return this;
  }

  match(method: string, path: string): RouteMatch {
    const normalised = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const allowed = new Set<HttpMethod>();
    const exact = this.exact.get(normalised);
    if (exact) {
      const route = exact.get(method as HttpMethod);
      if (route) return { kind: 'found', route, params: {} };
      for (const m of exact.keys()) allowed.add(m);
    }
    const segments = normalised.split('/');
    for (const candidate of this.patterns) {
      const params = matchSegments(candidate.segments, segments);
      if (!params) continue;
      if (candidate.route.method === method) return { kind: 'found', route: candidate.route, params };
      allowed.add(candidate.route.method);
    }
    if (allowed.size > 0) return { kind: 'method_not_allowed', allowed: [...allowed] };
    return { kind: 'not_found' };
  }
}

function matchSegments(pattern: string[], actual: string[]): Record<string, string> | undefined {
  if (pattern.length !== actual.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const expected = pattern[i]!;
    const got = actual[i]!;
    if (expected.startsWith(':')) {
      if (got === '') return undefined;
      const decoded = safeDecode(got);
      if (decoded === undefined) return undefined;
      params[expected.slice(1)] = decoded;
    } else if (expected !== got) {
      return undefined;
    }
  }
  return params;
}

function safeDecode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
