// Media limits at intake end to end (docs/editor.md "Media limits", docs/api.md, docs/errors.md): the service
// as a process, real files made at test time — the PNG bomb a probe found (15 000 × 15 000 in ~219 KB, which
// took an export 63 s and 1 GB), a 4097-wide, a 121 fps and a 3920 s video — sent on every path media from
// users enters: uploads and imports (415 naming the limit), a turn's reference images and generation inputs
// (400 naming the field, nothing charged, no job). Each refusal is timed: the header decides, in under a
// second, before anything decodes. A normal image still goes through everywhere, and a second service with
// IMAGE_MAX_PIXELS=100000 shows the variable at work. Remote files come from an https server signed by a test
// CA the service trusts; WEBHOOK_ALLOW_PRIVATE lets the service reach it on loopback.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { probeMedia } from '../helpers/ffprobe.ts';
import { editorClient } from '../helpers/editor.ts';
import { download, jobsClient, type Job } from '../helpers/jobs.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { makeOverLimitVideos, pngBomb } from '../helpers/over-limit-media.ts';
import { adminClient, call, startService, type RunningService } from '../helpers/service.ts';
import { createTestCa, startHttpsServer, type TestCa, type TestHttpsServer } from '../helpers/tls.ts';

/**
 * Every refusal answers within this (the bomb's decode took seconds; its header takes microseconds). A video's
 * values come from ffprobe, so its refusal may also take one ffprobe start, measured beside it: Debian's
 * dynamically linked ffprobe takes 0.6–0.8 s just to print its version on this 2-core machine under load.
 */
const REFUSAL_MS = 1000;
const LOW_IMAGE_MAX_PIXELS = 100_000;
const run = promisify(execFile);
const { ffmpeg, ffprobe } = resolveFfmpeg({
  ffmpegPath: process.env.FFMPEG_PATH,
  ffprobePath: process.env.FFPROBE_PATH,
});
const SCOPES = ['video-editor:read', 'video-editor:write', 'video:write', 'image:write'];
const SERVICE_ENV = {
  RATE_LIMIT_PER_MINUTE: '100000',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  SANDBOX_VIDEO_MS: '200',
  SANDBOX_IMAGE_MS: '100',
  PROVIDER_POLL_INTERVAL_MS: '100',
};

type Answer = { status: number; body: unknown };

/** One service under test and the folder its media store writes to. */
interface Node {
  service: RunningService;
  mediaDir: string;
}

