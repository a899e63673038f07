// The fal adapter against a fake fal queue (test/fakes/fal-queue-server.ts) over real HTTP on loopback.
import { describe, it, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { createFalProvider, type FalProviderOptions } from '../../src/jobs/providers/fal.ts';
import { DEFAULT_PROVIDER_ENDPOINTS, type ProviderEndpoints } from '../../schemas/models-catalog.ts';
import {
  ProviderRejection,
  type Generation,
  type ImageGeneration,
  type MediaProvider,
  type ProviderHandle,
  type VideoGeneration,
} from '../../src/jobs/ports/media-provider.ts';
import { startFakeFal, tinyPng, type FakeFal } from '../fakes/fal-queue-server.ts';

const KEY = 'fal-test-key-3f9c2e71d0a84b56';
const PREFIX = '/edge-7f3a/q';

function video(overrides: Partial<VideoGeneration> = {}): VideoGeneration {
  return {
    capability: 'text-to-video',
    prompt: 'a lighthouse in a storm',
    duration_seconds: 5,
    aspect_ratio: '16:9',
    resolution: '720p',
    generate_audio: true,
    seed: 1234,
    ...overrides,
  };
}

function image(overrides: Partial<ImageGeneration> = {}): ImageGeneration {
  return {
    capability: 'text-to-image',
    prompt: 'a red fox',
    num_images: 1,
    aspect_ratio: '1:1',
    seed: 7,
    images: [],
    ...overrides,
  };
}

const inputImage = (n: number) => ({
  mediaId: `med_${n}`,
  url: `https://media.example.test/media/med_${n}.png`,
  contentType: 'image/png',
});

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof Error);
    return error;
  }
  assert.fail('expected a rejection');
}

