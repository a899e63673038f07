// Input images of generation jobs end to end (`image_url`/`image_urls`, docs/api.md): real
// PNGs served over https by a test CA the service trusts (NODE_EXTRA_CA_CERTS), the service as a process with
// the sandbox provider rendering with real ffmpeg, and a second process without WEBHOOK_ALLOW_PRIVATE whose
// SSRF guard must refuse the same loopback URLs.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, type RunningService } from '../helpers/service.ts';
import { probeMedia } from '../helpers/ffprobe.ts';
import { download, jobsClient, type Job } from '../helpers/jobs.ts';
import {
  createSelfSignedCert,
  createTestCa,
  startHttpsServer,
  type TestCa,
  type TestHttpsServer,
} from '../helpers/tls.ts';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { INBOUND_IMAGE_MAX_BYTES } from '../../src/jobs/inbound-images.ts';

const SERVICE_ENV = {
  SANDBOX_VIDEO_MS: '300',
  SANDBOX_IMAGE_MS: '200',
  PROVIDER_POLL_INTERVAL_MS: '100',
  PROVIDER_TIMEOUT_MS: '30000',
  RATE_LIMIT_PER_MINUTE: '100000',
};
const NOT_AN_IMAGE_PAGE = '<!doctype html><title>Not here</title><p>secret body of the page</p>';
const ERROR_PAGE = 'secret body of the error page';

/** PNG files made once with ffmpeg, served by path. */
const pngs = new Map<string, Buffer>();
/** Requests the image servers received, by path and query (each test uses its own query to count). */
const hits = new Map<string, number>();
const hitsOf = (pathAndQuery: string) => hits.get(pathAndQuery) ?? 0;

/** One handler behind both image servers: the path picks the behaviour, the query only tags the request. */
function serveImages(req: IncomingMessage, res: ServerResponse): void {
  const target = req.url ?? '/';
  hits.set(target, hitsOf(target) + 1);
  res.on('error', () => undefined); // the service may cut an oversized answer short
  const path = target.split('?')[0]!;
  const png = pngs.get(path);
  if (png) return void res.writeHead(200, { 'content-type': 'image/png' }).end(png);
  switch (path) {
    case '/missing.png':
      return void res.writeHead(404, { 'content-type': 'text/plain' }).end(ERROR_PAGE);
    case '/page.html':
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(NOT_AN_IMAGE_PAGE);
    case '/garbage.png':
      // Labelled as a PNG but not one: its first bytes tell.
      return void res.writeHead(200, { 'content-type': 'image/png' }).end(randomBytes(4096));
    case '/corrupt.png':
      // A PNG signature and header, then noise: only a decoder can tell.
      return void res
        .writeHead(200, { 'content-type': 'image/png' })
        .end(Buffer.concat([pngs.get('/red.png')!.subarray(0, 33), randomBytes(4096)]));
    case '/unlabelled':
      // A real PNG from a server that labels everything as bytes.
      return void res
        .writeHead(200, { 'content-type': 'application/octet-stream' })
        .end(pngs.get('/red.png'));
    case '/huge-declared.png':
      // Announces one byte over the cap and sends nothing: only the Content-Length check can refuse it quickly.
      res.writeHead(200, {
        'content-type': 'image/png',
        'content-length': String(INBOUND_IMAGE_MAX_BYTES + 1),
      });
      return void res.flushHeaders();
    case '/huge-streamed.png':
      // Chunked, no length: a real PNG head followed by padding, until the cap is passed by a megabyte.
      return streamBytes(res, pngs.get('/red.png')!, INBOUND_IMAGE_MAX_BYTES + (1 << 20));
    default:
      return void res.writeHead(404).end();
  }
}

