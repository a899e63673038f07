import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Compile } from 'typebox/compile';
import type { TSchema } from 'typebox';
import { SCOPES } from '../../schemas/scopes.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, type RunningService } from '../helpers/service.ts';

describe('GET /api/v1/openapi.json', () => {
  let mongo: TestMongo;
  let service: RunningService;
  let apiKey: string;
  before(async () => {
    mongo = await startMongo();
    service = await startService({ MONGO_URL: mongo.uri });
    const admin = adminClient(service);
    apiKey = (await admin.createKey(await admin.createUser('openapi@example.com', 100), [...SCOPES])).apiKey;
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  it('serves a valid OpenAPI 3.1 document of every /api/v1 route and nothing else', async () => {
    const answer = await call<{ openapi: string; paths: Record<string, Record<string, unknown>> }>(
      service.url,
      'GET',
      '/api/v1/openapi.json',
      { token: apiKey },
    );
    assert.equal(answer.status, 200);
    const validator = new Validator();
    const result = await validator.validate(answer.body as unknown as Record<string, unknown>);
    assert.deepEqual(result.errors ?? [], []);
    assert.equal(result.valid, true);
    assert.equal(validator.version, '3.1');
    assert.deepEqual(Object.keys(answer.body.paths).sort(), [
      '/api/v1/account',
      '/api/v1/image/nano-banana/generate',
      '/api/v1/jobs',
      '/api/v1/jobs/{job_id}',
      '/api/v1/media-studio/projects',
      '/api/v1/media-studio/projects/{project_id}',
      '/api/v1/media-studio/projects/{project_id}/assets',
      '/api/v1/media-studio/projects/{project_id}/clips',
      '/api/v1/media-studio/projects/{project_id}/clips/{clip_id}',
      '/api/v1/media-studio/projects/{project_id}/events',
      '/api/v1/media-studio/projects/{project_id}/export',
      '/api/v1/media-studio/projects/{project_id}/instruct',
      '/api/v1/media-studio/projects/{project_id}/videos',
      '/api/v1/media-studio/projects/{project_id}/videos/{video_id}',
      '/api/v1/media-studio/projects/{project_id}/videos/{video_id}/messages',
      '/api/v1/models',
      '/api/v1/openapi.json',
      '/api/v1/video/vidmodel-2/generate',
    ]);
    assert.ok(
      answer.body.paths['/api/v1/jobs/{job_id}']!.delete,
      'DELETE /api/v1/jobs/{job_id} is described',
    );
    assert.ok(answer.body.paths['/api/v1/models']!.get, 'GET /api/v1/models is described');
    const assets = answer.body.paths['/api/v1/media-studio/projects/{project_id}/assets']!.post as {
      requestBody: { content: Record<string, unknown> };
    };
    assert.deepEqual(Object.keys(assets.requestBody.content).slice(0, 2), ['application/json', 'image/png']);
  });

  it('describes the models response with the same schema the catalogue is checked against', async () => {
    const answer = await call<{
      paths: Record<string, { get: { responses: Record<string, { content?: object }> } }>;
    }>(service.url, 'GET', '/api/v1/openapi.json', { token: apiKey });
    const ok = answer.body.paths['/api/v1/models']!.get.responses['200']!;
    assert.ok(ok.content, 'the 200 answer has a JSON schema');
  });

  it("describes the editor's answers the dashboard reads as they are sent", async () => {
    const doc = await call<{
      paths: Record<string, Record<string, { responses: Record<string, { content?: JsonContent }> }>>;
    }>(service.url, 'GET', '/api/v1/openapi.json', { token: apiKey });
    /** Checks a real answer against the 200 schema the document declares for its operation. */
    const conforms = (path: string, method: string, answer: { status: number; body: unknown }) => {
      assert.equal(answer.status, 200, `${method} ${path}: ${JSON.stringify(answer.body)}`);
      const declared = doc.body.paths[path]?.[method]?.responses['200']?.content?.['application/json'];
      assert.ok(declared, `${method} ${path} declares its 200 answer`);
      const validator = Compile(declared.schema as TSchema);
      assert.ok(
        validator.Check(answer.body),
        `${method} ${path}: ${JSON.stringify([...validator.Errors(answer.body)])}`,
      );
    };
    const P = '/api/v1/media-studio/projects';
    const send = (method: string, path: string, body?: unknown) =>
      call(service.url, method, path, { token: apiKey, ...(body !== undefined ? { body } : {}) });

    const created = await send('POST', P, { name: 'described' });
    conforms(P, 'post', created);
    const projectId = (created.body.project as { id: string }).id;
    conforms(P, 'get', await send('GET', P));
    conforms(`${P}/{project_id}`, 'patch', await send('PATCH', `${P}/${projectId}`, { name: 'renamed' }));
    const video = await send('POST', `${P}/${projectId}/videos`, { name: 'second' });
    conforms(`${P}/{project_id}/videos`, 'post', video);
    const videoId = (video.body.video as { id: string }).id;
    const videoPath = `${P}/{project_id}/videos/{video_id}`;
    conforms(videoPath, 'patch', await send('PATCH', `${P}/${projectId}/videos/${videoId}`, { name: 'b' }));
    // A turn puts the instruction and the agent's reply in the video's thread.
    const turn = await send('POST', `${P}/${projectId}/instruct`, {
      instruction: 'hello',
      video_id: videoId,
    });
    assert.equal(turn.status, 200, JSON.stringify(turn.body));
    const messages = await send('GET', `${P}/${projectId}/videos/${videoId}/messages`);
    conforms(`${videoPath}/messages`, 'get', messages);
    assert.ok((messages.body.messages as unknown[]).length >= 2, JSON.stringify(messages.body));
  });
});

type JsonContent = Record<string, { schema: object }>;
