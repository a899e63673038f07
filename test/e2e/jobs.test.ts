// Generation jobs end to end: the service as a process with the sandbox provider (short timings), a real
// MongoDB-wire server, real ffmpeg renders decoded with ffprobe.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, type RunningService } from '../helpers/service.ts';
import { probeMedia } from '../helpers/ffprobe.ts';
import { download, jobsClient, type Job } from '../helpers/jobs.ts';

const TIMEOUT_MS = 4000;

describe('generation jobs', () => {
  let mongo: TestMongo;
  let service: RunningService;

  before(async () => {
    mongo = await startMongo();
    service = await startService({
      MONGO_URL: mongo.uri,
      SANDBOX_VIDEO_MS: '300',
      SANDBOX_IMAGE_MS: '200',
      PROVIDER_POLL_INTERVAL_MS: '100',
      PROVIDER_TIMEOUT_MS: String(TIMEOUT_MS),
      RATE_LIMIT_PER_MINUTE: '100000',
    });
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  const jobsApi = jobsClient(() => service);
  const { account, balance, submitVideo, submitImage, waitForEnd } = jobsApi;

  it('charges 1135 for a default video, answers 202, and completes with a real 5 s 1280x720 mp4 with audio', async () => {
    const { token } = await account(5000);
    const answer = await submitVideo(token, { prompt: 'a lighthouse at dawn' });
    assert.equal(answer.status, 202);
    const jobId = answer.body.job_id as string;
    assert.deepEqual(answer.body, {
      job_id: jobId,
      status: 'processing',
      model: 'vidmodel-2.0',
      credits_consumed: 1135,
      credits_remaining: 5000 - 1135,
      poll_url: `/api/v1/jobs/${jobId}`,
    });
    const processing = await call<Job>(service.url, 'GET', `/api/v1/jobs/${jobId}`, { token });
    assert.equal(processing.body.status, 'processing');
    assert.equal(processing.body.completed_at, null);
    assert.equal(processing.body.result, null);
    assert.equal(processing.body.model, 'VidModel 2.0');

    const job = await waitForEnd(token, jobId);
    assert.equal(job.status, 'completed', JSON.stringify(job));
    assert.equal(job.error, null);
    assert.equal(job.refunded_credits, 0);
    assert.ok(job.completed_at);
    assert.ok(job.result?.video?.startsWith(`${service.url}/media/`));
    const media = await probeMedia(await download(job.result!.video!));
    assert.ok(Math.abs(media.durationSeconds - 5) <= 0.1, `duration ${media.durationSeconds}`);
    const videoStream = media.streams.find((s) => s.codecType === 'video')!;
    assert.deepEqual([videoStream.codecName, videoStream.width, videoStream.height], ['h264', 1280, 720]);
    assert.ok(media.streams.some((s) => s.codecType === 'audio'));
    assert.equal(await balance(token), 5000 - 1135, 'a completed job is not refunded');
  });

  it('prices every video variant by resolution, duration and model', async () => {
    const { token } = await account(1_000_000);
    const cases: Array<[Record<string, unknown>, string, number]> = [
      [{ resolution: '720p', duration_seconds: 5 }, 'vidmodel-2.0', 1135],
      [{ resolution: '480p', duration_seconds: 10 }, 'vidmodel-2.0', 1010],
      [{ resolution: '720p', duration_seconds: 4, generate_audio: false }, 'vidmodel-2.0', 908],
      [{ fast: true, duration_seconds: 5 }, 'vidmodel-2.0-fast', 905],
      [{ fast: true, resolution: '480p', duration_seconds: 15 }, 'vidmodel-2.0-fast', 1215],
    ];
    for (const [fields, model, cost] of cases) {
      const answer = await submitVideo(token, { prompt: 'price [sandbox:hang]', ...fields });
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
      assert.deepEqual(
        [answer.body.model, answer.body.credits_consumed],
        [model, cost],
        JSON.stringify(fields),
      );
      await call(service.url, 'DELETE', `/api/v1/jobs/${answer.body.job_id as string}`, { token });
    }
  });

  it('renders 2 PNG images for 100 credits at the requested aspect ratio', async () => {
    const { token } = await account(1000);
    const answer = await submitImage(token, { prompt: 'a red fox', num_images: 2, aspect_ratio: '16:9' });
    assert.equal(answer.status, 202);
    assert.deepEqual([answer.body.model, answer.body.credits_consumed], ['imgmodel-2', 100]);
    const job = await waitForEnd(token, answer.body.job_id as string);
    assert.equal(job.status, 'completed', JSON.stringify(job));
    assert.equal(job.result?.images?.length, 2);
    for (const url of job.result!.images!) {
      const png = await probeMedia(await download(url));
      const stream = png.streams[0]!;
      assert.equal(stream.codecName, 'png');
      assert.ok(stream.width! > stream.height!, '16:9 is landscape');
    }
  });

  it('answers 402 with the figures and creates no job when the balance is too low', async () => {
    const { token } = await account(100);
    const answer = await submitVideo(token, { prompt: 'too expensive' });
    assert.deepEqual(
      [answer.status, answer.body],
      [402, { error: 'Insufficient credits', credits_required: 1135, credits_remaining: 100 }],
    );
    const list = await call<{ jobs: Job[] }>(service.url, 'GET', '/api/v1/jobs', { token });
    assert.deepEqual(list.body.jobs, []);
    assert.equal(await balance(token), 100);
  });

  it('answers 502 and refunds when the provider refuses the submission, leaving no job', async () => {
    const { token } = await account(2000);
    const answer = await submitVideo(token, { prompt: 'no [sandbox:fail-submit]' });
    assert.equal(answer.status, 502);
    assert.match(answer.body.error as string, /^Provider submission failed/);
    assert.equal(await balance(token), 2000);
    const list = await call<{ jobs: Job[] }>(service.url, 'GET', '/api/v1/jobs', { token });
    assert.deepEqual(list.body.jobs, []);
  });

  for (const [marker, pattern] of [
    ['[sandbox:fail]', /failed/],
    ['[sandbox:empty]', /without any output/],
    ['[sandbox:hang]', new RegExp(`within ${TIMEOUT_MS} ms`)],
  ] as const) {
    it(`fails and refunds a job whose prompt says ${marker}`, async () => {
      const { token } = await account(1000);
      const answer = await submitImage(token, { prompt: `x ${marker}`, num_images: 3 });
      assert.equal(answer.status, 202);
      assert.equal(await balance(token), 850);
      const job = await waitForEnd(token, answer.body.job_id as string);
      assert.equal(job.status, 'failed');
      assert.match(job.error!, pattern);
      assert.equal(job.result, null);
      assert.equal(job.refunded_credits, 150);
      assert.equal(job.credits_consumed, 150, 'credits_consumed keeps the original charge');
      assert.equal(await balance(token), 1000);
    });
  }

  it('cancels a processing job with a full refund, then answers 409 to a second cancel', async () => {
    const { token } = await account(3000);
    const answer = await submitVideo(token, { prompt: 'slow [sandbox:delay=60000]', duration_seconds: 4 });
    const jobId = answer.body.job_id as string;
    const cancelled = await call(service.url, 'DELETE', `/api/v1/jobs/${jobId}`, { token });
    assert.deepEqual(
      [cancelled.status, cancelled.body],
      [200, { job_id: jobId, status: 'cancelled', refunded_credits: 908 }],
    );
    assert.equal(await balance(token), 3000);
    const again = await call(service.url, 'DELETE', `/api/v1/jobs/${jobId}`, { token });
    assert.equal(again.status, 409);
    const job = await call<Job>(service.url, 'GET', `/api/v1/jobs/${jobId}`, { token });
    assert.deepEqual([job.body.status, job.body.refunded_credits], ['cancelled', 908]);
  });

  it('answers 409 to cancelling a completed job and keeps the charge', async () => {
    const { token } = await account(500);
    const answer = await submitImage(token, { prompt: 'done' });
    const job = await waitForEnd(token, answer.body.job_id as string);
    assert.equal(job.status, 'completed');
    const cancel = await call(service.url, 'DELETE', `/api/v1/jobs/${job.job_id}`, { token });
    assert.equal(cancel.status, 409);
    assert.equal(await balance(token), 450);
  });

  it("answers 404 for another user's job and for an unknown one", async () => {
    const owner = await account();
    const stranger = await account();
    const answer = await submitImage(owner.token, { prompt: 'mine [sandbox:hang]' });
    const jobId = answer.body.job_id as string;
    for (const method of ['GET', 'DELETE']) {
      const other = await call(service.url, method, `/api/v1/jobs/${jobId}`, { token: stranger.token });
      assert.deepEqual([other.status, other.body], [404, { error: 'Job not found' }]);
    }
    const unknown = await call(service.url, 'GET', '/api/v1/jobs/job_doesnotexist', { token: owner.token });
    assert.equal(unknown.status, 404);
  });

  it('checks URLs and the fast/image conflict in field order over HTTP', async () => {
    const { token } = await account(10_000);
    const cases: Array<[unknown, string]> = [
      [{ prompt: 'p', image_url: 'http://example.com/a.png' }, 'image_url must be a https URL'],
      [{ prompt: 'p', image_url: 'not a url' }, 'image_url must be a https URL'],
      [
        { prompt: 'p', image_url: 'https://example.com/a.png', fast: true },
        'fast mode supports text-to-video only (no image_url)',
      ],
      [{ prompt: '', image_url: 'ftp://x' }, 'prompt is required (non-empty string)'],
      // The URL rule sits at its field's place, ahead of a later field's schema failure.
      [{ prompt: 'x', image_url: 'http://example.com/a.png', fast: 'yes' }, 'image_url must be a https URL'],
      [
        { prompt: 'x', image_url: 'https://example.com/a.png', fast: true, duration_seconds: 7 },
        'fast mode supports text-to-video only (no image_url)',
      ],
      [[1, 2], 'Request body must be a JSON object'],
    ];
    for (const [body, message] of cases) {
      const answer = await submitVideo(token, body);
      assert.deepEqual([answer.status, answer.body], [400, { error: message }], JSON.stringify(body));
    }
    const badJson = await call(service.url, 'POST', '/api/v1/video/vidmodel-2/generate', {
      token,
      rawBody: '{"prompt":',
      headers: { 'content-type': 'application/json' },
    });
    assert.deepEqual([badJson.status, badJson.body], [400, { error: 'Invalid JSON body' }]);
    const image = await submitImage(token, {
      prompt: 'p',
      image_urls: ['https://x.test/a.png', 'http://x.test/b.png'],
    });
    assert.deepEqual(image.body, { error: 'image_urls items must be https URLs' });
    const beforeCount = await submitImage(token, {
      prompt: 'x',
      image_urls: ['http://example.com/a.png'],
      num_images: 0,
    });
    assert.deepEqual(beforeCount.body, { error: 'image_urls items must be https URLs' });
    assert.equal(await balance(token), 10_000, 'refused requests charge nothing');
  });

  it('ignores an Idempotency-Key header: two identical POSTs start two jobs and charge twice (spec 7.5.5)', async () => {
    const { token } = await account(1000);
    const headers = { 'idempotency-key': 'retry-3f1c9a' };
    const body = { prompt: 'idempotency [sandbox:hang]' };
    const first = await call(service.url, 'POST', '/api/v1/image/nano-banana/generate', {
      token,
      body,
      headers,
    });
    const second = await call(service.url, 'POST', '/api/v1/image/nano-banana/generate', {
      token,
      body,
      headers,
    });
    assert.deepEqual(
      [first.status, first.body.credits_remaining, second.status, second.body.credits_remaining],
      [202, 950, 202, 900],
    );
    assert.notEqual(first.body.job_id, second.body.job_id);
    assert.equal(second.headers.get('idempotency-key'), null, 'the header is not echoed as if honoured');
    const listed = await call<{ jobs: Job[] }>(service.url, 'GET', '/api/v1/jobs', { token });
    assert.deepEqual(
      listed.body.jobs.map((j) => j.job_id),
      [second.body.job_id, first.body.job_id],
    );
    assert.equal(await balance(token), 900);
  });

  it('answers 403 when the key lacks the route scope', async () => {
    const videoOnly = await account(10_000, ['video:write']);
    const imageOnly = await account(10_000, ['image:write']);
    assert.equal((await submitImage(videoOnly.token, { prompt: 'p' })).status, 403);
    assert.equal((await submitVideo(imageOnly.token, { prompt: 'p' })).status, 403);
  });

  it('lists the user’s jobs newest first with a cursor and a status filter', async () => {
    const { token } = await account(10_000);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await submitImage(token, { prompt: `list ${i} [sandbox:hang]` })).body.job_id as string);
    }
    await call(service.url, 'DELETE', `/api/v1/jobs/${ids[0]}`, { token });
    const first = await call<{ jobs: Job[]; next_cursor: string | null }>(
      service.url,
      'GET',
      '/api/v1/jobs?limit=2',
      { token },
    );
    assert.deepEqual(
      first.body.jobs.map((j) => j.job_id),
      [ids[2], ids[1]],
    );
    assert.ok(first.body.next_cursor);
    const second = await call<{ jobs: Job[]; next_cursor: string | null }>(
      service.url,
      'GET',
      `/api/v1/jobs?limit=2&cursor=${first.body.next_cursor}`,
      { token },
    );
    assert.deepEqual([second.body.jobs.map((j) => j.job_id), second.body.next_cursor], [[ids[0]], null]);
    const cancelled = await call<{ jobs: Job[] }>(service.url, 'GET', '/api/v1/jobs?status=cancelled', {
      token,
    });
    assert.deepEqual(
      cancelled.body.jobs.map((j) => j.job_id),
      [ids[0]],
    );
    const bad = await call(service.url, 'GET', '/api/v1/jobs?limit=0', { token });
    assert.equal(bad.status, 400);
  });
});