/** Writes `head`, then 1 MiB chunks up to `total` bytes, honouring back-pressure; stops if the reader leaves. */
function streamBytes(res: ServerResponse, head: Buffer, total: number): void {
  res.writeHead(200, { 'content-type': 'image/png' });
  res.write(head);
  const chunk = Buffer.alloc(1 << 20, 0x2a);
  let sent = head.length;
  const pump = () => {
    while (sent < total && !res.destroyed) {
      sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    if (!res.destroyed) res.end();
  };
  pump();
}

/** A solid-colour PNG of `size` rendered by ffmpeg into `dir`. */
function makePng(dir: string, name: string, colour: string, size: string): Buffer {
  const file = join(dir, name);
  const { ffmpeg } = resolveFfmpeg({ ffmpegPath: process.env.FFMPEG_PATH });
  execFileSync(
    ffmpeg,
    ['-v', 'error', '-y', '-f', 'lavfi', '-i', `color=c=${colour}:s=${size}`, '-frames:v', '1', file],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return readFileSync(file);
}

describe('input images of generation jobs', () => {
  let ca: TestCa;
  let images: TestHttpsServer;
  let untrusted: TestHttpsServer;
  let mongo: TestMongo;
  let service: RunningService;
  let strict: RunningService;
  const mediaDir = mkdtempSync(join(tmpdir(), 'mf-inputs-media-'));
  /** Files in the service's media store (fs): refused requests must leave none behind. */
  const storedFiles = () => readdirSync(mediaDir).length;

  before(async () => {
    ca = createTestCa();
    pngs.set('/red.png', makePng(ca.dir, 'red.png', 'red', '640x480'));
    pngs.set('/blue.png', makePng(ca.dir, 'blue.png', 'blue', '480x640'));
    images = await startHttpsServer(serveImages, ca);
    // Same names and the same files, but a certificate no CA the service trusts has signed.
    untrusted = await startHttpsServer(serveImages, createSelfSignedCert(ca.dir));
    mongo = await startMongo();
    const trust = { NODE_EXTRA_CA_CERTS: ca.caPath, MONGO_URL: mongo.uri, ...SERVICE_ENV };
    service = await startService({ ...trust, WEBHOOK_ALLOW_PRIVATE: 'true', MEDIA_DIR: mediaDir });
    // Its own database: the two processes share only the MongoDB-wire server.
    strict = await startService({ ...trust, MONGO_DB: 'mediaforge_strict' });
  });
  after(async () => {
    await strict?.stop();
    await service?.stop();
    await mongo?.stop();
    await untrusted?.stop();
    await images?.stop();
    ca?.remove();
  });

  const { account, balance, submitVideo, submitImage, waitForEnd } = jobsClient(() => service);
  const strictApi = jobsClient(() => strict);

  /** The user's jobs as the list route shows them. */
  const listJobs = async (baseUrl: string, token: string) =>
    (await call<{ jobs: Job[] }>(baseUrl, 'GET', '/api/v1/jobs', { token })).body.jobs;

  /** Asserts a 400 whose whole body is `{ error }` matching `message`, nothing charged and no job listed. */
  async function assertRefused(
    baseUrl: string,
    token: string,
    credits: number,
    answer: { status: number; body: Record<string, unknown> },
    message: string | RegExp,
  ) {
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.deepEqual(Object.keys(answer.body), ['error']);
    if (typeof message === 'string') assert.equal(answer.body.error, message);
    else assert.match(answer.body.error as string, message);
    const account = await call<{ credits: number }>(baseUrl, 'GET', '/api/v1/account', { token });
    assert.equal(account.body.credits, credits, 'a refused request charges nothing');
    assert.deepEqual(await listJobs(baseUrl, token), [], 'a refused request leaves no job');
  }

  it('turns an https image into a video: fetched once, exact duration and size, audio only when asked', async () => {
    const { token } = await account(10_000);
    const cases = [
      // 127.0.0.1 and localhost: the certificate names both, and both resolve to loopback.
      {
        url: `https://127.0.0.1:${images.port}/red.png?case=video-ip`,
        fields: { aspect_ratio: '9:16', resolution: '480p', duration_seconds: 4, generate_audio: false },
        size: [480, 854],
        audio: false,
        cost: 101 * 4,
      },
      {
        url: `https://localhost:${images.port}/blue.png?case=video-name`,
        fields: { aspect_ratio: '1:1', resolution: '480p', duration_seconds: 4, generate_audio: true },
        size: [480, 480],
        audio: true,
        cost: 101 * 4,
      },
    ];
    let spent = 0;
    for (const { url, fields, size, audio, cost } of cases) {
      const answer = await submitVideo(token, { prompt: 'a slow zoom', image_url: url, ...fields });
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
      assert.deepEqual([answer.body.model, answer.body.credits_consumed], ['vidmodel-2.0', cost]);
      spent += cost;
      const job = await waitForEnd(token, answer.body.job_id as string);
      assert.equal(job.status, 'completed', JSON.stringify(job));
      assert.equal(job.type, 'video');
      assert.equal(
        hitsOf(new URL(url).pathname + new URL(url).search),
        1,
        'the input is fetched exactly once',
      );
      const media = await probeMedia(await download(job.result!.video!));
      assert.ok(Math.abs(media.durationSeconds - 4) <= 0.1, `duration ${media.durationSeconds}`);
      const video = media.streams.find((s) => s.codecType === 'video')!;
      assert.deepEqual([video.codecName, video.width, video.height], ['h264', ...size]);
      assert.equal(
        media.streams.some((s) => s.codecType === 'audio'),
        audio,
        `audio stream present iff generate_audio (${JSON.stringify(fields)})`,
      );
    }
    assert.equal(await balance(token), 10_000 - spent, 'completed jobs keep their charge');
  });

  it('edits with two https references into PNGs of the requested aspect ratio', async () => {
    const { token } = await account(1000);
    const answer = await submitImage(token, {
      prompt: 'put the red on the blue',
      image_urls: [
        `https://127.0.0.1:${images.port}/red.png?case=edit`,
        `https://localhost:${images.port}/blue.png?case=edit`,
      ],
      num_images: 2,
      aspect_ratio: '16:9',
    });
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    assert.deepEqual([answer.body.model, answer.body.credits_consumed], ['imgmodel-2', 100]);
    const job = await waitForEnd(token, answer.body.job_id as string);
    assert.equal(job.status, 'completed', JSON.stringify(job));
    assert.deepEqual([hitsOf('/red.png?case=edit'), hitsOf('/blue.png?case=edit')], [1, 1]);
    assert.equal(job.result?.images?.length, 2);
    for (const url of job.result!.images!) {
      assert.ok(url.startsWith(`${service.url}/media/`), url);
      const png = await probeMedia(await download(url));
      const stream = png.streams[0]!;
      assert.deepEqual([stream.codecName, stream.width, stream.height], ['png', 1024, 576]);
    }
    assert.equal(await balance(token), 900);
  });

  it('accepts its own http media URL as an input, for a video and for an edit', async () => {
    const { token } = await account(10_000);
    const source = await submitImage(token, { prompt: 'a source picture', aspect_ratio: '3:4' });
    const sourceJob = await waitForEnd(token, source.body.job_id as string);
    assert.equal(sourceJob.status, 'completed', JSON.stringify(sourceJob));
    const own = sourceJob.result!.images![0]!;
    // Plain http on loopback: the https rule and the SSRF guard do not apply to the service's own media.
    assert.ok(own.startsWith('http://127.0.0.1:') && own.startsWith(`${service.url}/media/`), own);

    const video = await submitVideo(token, {
      prompt: 'zoom into my picture',
      image_url: own,
      resolution: '480p',
      duration_seconds: 4,
      generate_audio: false,
    });
    assert.equal(video.status, 202, JSON.stringify(video.body));
    const edit = await submitImage(token, { prompt: 'recolour', image_urls: [own], aspect_ratio: '9:16' });
    assert.equal(edit.status, 202, JSON.stringify(edit.body));

    const videoJob = await waitForEnd(token, video.body.job_id as string);
    assert.equal(videoJob.status, 'completed', JSON.stringify(videoJob));
    const media = await probeMedia(await download(videoJob.result!.video!));
    assert.ok(Math.abs(media.durationSeconds - 4) <= 0.1, `duration ${media.durationSeconds}`);
    const stream = media.streams.find((s) => s.codecType === 'video')!;
    assert.deepEqual([stream.width, stream.height], [854, 480]);
    assert.ok(!media.streams.some((s) => s.codecType === 'audio'));

    const editJob = await waitForEnd(token, edit.body.job_id as string);
    assert.equal(editJob.status, 'completed', JSON.stringify(editJob));
    const png = await probeMedia(await download(editJob.result!.images![0]!));
    assert.deepEqual([png.streams[0]!.width, png.streams[0]!.height], [576, 1024]);
    assert.equal(await balance(token), 10_000 - 50 - 101 * 4 - 50);

    // Own URLs are read from the store: a video there, or an id that does not exist, is not an input image.
    const stillBalance = await balance(token);
    const before = (await listJobs(service.url, token)).length;
    for (const url of [videoJob.result!.video!, `${service.url}/media/med_doesnotexist000000000000.png`]) {
      const answer = await submitVideo(token, { prompt: 'p', image_url: url });
      assert.deepEqual(
        [answer.status, answer.body],
        [400, { error: "image_url is not an image in this service's media" }],
        url,
      );
    }
    assert.equal(await balance(token), stillBalance);
    assert.equal((await listJobs(service.url, token)).length, before);
  });

  it('refuses a 404, a page that is not an image and an untrusted certificate with a 400, charging nothing', async () => {
    const { token } = await account(5000);
    const base = `https://127.0.0.1:${images.port}`;
    const video = (url: string) => submitVideo(token, { prompt: 'p', image_url: url });
    const edit = (url: string) =>
      submitImage(token, { prompt: 'p', image_urls: [`${base}/red.png?case=refusals`, url] });

    const missing = await video(`${base}/missing.png`);
    await assertRefused(
      service.url,
      token,
      5000,
      missing,
      'image_url could not be fetched: the server answered HTTP 404',
    );
    assert.doesNotMatch(JSON.stringify(missing.body), /secret body/, 'the error page never reaches the user');
    await assertRefused(
      service.url,
      token,
      5000,
      await edit(`${base}/missing.png?case=edit`),
      'image_urls[1] could not be fetched: the server answered HTTP 404',
    );

    await assertRefused(
      service.url,
      token,
      5000,
      await video(`${base}/page.html`),
      'image_url is not a PNG, JPEG, WebP or GIF image',
    );
    await assertRefused(
      service.url,
      token,
      5000,
      await edit(`${base}/page.html?case=edit`),
      'image_urls[1] is not a PNG, JPEG, WebP or GIF image',
    );

    // The untrusted server serves a perfectly good PNG: only its certificate is wrong.
    const untrustedUrl = `https://localhost:${untrusted.port}/red.png?case=untrusted`;
    await assertRefused(
      service.url,
      token,
      5000,
      await video(untrustedUrl),
      /^image_url could not be fetched: the server's TLS certificate is not trusted \(\w+\)$/,
    );
    assert.equal(hitsOf('/red.png?case=untrusted'), 0, 'no request is sent over an untrusted connection');
  });

  it('judges inbound images by their bytes: refuses a non-image labelled PNG, takes an unlabelled PNG', async () => {
    const { token } = await account(1000);
    const base = `https://127.0.0.1:${images.port}`;
    const files = storedFiles();
    await assertRefused(
      service.url,
      token,
      1000,
      await submitImage(token, {
        prompt: 'p',
        image_urls: [`${base}/red.png?case=bytes`, `${base}/garbage.png`],
      }),
      'image_urls[1] is not a PNG, JPEG, WebP or GIF image',
    );
    assert.equal(storedFiles(), files, 'the good image of a refused request is not kept');

    const answer = await submitImage(token, { prompt: 'unlabelled', image_urls: [`${base}/unlabelled`] });
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    const job = await waitForEnd(token, answer.body.job_id as string);
    assert.equal(job.status, 'completed', JSON.stringify(job));
  });

  it('fails and refunds a job whose PNG does not decode, saying so', async () => {
    const { token } = await account(1000);
    const answer = await submitImage(token, {
      prompt: 'edit corrupt',
      image_urls: [`https://127.0.0.1:${images.port}/corrupt.png`],
    });
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    assert.equal(await balance(token), 950);
    const job = await waitForEnd(token, answer.body.job_id as string);
    assert.equal(job.status, 'failed', JSON.stringify(job));
    assert.equal(
      job.error,
      'The sandbox could not render this request: image render failed: a reference image could not be decoded',
    );
    assert.deepEqual([job.result, job.credits_consumed, job.refunded_credits], [null, 50, 50]);
    assert.equal(await balance(token), 1000);
  });

  it('checks the balance before fetching: a user who cannot pay gets 402 and the image server sees no request', async () => {
    const base = `https://127.0.0.1:${images.port}`;
    const broke = await account(0);
    const files = storedFiles();
    const video = await submitVideo(broke.token, {
      prompt: 'p',
      image_url: `${base}/red.png?case=broke-video`,
    });
    assert.deepEqual(
      [video.status, video.body],
      [402, { error: 'Insufficient credits', credits_required: 1135, credits_remaining: 0 }],
    );
    const edit = await submitImage(broke.token, {
      prompt: 'p',
      image_urls: [`${base}/red.png?case=broke-edit`, `${base}/huge-streamed.png?case=broke-edit`],
    });
    assert.deepEqual(
      [edit.status, edit.body],
      [402, { error: 'Insufficient credits', credits_required: 50, credits_remaining: 0 }],
    );
    // One credit short is short too.
    const almost = await account(49);
    const short = await submitImage(almost.token, {
      prompt: 'p',
      image_urls: [`${base}/red.png?case=almost`],
    });
    assert.deepEqual(
      [short.status, short.body],
      [402, { error: 'Insufficient credits', credits_required: 50, credits_remaining: 49 }],
    );
    assert.deepEqual(
      [
        hitsOf('/red.png?case=broke-video'),
        hitsOf('/red.png?case=broke-edit'),
        hitsOf('/huge-streamed.png?case=broke-edit'),
        hitsOf('/red.png?case=almost'),
      ],
      [0, 0, 0, 0],
      'nothing is downloaded for a user who cannot pay',
    );
    assert.equal(storedFiles(), files);
    assert.deepEqual(await listJobs(service.url, broke.token), []);
    assert.equal(await balance(almost.token), 49);
  });

  it('keeps no fetched copy when the submit ends in 502', async () => {
    const url = `https://127.0.0.1:${images.port}/red.png?case=refused`;
    const files = storedFiles();
    const rich = await account(1000);
    const refused = await submitImage(rich.token, { prompt: 'p [sandbox:fail-submit]', image_urls: [url] });
    assert.equal(refused.status, 502);
    assert.equal(hitsOf('/red.png?case=refused'), 1, 'the image was fetched');
    assert.equal(storedFiles(), files, 'and its copy is gone');
    assert.equal(await balance(rich.token), 1000);
  });

  it("refuses an own media URL whose path does not decode with the field's URL message, before anything else", async () => {
    const { token } = await account(5000);
    for (const broken of ['%E0%A4%A', '%', '%zz', '%C3', '%ED%A0%80']) {
      const own = `${service.url}/media/${broken}`;
      await assertRefused(
        service.url,
        token,
        5000,
        await submitVideo(token, { prompt: 'p', image_url: own }),
        'image_url must be a https URL',
      );
      await assertRefused(
        service.url,
        token,
        5000,
        await submitImage(token, {
          prompt: 'p',
          image_urls: [`https://127.0.0.1:${images.port}/red.png?case=broken-own`, own],
        }),
        'image_urls items must be https URLs',
      );
    }
    assert.equal(hitsOf('/red.png?case=broken-own'), 0, 'the URL rules run before any fetch');
  });

  it('refuses an image over the inbound cap, announced or streamed, with a 400 and no charge', async () => {
    assert.equal(INBOUND_IMAGE_MAX_BYTES, 20 * 1024 * 1024, 'README documents a 20 MiB cap');
    const { token } = await account(5000);
    const base = `https://127.0.0.1:${images.port}`;
    const tooLarge = `could not be fetched: the answer is larger than ${INBOUND_IMAGE_MAX_BYTES} bytes`;
    const started = Date.now();
    await assertRefused(
      service.url,
      token,
      5000,
      await submitVideo(token, { prompt: 'p', image_url: `${base}/huge-declared.png` }),
      `image_url ${tooLarge}`,
    );
    // The announced size alone refuses it: no waiting for the 15 s fetch time-out.
    assert.ok(Date.now() - started < 5000, `refused after ${Date.now() - started} ms`);
    await assertRefused(
      service.url,
      token,
      5000,
      await submitImage(token, { prompt: 'p', image_urls: [`${base}/huge-streamed.png`] }),
      `image_urls[0] ${tooLarge}`,
    );
    assert.equal(hitsOf('/huge-streamed.png'), 1);
  });

  it('refuses loopback image URLs and special-use names without WEBHOOK_ALLOW_PRIVATE before connecting, charging nothing', async () => {
    const { token } = await strictApi.account(5000);
    const privateRefusal = 'image_url could not be fetched: the URL points to a private or local address';
    const specialUse = [
      'foo.localhost',
      'localhost.',
      'printer.local',
      'db.internal',
      'x.home.arpa',
      'abc.onion',
    ];
    for (const host of ['127.0.0.1', 'localhost', ...specialUse]) {
      const tag = `/red.png?case=strict-${host}`;
      const video = await strictApi.submitVideo(token, {
        prompt: 'p',
        image_url: `https://${host}:${images.port}${tag}`,
      });
      await assertRefused(strict.url, token, 5000, video, privateRefusal);
      const edit = await strictApi.submitImage(token, {
        prompt: 'p',
        image_urls: [`https://${host}:${images.port}${tag}`],
      });
      await assertRefused(
        strict.url,
        token,
        5000,
        edit,
        'image_urls[0] could not be fetched: the URL points to a private or local address',
      );
      assert.equal(hitsOf(tag), 0, `the guard refuses ${host} before any connection`);
    }

    // The guard is about fetching: the strict service's own http media on loopback stays usable.
    const source = await strictApi.submitImage(token, { prompt: 'mine' });
    const sourceJob = await strictApi.waitForEnd(token, source.body.job_id as string);
    assert.equal(sourceJob.status, 'completed', JSON.stringify(sourceJob));
    const edit = await strictApi.submitImage(token, {
      prompt: 'again',
      image_urls: sourceJob.result!.images!,
    });
    assert.equal(edit.status, 202, JSON.stringify(edit.body));
    const editJob = await strictApi.waitForEnd(token, edit.body.job_id as string);
    assert.equal(editJob.status, 'completed', JSON.stringify(editJob));
    assert.equal(await strictApi.balance(token), 5000 - 100);
  });
});
