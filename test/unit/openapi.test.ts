import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Type from 'typebox';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ErrorSchema } from '../../schemas/common.ts';
import { ModelsResponseSchema } from '../../schemas/models.ts';
import { buildOpenApiDocument, operationIdOf, toOpenApiPath } from '../../src/platform/http/openapi.ts';
import { reply, type RouteDefinition } from '../../src/platform/http/route.ts';

const handle = async () => reply(200, {});

const JobSchema = Type.Object({
  job_id: Type.String(),
  status: Type.Union([Type.Literal('processing'), Type.Literal('completed')]),
  completed_at: Type.Union([Type.String(), Type.Null()]),
});

const VideoBodySchema = Type.Object({
  prompt: Type.String({
    minLength: 1,
    maxLength: 4000,
    errorMessage: 'prompt is required (non-empty string)',
  }),
  duration_seconds: Type.Optional(
    Type.Integer({
      default: 5,
      description: 'Clip length',
      errorMessage: 'duration_seconds must be one of 4, 5, 6, 8, 10, 15',
    }),
  ),
  errorMessage: Type.Optional(Type.String()),
});

const routes: RouteDefinition[] = [
  {
    method: 'GET',
    path: '/api/v1/models',
    auth: { kind: 'key', scope: 'models:read' },
    summary: 'List models',
    responses: { 200: { description: 'The catalogue', schema: ModelsResponseSchema } },
    handle,
  },
  {
    method: 'GET',
    path: '/api/v1/jobs/:job_id',
    auth: { kind: 'key' },
    summary: 'Read a job',
    tags: ['jobs'],
    params: Type.Object({ job_id: Type.String({ description: 'The job id', minLength: 1 }) }),
    responses: {
      200: { description: 'The job', schema: JobSchema },
      404: { description: 'Not found', schema: ErrorSchema },
    },
    handle,
  },
  {
    method: 'DELETE',
    path: '/api/v1/jobs/:job_id',
    auth: { kind: 'key' },
    summary: 'Cancel a job',
    tags: ['jobs'],
    responses: { 200: { description: 'Cancelled' } },
    handle,
  },
  {
    method: 'GET',
    path: '/api/v1/jobs',
    auth: { kind: 'key' },
    summary: 'List jobs',
    tags: ['jobs'],
    query: Type.Object({
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size' })),
      status: Type.Optional(Type.String()),
      cursor: Type.String(),
    }),
    responses: {
      200: { description: 'A page of jobs', schema: Type.Object({ jobs: Type.Array(JobSchema) }) },
    },
    handle,
  },
  {
    method: 'POST',
    path: '/api/v1/video/vidmodel-2/generate',
    auth: { kind: 'key', scope: 'video:write' },
    summary: 'Generate a video',
    tags: ['generation'],
    body: VideoBodySchema,
    responses: {
      202: { description: 'Accepted' },
      402: { description: 'Insufficient credits', schema: ErrorSchema },
    },
    handle,
  },
  {
    method: 'GET',
    path: '/api/v1/openapi.json',
    auth: { kind: 'none' },
    summary: 'This document',
    responses: { 200: { description: 'OpenAPI 3.1' } },
    handle,
  },
  {
    method: 'POST',
    path: '/api/admin/v1/users',
    auth: { kind: 'admin' },
    summary: 'Create a user',
    responses: { 201: { description: 'Created' } },
    handle,
  },
  {
    method: 'GET',
    path: '/healthz',
    auth: { kind: 'none' },
    summary: 'Health',
    responses: { 200: { description: 'Up' } },
    handle,
  },
];

const doc = buildOpenApiDocument(routes, { version: '1.2.3', serverUrl: 'http://127.0.0.1:8080' });

function operation(path: string, method: string): Record<string, unknown> {
  const found = doc.paths[path]?.[method];
  assert.ok(found, `${method} ${path} is described`);
  return found;
}

