// Routes validate from their definition (the schemas the OpenAPI document shows): the pipeline's checkers are
// compiled from the real route definitions, and the URL rules run at their field's place (docs/errors.md, Validation).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../src/platform/core/errors.ts';
import { createChecker } from '../../schemas/validate.ts';
import { VideoGenerateBody } from '../../schemas/jobs.ts';
import { jobRoutes } from '../../src/jobs/routes.ts';
import { adminRoutes } from '../../src/accounts/routes/admin.ts';
import { mediaRoute } from '../../src/jobs/media-route.ts';
import { compileRouteInput } from '../../src/platform/http/route-input.ts';
import { isAcceptedImageUrl } from '../../src/jobs/inbound-images.ts';
import type { RouteDefinition } from '../../src/platform/http/route.ts';
import type { JobsService } from '../../src/jobs/jobs-service.ts';
import type { AdminService } from '../../src/accounts/admin-service.ts';
import type { MediaStore } from '../../src/platform/storage/media-store.ts';

const BASE = 'http://127.0.0.1:8080';
const routes = [
  ...jobRoutes({} as JobsService, (url) => isAcceptedImageUrl(url, BASE)),
  ...adminRoutes({} as AdminService),
  mediaRoute({} as MediaStore),
];
const route = (method: string, path: string): RouteDefinition => {
  const found = routes.find((r) => r.method === method && r.path === path);
  assert.ok(found, `${method} ${path}`);
  return found;
};
const VIDEO = route('POST', '/api/v1/video/vidmodel-2/generate');
const IMAGE = route('POST', '/api/v1/image/nano-banana/generate');

/** The body's answer: the validated value, or `<status> <message>`. */
function body(definition: RouteDefinition, value: unknown): unknown {
  try {
    return compileRouteInput(definition).body(Buffer.from(JSON.stringify(value)));
  } catch (error) {
    assert.ok(error instanceof AppError, String(error));
    return `${error.status} ${error.message}`;
  }
}

function paramsAndQuery(definition: RouteDefinition, params: Record<string, string>, query = ''): unknown {
  try {
    return compileRouteInput(definition).paramsAndQuery(params, query);
  } catch (error) {
    assert.ok(error instanceof AppError, String(error));
    return `${error.status} ${error.message}`;
  }
}

describe('route input: bodies checked in the documented order, URL rules at their field', () => {
  const cases: Array<[string, RouteDefinition, Record<string, unknown>, string]> = [
    [
      'an http image_url answers before a fast of the wrong type',
      VIDEO,
      { prompt: 'x', image_url: 'http://example.com/a.png', fast: 'yes' },
      '400 image_url must be a https URL',
    ],
    [
      'an http image_urls item answers before num_images 0',
      IMAGE,
      { prompt: 'x', image_urls: ['http://example.com/a.png'], num_images: 0 },
      '400 image_urls items must be https URLs',
    ],
    [
      'fast with an image answers before a bad duration',
      VIDEO,
      { prompt: 'x', image_url: 'https://example.com/a.png', fast: true, duration_seconds: 7 },
      '400 fast mode supports text-to-video only (no image_url)',
    ],
    [
      'a missing prompt answers before a bad image_url',
      VIDEO,
      { image_url: 'ftp://example.com/a.png' },
      '400 prompt is required (non-empty string)',
    ],
    [
      'a URL that cannot be parsed is the field’s URL message',
      VIDEO,
      { prompt: 'x', image_url: 'https://exa mple.com/%' },
      '400 image_url must be a https URL',
    ],
    [
      'the schema still answers for fields after a good URL',
      VIDEO,
      { prompt: 'x', image_url: 'https://example.com/a.png', fast: 'yes' },
      '400 fast must be a boolean',
    ],
    [
      'a body that is not an object',
      VIDEO,
      [] as unknown as Record<string, unknown>,
      '400 Request body must be a JSON object',
    ],
  ];
  for (const [name, definition, value, expected] of cases) {
    it(name, () => assert.equal(body(definition, value), expected));
  }

  it('accepts the service’s own media whatever the scheme, with defaults filled in', () => {
    const own = `${BASE}/media/med_${'a'.repeat(24)}.png`;
    assert.deepEqual(body(IMAGE, { prompt: 'x', image_urls: [own] }), {
      prompt: 'x',
      image_urls: [own],
      num_images: 1,
      aspect_ratio: '1:1',
    });
  });

  it('answers Invalid JSON body for text that does not parse', () => {
    assert.throws(() => compileRouteInput(VIDEO).body(Buffer.from('{"prompt":')), /Invalid JSON body/);
  });
});

describe('route input: path parameters and queries', () => {
  it('answers 404 in the resource’s words for a parameter that cannot be an id', () => {
    const job = route('GET', '/api/v1/jobs/:job_id');
    assert.equal(paramsAndQuery(job, { job_id: 'j'.repeat(101) }), '404 Job not found');
    assert.deepEqual(paramsAndQuery(job, { job_id: 'job_1' }), { params: { job_id: 'job_1' }, query: {} });
    assert.equal(
      paramsAndQuery(route('GET', '/api/admin/v1/users/:user_id'), { user_id: '' }),
      '404 User not found',
    );
    assert.equal(
      paramsAndQuery(route('DELETE', '/api/admin/v1/keys/:key_id'), { key_id: 'k'.repeat(500) }),
      '404 API key not found',
    );
    assert.equal(
      paramsAndQuery(route('GET', '/media/:file'), { file: '../etc/passwd' }),
      '404 Media not found',
    );
  });

  it('coerces query strings to the schema’s types and answers 400 with the field’s message', () => {
    const list = route('GET', '/api/v1/jobs');
    assert.deepEqual(paramsAndQuery(list, {}, 'limit=5&status=failed&other=1'), {
      params: {},
      query: { limit: 5, status: 'failed' },
    });
    assert.equal(paramsAndQuery(list, {}, 'limit=abc'), '400 limit must be 1-100');
    assert.equal(paramsAndQuery(list, {}, 'limit=0'), '400 limit must be 1-100');
    assert.equal(
      paramsAndQuery(list, {}, 'status=done'),
      '400 status must be one of processing, completed, failed, cancelled',
    );
  });
});

describe('field rules', () => {
  it('refuses a rule placed at a field the schema does not have', async () => {
    assert.throws(
      () =>
        createChecker(VideoGenerateBody, { rules: [{ field: 'imageurl', check: () => true, message: 'x' }] }),
      /no such field/,
    );
  });
});