describe('media limits at intake (the service as a process)', () => {
  const root = mkdtempSync(join(tmpdir(), 'mf-media-limits-'));
  /** What the https server serves, by path. */
  const files = new Map<string, Buffer>();
  let bombMs = 0;
  let longSeconds = 0;
  let ca: TestCa;
  let web: TestHttpsServer;
  let mongo: TestMongo;
  let main: Node;
  let low: Node;
  /** Each refusal's tries, printed at the end. */
  const timings: string[] = [];

  before(async () => {
    const started = Date.now();
    files.set('/bomb.png', pngBomb());
    bombMs = Date.now() - started;
    for (const [name, size] of [
      ['normal', '640x480'],
      ['small', '320x240'],
    ]) {
      const picture = join(root, `${name}.png`);
      execFileSync(ffmpeg, [
        '-v',
        'error',
        '-y',
        '-f',
        'lavfi',
        '-i',
        `testsrc2=size=${size}`,
        '-frames:v',
        '1',
        picture,
      ]);
      files.set(`/${name}.png`, readFileSync(picture));
    }
    const videos = await makeOverLimitVideos(root);
    for (const name of ['wide', 'fast', 'long'] as const)
      files.set(`/${name}.mp4`, readFileSync(videos[name]));
    longSeconds = Math.round((await probeMedia(videos.long)).durationSeconds * 1000) / 1000;

    ca = createTestCa();
    web = await startHttpsServer((req: IncomingMessage, res: ServerResponse) => {
      const data = files.get((req.url ?? '').split('?')[0]!);
      if (!data) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(data);
    }, ca);
    mongo = await startMongo();
    const common = { ...SERVICE_ENV, MONGO_URL: mongo.uri, NODE_EXTRA_CA_CERTS: ca.caPath };
    [main, low] = await Promise.all([
      startNode({ ...common, MONGO_DB: 'media_limits' }),
      startNode({ ...common, MONGO_DB: 'media_limits_low', IMAGE_MAX_PIXELS: String(LOW_IMAGE_MAX_PIXELS) }),
    ]);
  });

  after(async () => {
    for (const line of timings) console.log(line);
    await Promise.all([main?.service.stop(), low?.service.stop()]);
    await mongo?.stop();
    await web?.stop();
    ca?.remove();
    rmSync(root, { recursive: true, force: true });
  });

  async function startNode(env: Record<string, string>): Promise<Node> {
    const mediaDir = mkdtempSync(join(root, 'media-'));
    return { service: await startService({ ...env, MEDIA_DIR: mediaDir }), mediaDir };
  }

  const remote = (path: string) => `https://127.0.0.1:${web.port}${path}`;

  /** A user with a key for the editor and both generation routes, and `credits`. */
  async function user(node: Node, credits = 10_000) {
    const admin = adminClient(node.service);
    const userId = await admin.createUser(
      `limits-${Math.random().toString(36).slice(2)}@example.com`,
      credits,
    );
    const { apiKey: token } = await admin.createKey(userId, SCOPES);
    const editor = editorClient(() => node.service, token);
    const jobs = jobsClient(() => node.service);
    const project = await editor.createProject();
    const state = await editor.state(project.id);
    return { token, editor, jobs, projectId: project.id, videoId: state.body.videos[0]!.id, credits };
  }
  type User = Awaited<ReturnType<typeof user>>;

  /** How long starting the service's ffprobe takes right now (what a video's refusal may add). */
  async function ffprobeStartMs(): Promise<number> {
    const started = performance.now();
    await run(ffprobe, ['-version']);
    return performance.now() - started;
  }

  /** What a refusal must leave as it was: the balance, the jobs, the project's assets and thread, the store. */
  async function footprint(node: Node, who: User) {
    const account = await call<{ credits: number }>(node.service.url, 'GET', '/api/v1/account', {
      token: who.token,
    });
    const jobs = await call<{ jobs: Job[] }>(node.service.url, 'GET', '/api/v1/jobs', { token: who.token });
    const state = await who.editor.state(who.projectId);
    const thread = await who.editor.messages(who.projectId, who.videoId);
    return {
      credits: account.body.credits,
      jobs: jobs.body.jobs.map((job) => job.job_id),
      assets: state.body.assets.map((asset) => asset.id),
      messages: (thread.body as { messages: unknown[] }).messages.length,
      stored: readdirSync(node.mediaDir).sort(),
    };
  }

  /**
   * Asserts that `send` answers exactly `expected`, within REFUSAL_MS (plus `allowanceMs`), and changes nothing
   * at all. A refusal changes nothing, so it may be sent again: the fastest of up to three tries is timed,
   * which measures the service's work rather than the scheduler of a machine shared with other jobs (a decode
   * of the bomb takes seconds on every try).
   */
  async function assertRefused(
    node: Node,
    who: User,
    what: string,
    send: () => Promise<Answer>,
    expected: { status: number; body: Record<string, unknown> },
    allowance: () => Promise<number> = () => Promise.resolve(0),
  ): Promise<void> {
    const before = await footprint(node, who);
    const tries: number[] = [];
    let limit = REFUSAL_MS;
    while (tries.length < 3 && !tries.some((ms) => ms < limit)) {
      limit = REFUSAL_MS + (await allowance());
      const started = performance.now();
      const answer = await send();
      tries.push(Math.round(performance.now() - started));
      assert.deepEqual({ status: answer.status, body: answer.body }, expected, what);
    }
    assert.ok(
      Math.min(...tries) < limit,
      `${what} answered in ${tries.join(', ')} ms (limit ${Math.round(limit)} ms)`,
    );
    assert.deepEqual(await footprint(node, who), before, `${what}: nothing charged, stored or started`);
    timings.push(`${what}: ${tries.join(', ')} ms`);
  }

  /**
   * The five ways a user's image reaches the service, each sent the file at `path` (its URL, or its bytes for
   * the upload). A job's list has an image within every limit first, so the refusal names the second item; a
   * turn's list has the one image, since a good reference is probed by ffprobe, which alone can take a second
   * on a loaded machine.
   */
  function imagePaths(who: User, path: string) {
    return {
      upload: () => who.editor.upload(who.projectId, files.get(path)!, 'image/png'),
      import: () => who.editor.importUrl(who.projectId, remote(path)),
      reference: () =>
        who.editor.instruct(who.projectId, {
          instruction: 'use these',
          image_urls: [remote(path)],
        }),
      videoInput: () =>
        who.jobs.submitVideo(who.token, {
          prompt: 'a slow zoom',
          image_url: remote(path),
          aspect_ratio: '16:9',
          resolution: '480p',
          duration_seconds: 4,
          generate_audio: false,
        }),
      imageInput: () =>
        who.jobs.submitImage(who.token, {
          prompt: 'recolour',
          image_urls: [remote('/small.png'), remote(path)],
        }),
    } as Record<string, () => Promise<Answer>>;
  }

  /** The answers of an image past a limit on each path, `detail` saying which limit. */
  function imageRefusals(detail: string): Record<string, { status: number; body: Record<string, unknown> }> {
    const unsupported = {
      status: 415,
      body: { error: 'unsupported_media', message: `The image is too large: ${detail}` },
    };
    return {
      upload: unsupported,
      import: unsupported,
      reference: { status: 400, body: { error: `image_urls[0] is too large: ${detail}` } },
      videoInput: { status: 400, body: { error: `image_url is too large: ${detail}` } },
      imageInput: { status: 400, body: { error: `image_urls[1] is too large: ${detail}` } },
    };
  }

  it('makes a pixel bomb: a valid 15000×15000 PNG of about 219 KB', (t) => {
    const bomb = files.get('/bomb.png')!;
    t.diagnostic(`bomb: ${bomb.length} bytes, made in ${bombMs} ms`);
    assert.ok(bomb.length > 200_000 && bomb.length < 240_000, `${bomb.length} bytes`);
    assert.deepEqual([bomb.readUInt32BE(16), bomb.readUInt32BE(20)], [15_000, 15_000]);
  });

  it('refuses the bomb on every path in under a second, naming IMAGE_MAX_PIXELS, with nothing charged', async () => {
    const who = await user(main);
    const expected = imageRefusals('15000×15000 pixels is more than IMAGE_MAX_PIXELS (40000000)');
    for (const [path, send] of Object.entries(imagePaths(who, '/bomb.png')))
      await assertRefused(main, who, `bomb by ${path}`, send, expected[path]!);
  });

  it('refuses videos too wide, too fast or too long as uploads and imports, naming the limit', async () => {
    const who = await user(main);
    const cases: Array<[string, string]> = [
      ['/wide.mp4', 'The video is too large: 4097×64 has a side over 4096 pixels'],
      ['/fast.mp4', 'The video has too high a frame rate: 121 frames per second is more than 120'],
      ['/long.mp4', `The video is too long: ${longSeconds} seconds is more than 3600`],
    ];
    assert.ok(longSeconds > 3900, `${longSeconds} s`);
    for (const [path, message] of cases) {
      const expected = { status: 415, body: { error: 'unsupported_media', message } };
      const upload = () => who.editor.upload(who.projectId, files.get(path)!, 'video/mp4');
      const fetched = () => who.editor.importUrl(who.projectId, remote(path));
      await assertRefused(main, who, `${path} uploaded`, upload, expected, ffprobeStartMs);
      await assertRefused(main, who, `${path} imported`, fetched, expected, ffprobeStartMs);
    }
  });

  it("refuses a video past a limit among a turn's reference images, naming the field, with nothing charged", async () => {
    const who = await user(main);
    const send = () =>
      who.editor.instruct(who.projectId, { instruction: 'use it', image_urls: [remote('/wide.mp4')] });
    const expected = {
      status: 400,
      body: { error: 'image_urls[0] is too large: 4097×64 has a side over 4096 pixels' },
    };
    await assertRefused(main, who, 'a wide video as a reference', send, expected, ffprobeStartMs);
  });

  it('still takes a normal image on every path', async () => {
    const who = await user(main);
    const paths = imagePaths(who, '/normal.png');
    for (const path of ['upload', 'import']) {
      const answer = await paths[path]!();
      assert.equal(answer.status, 200, `${path}: ${JSON.stringify(answer.body)}`);
      const asset = (answer.body as { asset: { kind: string; metadata: Record<string, unknown> } }).asset;
      assert.deepEqual([asset.kind, asset.metadata.width, asset.metadata.height], ['image', 640, 480], path);
    }
    const turn = await paths.reference!();
    assert.equal(turn.status, 200, JSON.stringify(turn.body));
    for (const path of ['videoInput', 'imageInput']) {
      const answer = await paths[path]!();
      assert.equal(answer.status, 202, `${path}: ${JSON.stringify(answer.body)}`);
      const job = await who.jobs.waitForEnd(who.token, (answer.body as { job_id: string }).job_id);
      assert.equal(job.status, 'completed', JSON.stringify(job));
    }
  });

  it('holds images to IMAGE_MAX_PIXELS as configured: 640×480 refused everywhere at 100000', async () => {
    const who = await user(low);
    const expected = imageRefusals(`640×480 pixels is more than IMAGE_MAX_PIXELS (${LOW_IMAGE_MAX_PIXELS})`);
    for (const [path, send] of Object.entries(imagePaths(who, '/normal.png')))
      await assertRefused(low, who, `640×480 by ${path} (low limit)`, send, expected[path]!);
  });

  it("holds the service's own images to the limit too when they come back as inputs", async () => {
    // A generated image is the provider's, kept as it is; used as a job's input it is a user's input again.
    const who = await user(low);
    const made = await who.jobs.submitImage(who.token, { prompt: 'a source picture', aspect_ratio: '1:1' });
    assert.equal(made.status, 202, JSON.stringify(made.body));
    const job = await who.jobs.waitForEnd(who.token, made.body.job_id as string);
    assert.equal(job.status, 'completed', JSON.stringify(job));
    const own = job.result!.images![0]!;
    const picture = (await probeMedia(await download(own))).streams[0]!;
    const pixels = picture.width! * picture.height!;
    assert.ok(pixels > LOW_IMAGE_MAX_PIXELS, `${picture.width}×${picture.height}`);
    const detail = `${picture.width}×${picture.height} pixels is more than IMAGE_MAX_PIXELS (${LOW_IMAGE_MAX_PIXELS})`;
    const send = () =>
      who.jobs.submitVideo(who.token, {
        prompt: 'zoom',
        image_url: own,
        aspect_ratio: '16:9',
        resolution: '480p',
        duration_seconds: 4,
        generate_audio: false,
      });
    await assertRefused(low, who, 'own generated image as input', send, {
      status: 400,
      body: { error: `image_url is too large: ${detail}` },
    });
  });
});