function keysDeep(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) keysDeep(item, out);
  else if (value && typeof value === 'object') {
    for (const key of Reflect.ownKeys(value)) {
      out.push(String(key));
      keysDeep((value as Record<PropertyKey, unknown>)[key], out);
    }
  }
  return out;
}

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc);
    assert.deepEqual(result.errors, undefined);
    assert.equal(result.valid, true);
    assert.equal(validator.version, '3.1');
    assert.equal(doc.openapi, '3.1.0');
  });

  it('carries the given version and server URL', () => {
    assert.equal(doc.info.version, '1.2.3');
    assert.deepEqual(doc.servers, [{ url: 'http://127.0.0.1:8080' }]);
  });

  it('describes only /api/v1 routes, leaving admin and health routes out', () => {
    assert.deepEqual(Object.keys(doc.paths).sort(), [
      '/api/v1/jobs',
      '/api/v1/jobs/{job_id}',
      '/api/v1/models',
      '/api/v1/openapi.json',
      '/api/v1/video/vidmodel-2/generate',
    ]);
  });

  it('rewrites :param segments as {param} path parameters, typed from the params schema', () => {
    assert.equal(
      toOpenApiPath('/api/v1/media-studio/projects/:project_id/export'),
      '/api/v1/media-studio/projects/{project_id}/export',
    );
    assert.deepEqual(operation('/api/v1/jobs/{job_id}', 'get').parameters, [
      {
        name: 'job_id',
        in: 'path',
        required: true,
        schema: { type: 'string', minLength: 1 },
        description: 'The job id',
      },
    ]);
  });

  it('types a path parameter as a string when the route has no params schema', () => {
    assert.deepEqual(operation('/api/v1/jobs/{job_id}', 'delete').parameters, [
      { name: 'job_id', in: 'path', required: true, schema: { type: 'string' } },
    ]);
  });

  it('turns query schema properties into query parameters, required only when the schema says so', () => {
    assert.deepEqual(operation('/api/v1/jobs', 'get').parameters, [
      {
        name: 'limit',
        in: 'query',
        required: false,
        schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
        description: 'Page size',
      },
      { name: 'status', in: 'query', required: false, schema: { type: 'string' } },
      { name: 'cursor', in: 'query', required: true, schema: { type: 'string' } },
    ]);
  });

  it('describes a body as a required application/json request body', () => {
    const body = operation('/api/v1/video/vidmodel-2/generate', 'post').requestBody as {
      required: boolean;
      content: {
        'application/json': { schema: { properties: Record<string, unknown>; required: string[] } };
      };
    };
    assert.equal(body.required, true);
    const { schema } = body.content['application/json'];
    assert.deepEqual(schema.required, ['prompt']);
    assert.deepEqual(Object.keys(schema.properties), ['prompt', 'duration_seconds', 'errorMessage']);
  });

  it('moves errorMessage into description when there is none, and drops it otherwise', () => {
    const body = operation('/api/v1/video/vidmodel-2/generate', 'post').requestBody as {
      content: { 'application/json': { schema: { properties: Record<string, Record<string, unknown>> } } };
    };
    const { properties } = body.content['application/json'].schema;
    assert.deepEqual(properties.prompt, {
      type: 'string',
      minLength: 1,
      maxLength: 4000,
      description: 'prompt is required (non-empty string)',
    });
    assert.deepEqual(properties.duration_seconds, {
      type: 'integer',
      default: 5,
      description: 'Clip length',
    });
    assert.deepEqual(properties.errorMessage, { type: 'string' }, 'a field named errorMessage is kept');
  });

  it('leaves no TypeBox-internal keys in the document', () => {
    const internal = keysDeep(doc).filter((key) => key.startsWith('~') || key.startsWith('Symbol('));
    assert.deepEqual(internal, []);
    assert.deepEqual(JSON.parse(JSON.stringify(doc)), doc);
  });

  it('gives a JSON content schema to responses that have one, and none to those without', () => {
    const responses = operation('/api/v1/jobs/{job_id}', 'get').responses as Record<
      string,
      Record<string, unknown>
    >;
    assert.ok(responses['200']?.content);
    assert.equal(responses['200']?.description, 'The job');
    const bare = operation('/api/v1/openapi.json', 'get').responses as Record<
      string,
      Record<string, unknown>
    >;
    assert.deepEqual(bare['200'], { description: 'OpenAPI 3.1' });
  });

  it('adds the 401, 403 and 429 answers the front gives on key routes with a scope', () => {
    const responses = operation('/api/v1/video/vidmodel-2/generate', 'post').responses as Record<
      string,
      unknown
    >;
    assert.deepEqual(Object.keys(responses), ['202', '401', '402', '403', '429']);
    const unscoped = operation('/api/v1/jobs/{job_id}', 'get').responses as Record<string, unknown>;
    assert.deepEqual(Object.keys(unscoped), ['200', '401', '404', '429']);
  });

  it('secures key routes with the bearer scheme and names the required scope', () => {
    assert.deepEqual((doc.components.securitySchemes as Record<string, unknown>).apiKey, {
      type: 'http',
      scheme: 'bearer',
      description: 'An API key created by the operator; each route names the scope it needs.',
    });
    const generate = operation('/api/v1/video/vidmodel-2/generate', 'post');
    assert.deepEqual(generate.security, [{ apiKey: ['video:write'] }]);
    assert.equal(generate['x-required-scope'], 'video:write');
    assert.match(String(generate.description), /`video:write`/);
    const job = operation('/api/v1/jobs/{job_id}', 'get');
    assert.deepEqual(job.security, [{ apiKey: [] }]);
    assert.equal('x-required-scope' in job, false);
  });

  it('marks routes without authentication as open', () => {
    assert.deepEqual(operation('/api/v1/openapi.json', 'get').security, []);
  });

  it('tags operations with their route tags, or the first path segment when none are given', () => {
    assert.deepEqual(operation('/api/v1/models', 'get').tags, ['models']);
    assert.deepEqual(operation('/api/v1/jobs', 'get').tags, ['jobs']);
    assert.deepEqual(
      doc.tags.map((tag) => tag.name),
      ['generation', 'jobs', 'models', 'openapi'],
    );
  });

  it('derives unique operation ids from method and path', () => {
    assert.equal(operationIdOf('GET', '/api/v1/jobs/:job_id'), 'getJobsByJobId');
    assert.equal(operationIdOf('POST', '/api/v1/video/vidmodel-2/generate'), 'postVideoVidmodel2Generate');
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    assert.equal(new Set(ids).size, ids.length);
  });

  it('refuses two routes with the same method and path', () => {
    const models = routes[0]!;
    assert.throws(
      () => buildOpenApiDocument([models, models], { version: '1', serverUrl: 'http://x' }),
      /Duplicate route/,
    );
  });
});
