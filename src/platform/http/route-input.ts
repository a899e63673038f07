import Type, { type TSchema } from 'typebox';
import { AppError } from '../core/errors.ts';
import { createChecker } from '../../../schemas/validate.ts';
import type { RouteDefinition } from './route.ts';
import { parseJson } from './json-body.ts';

/** Checks one request's input against its route's schemas; compiled once per route. */
export interface RouteInputChecker {
  /** Synchronous: parameters and query. */
  paramsAndQuery(params: Record<string, string>, rawQuery: string): { params: unknown; query: unknown };
  /** Whether the route takes a body (then `body` parses and checks it). */
  readonly hasBody: boolean;
  /** Parses and checks a raw body. */
  body(raw: Buffer): unknown;
  /** Checks a body already parsed (`parseJson`); `resource` is what the route loaded, for its body rules. */
  checkBody(value: unknown, resource?: unknown): unknown;
}

const PARAM_MAX_LENGTH = 200;
const NO_QUERY = Type.Object({});

/**
 * Compiles the checkers of a route from its definition — the same schemas the OpenAPI document shows.
 * A path parameter without a schema is a non-empty string of at most 200 characters.
 */
export function compileRouteInput(route: RouteDefinition): RouteInputChecker {
  const params = createChecker(route.params ?? derivedParams(route.path));
  const query = createChecker(route.query ?? NO_QUERY);
  const queryTypes = propertyTypes(route.query ?? NO_QUERY);
  const body = route.body ? createChecker(route.body, { rules: route.bodyRules ?? [] }) : undefined;
  // The hot path of a route without parameters or query (the catalogue, the account) does no work here.
  const nothingToCheck = !route.params && !route.query && !route.path.includes('/:');
  const none = { params: {}, query: {} };
  return {
    paramsAndQuery(rawParams, rawQuery) {
      if (nothingToCheck) return none;
      const checkedParams = params.check(rawParams);
      // A parameter that cannot be an id of ours names nothing: not found, in the field's own words if any.
      if (!checkedParams.ok) throw new AppError('not_found', notFoundMessage(route, checkedParams.field));
      const checkedQuery = query.check(queryValues(new URLSearchParams(rawQuery), queryTypes));
      if (!checkedQuery.ok) throw new AppError('bad_request', checkedQuery.message);
      return { params: checkedParams.value, query: checkedQuery.value };
    },
    hasBody: body !== undefined,
    body(raw) {
      return this.checkBody(parseJson(raw));
    },
    checkBody(value, resource) {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new AppError('bad_request', 'Request body must be a JSON object');
      }
      const checked = body!.check(value, resource);
      if (!checked.ok) throw new AppError('bad_request', checked.message);
      return checked.value;
    },
  };
}

function derivedParams(path: string): TSchema {
  const names = [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1]!);
  return Type.Object(
    Object.fromEntries(
      names.map((name) => [name, Type.String({ minLength: 1, maxLength: PARAM_MAX_LENGTH })]),
    ),
  );
}

function notFoundMessage(route: RouteDefinition, field: string): string {
  const property = (route.params as { properties?: Record<string, { errorMessage?: unknown }> } | undefined)
    ?.properties?.[field];
  return typeof property?.errorMessage === 'string' ? property.errorMessage : 'Not found';
}

type QueryType = 'integer' | 'number' | 'boolean' | 'array' | 'string';

function propertyTypes(schema: TSchema): Map<string, QueryType> {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return new Map(
    Object.entries(properties).map(([name, property]) => {
      const type = property.type;
      return [
        name,
        type === 'integer' || type === 'number' || type === 'boolean' || type === 'array' ? type : 'string',
      ];
    }),
  );
}

/** Query strings → the schema's types (integers, numbers, booleans, repeated names as arrays); the checker judges. */
function queryValues(search: URLSearchParams, types: Map<string, QueryType>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [name, type] of types) {
    if (type === 'array') {
      const all = search.getAll(name);
      if (all.length > 0) values[name] = all;
      continue;
    }
    const raw = search.get(name);
    if (raw === null) continue;
    if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(raw)) values[name] = Number(raw);
    else if (type === 'boolean' && (raw === 'true' || raw === 'false')) values[name] = raw === 'true';
    else values[name] = raw;
  }
  return values;
}
