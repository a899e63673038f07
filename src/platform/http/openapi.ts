import type { TSchema } from 'typebox';
import { ErrorSchema } from '../../../schemas/common.ts';
import type { HttpMethod, RouteDefinition } from './route.ts';

/** A JSON value, as the OpenAPI document is made of. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** What the document says about the service itself. */
export interface OpenApiInfo {
  version: string;
  serverUrl: string;
}

/** An OpenAPI 3.1.0 document. */
export type OpenApiDocument = {
  openapi: '3.1.0';
  info: JsonObject;
  servers: JsonObject[];
  tags: JsonObject[];
  paths: { [path: string]: { [method: string]: JsonObject } };
  components: JsonObject;
};

/** Only the public surface is described; admin, health and media routes are for operators. */
const PUBLIC_PREFIX = '/api/v1';

const SECURITY_SCHEME = 'apiKey';
const ERROR_COMPONENT = 'Error';
const ERROR_REF: JsonObject = { $ref: `#/components/schemas/${ERROR_COMPONENT}` };

// Answers the HTTP front gives on every key route, whatever the handler declares (docs/api.md).
const KEY_ROUTE_ERRORS: Record<number, string> = {
  401: 'Missing, malformed, revoked or unknown API key',
  429: 'Rate limit exceeded; see the `Retry-After` header',
};
const SCOPE_ERROR = 'The API key lacks the required scope';

// Keywords whose value is a map from names to schemas; the names must not be mistaken for keywords.
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
// Keywords whose value is data, not a schema; left as they are.
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples', 'example', 'required']);

/** Builds the OpenAPI 3.1 description of every `/api/v1` route, from the routes' own schemas. */
export function buildOpenApiDocument(routes: readonly RouteDefinition[], info: OpenApiInfo): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  const tags = new Set<string>();
  for (const route of routes) {
    if (!isPublic(route)) continue;
    const path = toOpenApiPath(route.path);
    const method = route.method.toLowerCase();
    const item = (paths[path] ??= {});
    if (item[method]) throw new Error(`Duplicate route ${route.method} ${route.path}`);
    for (const tag of tagsOf(route)) tags.add(tag);
    item[method] = buildOperation(route);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'MediaForge API',
      version: info.version,
      description:
        'Asynchronous video and image generation, jobs, credits and the chat-driven video editor. ' +
        'Every call needs `Authorization: Bearer <API_KEY>`.',
    },
    servers: [{ url: info.serverUrl }],
    tags: [...tags].sort().map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key created by the operator; each route names the scope it needs.',
        },
      },
      schemas: { [ERROR_COMPONENT]: toJsonSchema(ErrorSchema) },
    },
  };
}

/** `/api/v1/jobs/:job_id` → `/api/v1/jobs/{job_id}`. */
export function toOpenApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** A stable operation id from method and path: `GET /api/v1/jobs/:job_id` → `getJobsByJobId`. */
export function operationIdOf(method: HttpMethod, path: string): string {
  const words = path
    .slice(path.startsWith(PUBLIC_PREFIX) ? PUBLIC_PREFIX.length : 0)
    .split('/')
    .filter(Boolean)
    .flatMap((segment) => (segment.startsWith(':') ? ['by', ...splitWords(segment)] : splitWords(segment)));
  return method.toLowerCase() + words.map(capitalise).join('');
}

/** A TypeBox schema as plain JSON Schema: no internal keys, no non-JSON values, no `errorMessage`. */
export function toJsonSchema(schema: TSchema): JsonObject {
  const plain: unknown = JSON.parse(JSON.stringify(schema) ?? '{}');
  return isObject(plain) ? cleanSchema(plain) : {};
}

// Admin-token routes are left out even under the prefix: the document is for API-key holders.
function isPublic(route: RouteDefinition): boolean {
  const { path } = route;
  return route.auth.kind !== 'admin' && (path === PUBLIC_PREFIX || path.startsWith(`${PUBLIC_PREFIX}/`));
}

function tagsOf(route: RouteDefinition): string[] {
  return route.tags && route.tags.length > 0 ? [...route.tags] : [defaultTag(route.path)];
}