describe('fal provider', () => {
  let fal: FakeFal;
  let provider: MediaProvider;

  function makeProvider(overrides: Partial<FalProviderOptions> = {}): MediaProvider {
    return createFalProvider({
      queueUrl: `${fal.url}/`,
      key: KEY,
      endpoints: DEFAULT_PROVIDER_ENDPOINTS,
      requestTimeoutMs: 2000,
      ...overrides,
    });
  }

  async function until(handle: ProviderHandle, state: string, timeoutMs = 3000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = await provider.status(handle);
      if (status.state === state) return;
      if (Date.now() > deadline) assert.fail(`still ${status.state}, expected ${state}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  before(async () => {
    fal = await startFakeFal({ key: KEY, requestPathPrefix: PREFIX });
  });
  after(() => fal.stop());
  beforeEach(() => {
    fal.requests.length = 0;
    fal.setBehaviour({
      queueMs: 20,
      runMs: 20,
      outcome: 'files',
      statusCarriesError: true,
      submitAnswer: null,
      statusAnswer: null,
      hang: [],
      imageBytes: tinyPng(),
      fileContentLength: true,
      submitOmitsUrls: false,
      urlBase: null,
    });
    provider = makeProvider();
  });

  describe('submit', () => {
    it('posts a video generation to its endpoint with fal field names and duration as a string', async () => {
      // Queued long enough that a loaded machine cannot see it finish between the submit and the check.
      fal.setBehaviour({ queueMs: 60_000 });
      const handle = await provider.submit(video());
      const [sent] = fal.requests;
      assert.equal(sent?.method, 'POST');
      assert.equal(sent?.path, '/fal-ai/vidmodel-2.0/text-to-video');
      assert.deepEqual(sent?.body, {
        prompt: 'a lighthouse in a storm',
        duration: '5',
        aspect_ratio: '16:9',
        resolution: '720p',
        generate_audio: true,
        seed: 1234,
      });
      assert.equal(handle.endpoint, 'fal-ai/vidmodel-2.0/text-to-video');
      assert.equal(fal.stateOf(handle.requestId), 'IN_QUEUE');
    });

    it('keeps the status, response and cancel URLs fal answered, which drop the sub-path', async () => {
      const handle = await provider.submit(video());
      const root = `${fal.url}${PREFIX}/fal-ai/vidmodel-2.0/requests/${handle.requestId}`;
      assert.deepEqual(handle.data, {
        status_url: `${root}/status`,
        response_url: root,
        cancel_url: `${root}/cancel`,
      });
    });

    it('sends image_url for image-to-video and image_urls for image-edit', async () => {
      await provider.submit(video({ capability: 'image-to-video', image: inputImage(1) }));
      await provider.submit(
        image({ capability: 'image-edit', images: [inputImage(2), inputImage(3)], num_images: 2 }),
      );
      const [toVideo, edit] = fal.requests;
      assert.equal(toVideo?.path, '/fal-ai/vidmodel-2.0/image-to-video');
      assert.equal((toVideo?.body as Record<string, unknown>).image_url, inputImage(1).url);
      assert.equal(edit?.path, '/fal-ai/nano-banana/edit');
      assert.deepEqual(edit?.body, {
        prompt: 'a red fox',
        num_images: 2,
        aspect_ratio: '1:1',
        seed: 7,
        image_urls: [inputImage(2).url, inputImage(3).url],
      });
    });

    it('sends no image fields for text-to-video, fast text-to-video and text-to-image', async () => {
      await provider.submit(
        video({ capability: 'fast-text-to-video', resolution: '480p', duration_seconds: 10 }),
      );
      await provider.submit(image({ num_images: 3 }));
      const [fast, still] = fal.requests;
      assert.equal(fast?.path, '/fal-ai/vidmodel-2.0/fast/text-to-video');
      assert.equal((fast?.body as Record<string, unknown>).duration, '10');
      assert.ok(!('image_url' in (fast?.body as object)));
      assert.equal(still?.path, '/fal-ai/nano-banana');
      assert.deepEqual(still?.body, { prompt: 'a red fox', num_images: 3, aspect_ratio: '1:1', seed: 7 });
    });

    it('picks each capability’s endpoint from the configured endpoints, not the defaults', async () => {
      const endpoints: ProviderEndpoints = {
        textToVideo: 'acme/video-x/t2v',
        imageToVideo: 'acme/video-x/i2v',
        fastTextToVideo: 'acme/video-x/fast/t2v',
        textToImage: 'acme/image-y',
        imageEdit: 'acme/image-y/edit',
      };
      const custom = await startFakeFal({ key: KEY, endpoints });
      try {
        const p = createFalProvider({ queueUrl: custom.url, key: KEY, endpoints });
        const generations: Generation[] = [
          video(),
          video({ capability: 'image-to-video', image: inputImage(1) }),
          video({ capability: 'fast-text-to-video' }),
          image(),
          image({ capability: 'image-edit', images: [inputImage(2)] }),
        ];
        const handles = [];
        for (const g of generations) handles.push(await p.submit(g));
        assert.deepEqual(
          custom.requests.map((r) => r.path),
          [
            '/acme/video-x/t2v',
            '/acme/video-x/i2v',
            '/acme/video-x/fast/t2v',
            '/acme/image-y',
            '/acme/image-y/edit',
          ],
        );
        assert.deepEqual(
          handles.map((h) => h.endpoint),
          Object.values(endpoints),
        );
        assert.ok(handles[2]!.data!.status_url!.startsWith(`${custom.url}/acme/video-x/requests/`));
      } finally {
        await custom.stop();
      }
    });

    it('turns a 422 validation answer into a ProviderRejection naming the field', async () => {
      const error = await rejection(provider.submit(video({ aspect_ratio: '2:1' })));
      assert.ok(error instanceof ProviderRejection);
      assert.equal(error.status, 422);
      assert.match(error.message, /aspect_ratio: Input should be/);
    });

    it('turns an unknown endpoint (404) into a ProviderRejection', async () => {
      const p = makeProvider({
        endpoints: { ...DEFAULT_PROVIDER_ENDPOINTS, textToVideo: 'fal-ai/no-such-model' },
      });
      const error = await rejection(p.submit(video()));
      assert.ok(error instanceof ProviderRejection);
      assert.equal(error.status, 404);
    });

    it('turns a wrong key (401) into a ProviderRejection that does not contain the key', async () => {
      const p = makeProvider({ key: 'wrong-key-5d1e8a' });
      const error = await rejection(p.submit(video()));
      assert.ok(error instanceof ProviderRejection);
      assert.equal(error.status, 401);
      assert.ok(!error.message.includes('wrong-key-5d1e8a'));
      assert.equal(fal.requests[0]?.authorization, 'Key wrong-key-5d1e8a');
    });

    it('throws a plain Error (not a rejection) on a 5xx answer', async () => {
      fal.setBehaviour({
        submitAnswer: {
          status: 503,
          body: { detail: 'No runner available', error_type: 'runner_scheduling_failure' },
        },
      });
      const error = await rejection(provider.submit(video()));
      assert.ok(!(error instanceof ProviderRejection));
      assert.match(error.message, /HTTP 503: No runner available/);
    });

    it('throws a plain Error when fal does not answer within the time-out', async () => {
      fal.setBehaviour({ hang: ['submit'] });
      const p = makeProvider({ requestTimeoutMs: 200 });
      const started = Date.now();
      const error = await rejection(p.submit(video()));
      assert.ok(!(error instanceof ProviderRejection));
      assert.match(error.message, /timed out after 200 ms/);
      assert.ok(Date.now() - started < 1500);
    });

    it('throws a plain Error when nothing listens at the queue URL', async () => {
      const closed = await startFakeFal({ key: KEY });
      const url = closed.url;
      await closed.stop();
      const error = await rejection(
        createFalProvider({ queueUrl: url, key: KEY, endpoints: DEFAULT_PROVIDER_ENDPOINTS }).submit(video()),
      );
      assert.ok(!(error instanceof ProviderRejection));
      assert.match(error.message, /fal submit failed/);
    });

    it('builds the documented app-id URLs only when fal’s answer leaves them out', async () => {
      const plain = await startFakeFal({ key: KEY });
      try {
        plain.setBehaviour({ submitOmitsUrls: true, queueMs: 0, runMs: 0 });
        const p = createFalProvider({ queueUrl: plain.url, key: KEY, endpoints: DEFAULT_PROVIDER_ENDPOINTS });
        const handle = await p.submit(video());
        assert.equal(
          handle.data?.status_url,
          `${plain.url}/fal-ai/vidmodel-2.0/requests/${handle.requestId}/status`,
        );
        assert.deepEqual(await p.status(handle), { state: 'completed' });
      } finally {
        await plain.stop();
      }
    });

    it('refuses URLs that point away from the queue host, so the key is never sent elsewhere', async () => {
      fal.setBehaviour({ urlBase: 'http://127.0.0.2:9' });
      const error = await rejection(provider.submit(video()));
      assert.ok(!(error instanceof ProviderRejection));
      assert.match(error.message, /not on the configured queue host/);
    });
  });

  describe('status', () => {
    it('reports queued, then running, then completed as the request moves', async () => {
      fal.setBehaviour({ queueMs: Infinity, runMs: Infinity });
      const handle = await provider.submit(video());
      assert.deepEqual(await provider.status(handle), { state: 'queued' });
      fal.advance(handle.requestId);
      assert.deepEqual(await provider.status(handle), { state: 'running' });
      fal.advance(handle.requestId);
      assert.deepEqual(await provider.status(handle), { state: 'completed' });
    });

    it('follows the status URL fal returned (a hand-built URL would 404 on this queue)', async () => {
      const handle = await provider.submit(video());
      await provider.status(handle);
      const call = fal.requests.at(-1);
      assert.equal(call?.method, 'GET');
      assert.equal(call?.path, `${PREFIX}/fal-ai/vidmodel-2.0/requests/${handle.requestId}/status`);
      assert.equal(call?.authorization, `Key ${KEY}`);
      const handBuilt = await fetch(`${fal.url}/fal-ai/vidmodel-2.0/requests/${handle.requestId}/status`, {
        headers: { authorization: `Key ${KEY}` },
      });
      assert.equal(handBuilt.status, 404);
    });

    it('reports failed when fal no longer knows the request (404)', async () => {
      const handle = await provider.submit(video());
      const status = await provider.status({
        ...handle,
        data: { ...handle.data, status_url: handle.data!.status_url!.replace(handle.requestId, 'gone') },
      });
      assert.equal(status.state, 'failed');
    });

    it('reports failed with fal’s error for a FAILED-like status', async () => {
      const handle = await provider.submit(video());
      fal.setBehaviour({
        statusAnswer: { status: 200, body: { status: 'FAILED', error: 'Runner crashed 10 times' } },
      });
      assert.deepEqual(await provider.status(handle), { state: 'failed', error: 'Runner crashed 10 times' });
    });

    it('reports failed when a completed request carries the model’s error', async () => {
      fal.setBehaviour({ outcome: 'model-error' });
      const handle = await provider.submit(video());
      await until(handle, 'failed');
      const status = await provider.status(handle);
      assert.equal(status.state, 'failed');
      assert.match(status.state === 'failed' ? status.error : '', /flagged by a content checker/);
    });

    it('throws on a 5xx answer and on a time-out, so the poller retries', async () => {
      const handle = await provider.submit(video());
      fal.setBehaviour({
        statusAnswer: { status: 500, body: { detail: 'Internal error', error_type: 'internal_error' } },
      });
      assert.match((await rejection(provider.status(handle))).message, /HTTP 500/);
      fal.setBehaviour({ statusAnswer: null, hang: ['status'] });
      const p = makeProvider({ requestTimeoutMs: 150 });
      assert.match((await rejection(p.status(handle))).message, /timed out/);
    });

    it('throws on a status it does not know', async () => {
      const handle = await provider.submit(video());
      fal.setBehaviour({ statusAnswer: { status: 200, body: { status: 'PAUSED' } } });
      assert.match((await rejection(provider.status(handle))).message, /unknown status/);
    });
  });

  describe('result', () => {
    it('returns the video as one output whose open() streams the file fal named', async () => {
      const handle = await provider.submit(video());
      await until(handle, 'completed');
      const result = await provider.result(handle);
      assert.ok(result.ok);
      assert.equal(result.outputs.length, 1);
      assert.equal(result.outputs[0]!.contentType, 'video/mp4');
      const bytes = await readAll(await result.outputs[0]!.open());
      assert.equal(bytes.subarray(4, 8).toString('ascii'), 'ftyp');
      const fetched = fal.requests.filter((r) => r.path.startsWith(PREFIX) && !r.path.endsWith('/status'));
      assert.deepEqual(
        fetched.map((r) => r.path),
        [`${PREFIX}/fal-ai/vidmodel-2.0/requests/${handle.requestId}`],
      );
    });

    it('returns one output per image, each a real PNG', async () => {
      const png = tinyPng(8, 2);
      fal.setBehaviour({ imageBytes: png });
      const handle = await provider.submit(image({ num_images: 2 }));
      await until(handle, 'completed');
      const result = await provider.result(handle);
      assert.ok(result.ok);
      assert.deepEqual(
        result.outputs.map((o) => o.contentType),
        ['image/png', 'image/png'],
      );
      for (const output of result.outputs) {
        const bytes = await readAll(await output.open());
        assert.deepEqual(bytes, png);
        assert.equal(bytes.readUInt32BE(16), 8); // IHDR width
      }
    });

    it('returns ok with no outputs when the model succeeded without files', async () => {
      fal.setBehaviour({ outcome: 'empty' });
      const handle = await provider.submit(video());
      await until(handle, 'completed');
      assert.deepEqual(await provider.result(handle), { ok: true, outputs: [] });
    });

    it('returns the model’s error (422 with detail) as ok: false', async () => {
      fal.setBehaviour({ outcome: 'model-error', statusCarriesError: false });
      const handle = await provider.submit(video());
      await until(handle, 'completed');
      const result = await provider.result(handle);
      assert.equal(result.ok, false);
      assert.match(result.ok ? '' : result.error, /^prompt: The content could not be processed/);
    });

    it('returns a 500 with detail at the response URL as ok: false', async () => {
      fal.setBehaviour({
        outcome: 'model-error',
        modelError: {
          status: 500,
          body: { detail: 'CUDA out of memory', error_type: 'runner_server_error' },
        },
      });
      const handle = await provider.submit(video());
      await until(handle, 'failed');
      assert.deepEqual(await provider.result(handle), { ok: false, error: 'CUDA out of memory' });
    });

    it('throws (to be retried) when asked before the request completed', async () => {
      fal.setBehaviour({ queueMs: Infinity });
      const handle = await provider.submit(video());
      const direct = await fetch(handle.data!.response_url!, { headers: { authorization: `Key ${KEY}` } });
      assert.equal(direct.status, 400);
      assert.match((await rejection(provider.result(handle))).message, /not ready/);
    });

    it('rejects open() when the Content-Length is over the size cap', async () => {
      fal.setBehaviour({ videoBytes: Buffer.alloc(64 * 1024, 1) });
      const p = makeProvider({ maxOutputBytes: 10_000 });
      const handle = await p.submit(video());
      await until(handle, 'completed');
      const result = await p.result(handle);
      assert.ok(result.ok);
      assert.match((await rejection(result.outputs[0]!.open())).message, /over the 10000-byte cap/);
    });

    it('errors the stream once a chunked download passes the size cap', async () => {
      fal.setBehaviour({ videoBytes: Buffer.alloc(64 * 1024, 1), fileContentLength: false });
      const p = makeProvider({ maxOutputBytes: 10_000 });
      const handle = await p.submit(video());
      await until(handle, 'completed');
      const result = await p.result(handle);
      assert.ok(result.ok);
      const stream = await result.outputs[0]!.open();
      assert.match((await rejection(readAll(stream))).message, /exceeds the 10000-byte cap/);
    });

    it('downloads a file of exactly the cap', async () => {
      fal.setBehaviour({ videoBytes: Buffer.alloc(10_000, 2), fileContentLength: false });
      const p = makeProvider({ maxOutputBytes: 10_000 });
      const handle = await p.submit(video());
      await until(handle, 'completed');
      const result = await p.result(handle);
      assert.ok(result.ok);
      assert.equal((await readAll(await result.outputs[0]!.open())).length, 10_000);
    });

    it('times out a download whose server never answers, or stops sending', async () => {
      const p = makeProvider({ requestTimeoutMs: 150 });
      const handle = await p.submit(video());
      await until(handle, 'completed');
      const result = await p.result(handle);
      assert.ok(result.ok);
      fal.setBehaviour({ hang: ['file'] });
      assert.match((await rejection(result.outputs[0]!.open())).message, /timed out/);
      fal.setBehaviour({ hang: ['file-body'], videoBytes: Buffer.alloc(4096, 3) });
      const stream = await result.outputs[0]!.open();
      assert.match((await rejection(readAll(stream))).message, /timed out after 150 ms without data/);
    });

    it('does not send the key when downloading output files', async () => {
      const handle = await provider.submit(video());
      await until(handle, 'completed');
      const result = await provider.result(handle);
      assert.ok(result.ok);
      await readAll(await result.outputs[0]!.open());
      const download = fal.requests.find((r) => r.path.startsWith('/files/'));
      assert.ok(download);
      assert.equal(download.authorization, undefined);
    });
  });

  describe('cancel', () => {
    it('cancels a queued request (202 CANCELLATION_REQUESTED), which then reports failed', async () => {
      fal.setBehaviour({ queueMs: Infinity });
      const handle = await provider.submit(video());
      assert.equal(await provider.cancel(handle), true);
      const call = fal.requests.at(-1);
      assert.equal(call?.method, 'PUT');
      assert.equal(call?.path, `${PREFIX}/fal-ai/vidmodel-2.0/requests/${handle.requestId}/cancel`);
      assert.equal(fal.stateOf(handle.requestId), 'CANCELLED');
      assert.equal((await provider.status(handle)).state, 'failed');
      assert.equal((await provider.result(handle)).ok, false);
    });

    it('returns false once the request is running or completed (400 ALREADY_COMPLETED)', async () => {
      fal.setBehaviour({ queueMs: Infinity, runMs: Infinity });
      const handle = await provider.submit(video());
      fal.advance(handle.requestId);
      assert.equal(await provider.cancel(handle), false);
      fal.advance(handle.requestId);
      assert.equal(await provider.cancel(handle), false);
      assert.equal(fal.stateOf(handle.requestId), 'COMPLETED');
    });

    it('returns false, without throwing, for unknown requests, time-outs and network errors', async () => {
      const handle = await provider.submit(video());
      const unknown = {
        ...handle,
        data: { ...handle.data, cancel_url: handle.data!.cancel_url!.replace(handle.requestId, 'nope') },
      };
      assert.equal(await provider.cancel(unknown), false);
      fal.setBehaviour({ hang: ['cancel'] });
      assert.equal(await makeProvider({ requestTimeoutMs: 100 }).cancel(handle), false);
      const gone = await startFakeFal({ key: KEY });
      const url = gone.url;
      await gone.stop();
      const offline = createFalProvider({ queueUrl: url, key: KEY, endpoints: DEFAULT_PROVIDER_ENDPOINTS });
      const root = `${url}/fal-ai/vidmodel-2.0/requests/x`;
      assert.equal(
        await offline.cancel({
          endpoint: handle.endpoint,
          requestId: 'x',
          data: { status_url: `${root}/status`, response_url: root, cancel_url: `${root}/cancel` },
        }),
        false,
      );
    });
  });

  describe('the key', () => {
    it('is sent as `Authorization: Key <key>` on every queue call', async () => {
      fal.setBehaviour({ queueMs: Infinity });
      const handle = await provider.submit(video());
      await provider.status(handle);
      await provider.result(handle).catch(() => {});
      await provider.cancel(handle);
      const queueCalls = fal.requests.filter((r) => !r.path.startsWith('/files/'));
      assert.equal(queueCalls.length, 4);
      for (const call of queueCalls) assert.equal(call.authorization, `Key ${KEY}`);
    });

    it('never appears in error messages, even when fal echoes it back', async () => {
      const echo = {
        detail: [{ loc: ['body', 'prompt'], msg: `bad key ${KEY}`, type: 'x' }],
        error: `key ${KEY}`,
      };
      const messages: string[] = [];
      fal.setBehaviour({ submitAnswer: { status: 422, body: echo } });
      messages.push((await rejection(provider.submit(video()))).message);
      fal.setBehaviour({ submitAnswer: { status: 500, body: echo } });
      messages.push((await rejection(provider.submit(video()))).message);
      fal.setBehaviour({ submitAnswer: null });
      const handle = await provider.submit(video());
      fal.setBehaviour({ statusAnswer: { status: 502, body: echo } });
      messages.push((await rejection(provider.status(handle))).message);
      fal.setBehaviour({
        statusAnswer: { status: 200, body: { status: 'FAILED', error: `failed for ${KEY}` } },
      });
      const failed = await provider.status(handle);
      messages.push(failed.state === 'failed' ? failed.error : '');
      fal.setBehaviour({
        statusAnswer: null,
        outcome: 'model-error',
        modelError: { status: 422, body: echo },
      });
      const second = await provider.submit(video());
      await until(second, 'failed');
      const result = await provider.result(second);
      messages.push(result.ok ? '' : result.error);
      assert.equal(messages.length, 5);
      for (const message of messages) {
        assert.ok(message.length > 0);
        assert.ok(!message.includes(KEY), `key leaked in: ${message}`);
      }
      assert.match(messages[0]!, /\[redacted\]/);
    });

    it('is not in the error of a refused connection', async () => {
      const error = await rejection(
        createFalProvider({
          queueUrl: 'http://127.0.0.1:9',
          key: KEY,
          endpoints: DEFAULT_PROVIDER_ENDPOINTS,
          requestTimeoutMs: 500,
        }).submit(video()),
      );
      assert.ok(!error.message.includes(KEY));
    });
  });
});

describe('fake fal queue', () => {
  let fal: FakeFal;
  let silent: Server;
  before(async () => {
    fal = await startFakeFal();
    silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    silent.closeAllConnections();
    silent.close();
    await fal.stop();
  });

  const auth = () => ({ authorization: `Key ${fal.key}`, 'content-type': 'application/json' });
  const submit = (body: unknown, headers: Record<string, string> = auth()) =>
    fetch(`${fal.url}/fal-ai/vidmodel-2.0/text-to-video`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
  const valid = { prompt: 'x', duration: '5', resolution: '720p', aspect_ratio: '16:9' };

  it('answers 401 without a key and with a wrong one', async () => {
    assert.equal((await submit(valid, { 'content-type': 'application/json' })).status, 401);
    assert.equal(
      (await submit(valid, { authorization: 'Key nope', 'content-type': 'application/json' })).status,
      401,
    );
    assert.equal((await submit(valid, { authorization: `Bearer ${fal.key}` })).status, 401);
  });

  it('serves status at the app-id path only, with queue_position, and logs only with ?logs=1', async () => {
    fal.setBehaviour({ queueMs: Infinity, runMs: Infinity });
    const answer = (await (await submit(valid)).json()) as Record<string, string>;
    const root = `${fal.url}/fal-ai/vidmodel-2.0/requests/${answer.request_id}`;
    assert.equal(answer.status_url, `${root}/status`);
    const queued = await fetch(answer.status_url!, { headers: auth() });
    assert.equal(queued.status, 202);
    assert.deepEqual(((await queued.json()) as Record<string, unknown>).queue_position, 0);
    const withSubPath = await fetch(
      `${fal.url}/fal-ai/vidmodel-2.0/text-to-video/requests/${answer.request_id}/status`,
      { headers: auth() },
    );
    assert.equal(withSubPath.status, 404);
    fal.advance(answer.request_id!);
    const plain = (await (await fetch(answer.status_url!, { headers: auth() })).json()) as Record<
      string,
      unknown
    >;
    const logged = (await (await fetch(`${answer.status_url}?logs=1`, { headers: auth() })).json()) as Record<
      string,
      unknown
    >;
    assert.equal(plain.status, 'IN_PROGRESS');
    assert.equal(plain.logs, null);
    assert.ok(Array.isArray(logged.logs) && logged.logs.length > 0);
    assert.equal((await fetch(answer.status_url!, { method: 'POST', headers: auth() })).status, 405);
  });

  it('answers 422 with a detail list for invalid input', async () => {
    const answer = await submit({ duration: 5, resolution: '1080p' });
    assert.equal(answer.status, 422);
    const { detail } = (await answer.json()) as { detail: { loc: string[]; type: string }[] };
    assert.deepEqual(
      detail.map((d) => d.loc.join('.')),
      ['body.prompt', 'body.duration', 'body.resolution'],
    );
  });

  it('is what a never-answering server looks like to the adapter (a silent socket times out)', async () => {
    const port = (silent.address() as AddressInfo).port;
    const p = createFalProvider({
      queueUrl: `http://127.0.0.1:${port}`,
      key: KEY,
      endpoints: DEFAULT_PROVIDER_ENDPOINTS,
      requestTimeoutMs: 150,
    });
    assert.match((await rejection(p.submit(video()))).message, /timed out after 150 ms/);
  });
});