function buildOperation(route: RouteDefinition): JsonObject {
  const operation: JsonObject = {
    operationId: operationIdOf(route.method, route.path),
    summary: route.summary,
    description: describeAuth(route),
    tags: tagsOf(route),
  };
  const parameters = [...pathParameters(route), ...queryParameters(route)];
  if (parameters.length > 0) operation.parameters = parameters;
  if (route.body) {
    const schema = toJsonSchema(route.body);
    // An upload route also takes the raw file under each media type it accepts.
    const files = Object.fromEntries(
      (route.upload?.contentTypes ?? []).map((type) => [
        type,
        { schema: { type: 'string', contentMediaType: type } },
      ]),
    );
    operation.requestBody = {
      required: Array.isArray(schema.required) && schema.required.length > 0,
      content: { 'application/json': { schema }, ...files },
    };
  }
  operation.responses = buildResponses(route);
  if (route.auth.kind === 'key') {
    const scope = route.auth.scope;
    // OpenAPI 3.1 lets non-OAuth schemes list required roles; the scope is the role here.
    operation.security = [{ [SECURITY_SCHEME]: scope ? [scope] : [] }];
    if (scope) operation['x-required-scope'] = scope;
  } else {
    operation.security = [];
  }
  return operation;
}

function describeAuth(route: RouteDefinition): string {
  const { auth } = route;
  if (auth.kind === 'key') {
    return auth.scope
      ? `Requires an API key with scope \`${auth.scope}\`.`
      : 'Requires any valid API key; resources are limited to the key owner.';
  }
  return 'No authentication required.';
}

function pathParameters(route: RouteDefinition): JsonObject[] {
  const properties = propertiesOf(route.params);
  return [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map(([, name = '']) =>
    parameter(name, 'path', true, properties[name] ?? { type: 'string' }),
  );
}

function queryParameters(route: RouteDefinition): JsonObject[] {
  if (!route.query) return [];
  const schema = toJsonSchema(route.query);
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.entries(propertiesOf(route.query)).map(([name, property]) =>
    parameter(name, 'query', required.has(name), property),
  );
}

function parameter(name: string, where: 'path' | 'query', required: boolean, schema: JsonObject): JsonObject {
  const { description, ...rest } = schema;
  const out: JsonObject = { name, in: where, required, schema: rest };
  if (typeof description === 'string') out.description = description;
  return out;
}

function propertiesOf(schema: TSchema | undefined): Record<string, JsonObject> {
  if (!schema) return {};
  const properties = toJsonSchema(schema).properties;
  if (!isObject(properties)) return {};
  return Object.fromEntries(
    Object.entries(properties).filter((entry): entry is [string, JsonObject] => isObject(entry[1])),
  );
}

function buildResponses(route: RouteDefinition): JsonObject {
  const responses: JsonObject = {};
  for (const [status, spec] of Object.entries(route.responses)) {
    const response: JsonObject = { description: spec.description };
    if (spec.schema) response.content = { 'application/json': { schema: toJsonSchema(spec.schema) } };
    responses[status] = response;
  }
  if (route.auth.kind === 'key') {
    const implied: Record<number, string> = { ...KEY_ROUTE_ERRORS };
    if (route.auth.scope) implied[403] = SCOPE_ERROR;
    for (const [status, description] of Object.entries(implied)) {
      responses[status] ??= { description, content: { 'application/json': { schema: ERROR_REF } } };
    }
  }
  // OpenAPI requires at least one response per operation.
  if (Object.keys(responses).length === 0) responses.default = { description: 'Response' };
  return sortByStatus(responses);
}

function sortByStatus(responses: JsonObject): JsonObject {
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}

function cleanSchema(node: { [key: string]: unknown }): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    // TypeBox marks its internals with `~` keys; `errorMessage` is this service's own validation keyword.
    if (key.startsWith('~') || key === 'errorMessage') continue;
    if (DATA_KEYWORDS.has(key)) out[key] = value as JsonValue;
    else if (SCHEMA_MAPS.has(key) && isObject(value)) out[key] = cleanMap(value);
    else out[key] = cleanValue(value);
  }
  if (typeof node.errorMessage === 'string' && typeof out.description !== 'string') {
    out.description = node.errorMessage;
  }
  return out;
}

function cleanMap(map: { [key: string]: unknown }): JsonObject {
  const out: JsonObject = {};
  for (const [name, schema] of Object.entries(map))
    out[name] = isObject(schema) ? cleanSchema(schema) : (schema as JsonValue);
  return out;
}

function cleanValue(value: unknown): JsonValue {
  if (Array.isArray(value)) return value.map(cleanValue);
  return isObject(value) ? cleanSchema(value) : (value as JsonValue);
}

function defaultTag(path: string): string {
  const rest = path.slice(PUBLIC_PREFIX.length).split('/').filter(Boolean);
  return rest[0]?.replace(/\.[a-z]+$/, '') || 'api';
}

function splitWords(segment: string): string[] {
  return segment.split(/[^A-Za-z0-9]+/).filter(Boolean);
}

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

function isObject(value: unknown): value is { [key: string]: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
