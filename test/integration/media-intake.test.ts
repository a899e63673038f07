// Media intake with real files made by ffmpeg at test time: what probes as media is stored under the probed
// type; playlists, concat scripts, text and truncated files are 415 with nothing stored and no connection made.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { createMediaIntake, type MediaIntakeDeps } from '../../src/platform/media/media-intake.ts';
import { UNSUPPORTED_MEDIA_MESSAGE } from '../../workers/probe/probe.ts';
import { createGuardedFetch } from '../../src/platform/net/guarded-fetch.ts';
import { createFsMediaStore } from '../../src/platform/storage/fs-store.ts';
import { AppError } from '../../src/platform/core/errors.ts';
import { mediaLimits, MediaOverLimit } from '../../workers/probe/media-limits.ts';
import { newMediaId } from '../../src/platform/storage/media-id.ts';
import type { MediaIntake } from '../../src/platform/media/media-intake-port.ts';
import { openEndedMdat } from '../helpers/media-analysis.ts';
import { probeMedia } from '../helpers/ffprobe.ts';
import { makeOverLimitVideos, type OverLimitVideos } from '../helpers/over-limit-media.ts';

const run = promisify(execFile);
const { ffmpeg, ffprobe } = resolveFfmpeg({
  ffmpegPath: process.env.FFMPEG_PATH,
  ffprobePath: process.env.FFPROBE_PATH,
});
const encoders = execFileSync(ffmpeg, ['-hide_banner', '-encoders'], { encoding: 'utf8' });
const hasEncoder = (name: string) => new RegExp(`^\\s*[VAS][A-Z.]{5}\\s+${name}\\s`, 'm').test(encoders);
const MP3_ENCODER = ['libmp3lame', 'libshine', 'mp3'].find(hasEncoder);
const WEBP_ENCODER = ['libwebp', 'webp'].find(hasEncoder);
const OWN_PREFIX = 'https://media.test/media/';
const MAX = 50 * 1024 * 1024;
const PNG_SIGNATURE = '89504e470d0a1a0a0000000d49484452';

/** Counts TCP connections: a hostile file must never make the probe reach out. */
async function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

describe('media intake', () => {
  let root: string;
  const fixture = (name: string) => join(root, 'fixtures', name);
  const trap = { connections: 0, port: 0, server: createTcpServer() };
  const web = { connections: 0, port: 0, server: createHttpServer() };

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'mf-media-intake-'));
    await mkdir(join(root, 'fixtures'));
    const make = (...args: string[]) =>
      run(ffmpeg, ['-hide_banner', '-nostdin', '-v', 'error', '-y', ...args]);
    const picture = ['-f', 'lavfi', '-i', 'testsrc2=size=320x240', '-frames:v', '1'];
    const tone = ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=2'];
    await Promise.all([
      make(...picture, fixture('image.png')),
      make(...picture, fixture('image.jpg')),
      WEBP_ENCODER && make(...picture, '-c:v', WEBP_ENCODER, fixture('image.webp')),
      make(...tone, fixture('tone.wav')),
      make(...tone, '-c:a', 'aac', fixture('tone.m4a')),
      make(...tone, '-c:a', 'aac', '-f', 'adts', fixture('tone.aac')),
      MP3_ENCODER && make(...tone, '-c:a', MP3_ENCODER, fixture('tone.mp3')),
      make(
        ...['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25', ...tone, '-t', '2'],
        ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest'],
        fixture('clip.mp4'),
      ),
    ]);
    const copy = (to: string, ...args: string[]) =>
      make('-i', fixture('clip.mp4'), '-c', 'copy', ...args, fixture(to));
    await copy('clip-faststart.mp4', '-movflags', '+faststart');
    await copy('clip.mov');
    await copy('clip-rotated.mp4', '-metadata:s:v:0', 'rotate=90');
    await writeHalf('clip.mp4', 'clip-cut.mp4');
    await writeHalf('clip-faststart.mp4', 'clip-faststart-cut.mp4');
    await writeHalf('tone.wav', 'tone-cut.wav');
    await writeHalf('image.png', 'image-cut.png');
    const open = openEndedMdat(await readFile(fixture('clip-faststart.mp4')));
    await writeFile(fixture('clip-open-ended.mp4'), open);
    await writeFile(fixture('clip-open-ended-cut.mp4'), open.subarray(0, open.length / 2));

    trap.server.on('connection', (socket) => {
      trap.connections++;
      socket.destroy();
    });
    trap.port = await listen(trap.server);
    await writeFile(fixture('playlist.mp4'), hlsPlaylist(trap.port));
    // Passes the sniff as mp3, so only the forced demuxer and protocol whitelist keep ffprobe from following it.
    const id3 = Buffer.from('49443304000000000000', 'hex'); // "ID3", v2.4, no flags, empty tag
    await writeFile(fixture('playlist-id3.mp3'), Buffer.concat([id3, Buffer.from(hlsPlaylist(trap.port))]));
    await writeFile(fixture('concat.mp4'), 'ffconcat version 1.0\nfile clip.mp4\n');
    await writeFile(fixture('notes.txt'), 'not media at all, just a text file\n'.repeat(10));
    web.server.on('connection', () => web.connections++);
    web.server.on('request', (req, res) => {
      const serve = (name: string, type: string) =>
        void readFile(fixture(name)).then((data) => res.writeHead(200, { 'content-type': type }).end(data));
      if (req.url === '/image') return serve('image.png', 'application/octet-stream');
      if (req.url === '/playlist') return serve('playlist.mp4', 'video/mp4');
      if (req.url === '/stalls') return void res.writeHead(200).write(Buffer.from(PNG_SIGNATURE, 'hex'));
      res.writeHead(404).end('secret error page');
    });
    web.port = await listen(web.server);
  });

  after(async () => {
    web.server.closeAllConnections();
    await Promise.all([
      new Promise((resolve) => web.server.close(resolve)),
      new Promise((resolve) => trap.server.close(resolve)),
    ]);
    await rm(root, { recursive: true, force: true });
  });

  async function writeHalf(from: string, to: string): Promise<void> {
    const data = await readFile(fixture(from));
    await writeFile(fixture(to), data.subarray(0, Math.floor(data.length / 2)));
  }

  /** A fresh media store and scratch folder per test, so "nothing stored" means an empty folder. */
  async function fresh(overrides: Partial<MediaIntakeDeps> = {}) {
    const dir = await mkdtemp(join(root, 'case-'));
    const mediaDir = join(dir, 'media');
    const scratchDir = join(dir, 'scratch');
    const store = await createFsMediaStore({ dir: mediaDir });
    const intake = createMediaIntake({
      store,
      ffmpegPath: ffmpeg,
      ffprobePath: ffprobe,
      fetch: createGuardedFetch(),
      allowPrivate: true,
      fetchTimeoutMs: 5_000,
      newMediaId,
      resolveOwn: (url) => (url.startsWith(OWN_PREFIX) ? url.slice(OWN_PREFIX.length) : undefined),
      tmpDir: scratchDir,
      limits: mediaLimits(40_000_000),
      ...overrides,
    });
    const stored = async () => (await readdir(mediaDir)).sort();
    const scratchLeft = async () => readdir(scratchDir).catch(() => []);
    return { intake, store, stored, scratchLeft };
  }

  async function takeIn(intake: MediaIntake, name: string, maxBytes = MAX) {
    return intake.fromStream(createReadStream(fixture(name)), { maxBytes });
  }

  async function assertUnsupported(work: Promise<unknown>): Promise<void> {
    await assert.rejects(work, (error: unknown) => {
      assert.ok(error instanceof AppError, String(error));
      assert.equal(error.status, 415);
      assert.deepEqual(error.toBody(), { error: 'unsupported_media', message: UNSUPPORTED_MEDIA_MESSAGE });
      return true;
    });
  }

  async function assertBadRequest(work: Promise<unknown>, message: string | RegExp): Promise<void> {
    await assert.rejects(work, (error: unknown) => {
      assert.ok(error instanceof AppError, String(error));
      assert.equal(error.status, 400);
      if (typeof message === 'string') assert.equal(error.message, message);
      else assert.match(error.message, message);
      return true;
    });
  }

  describe('accepted media', () => {
    const cases: Array<{
      file: string;
      kind: string;
      type: string;
      ext: string;
      size?: boolean;
      skip?: boolean;
    }> = [
      { file: 'image.png', kind: 'image', type: 'image/png', ext: 'png', size: true },
      { file: 'image.jpg', kind: 'image', type: 'image/jpeg', ext: 'jpg', size: true },
      { file: 'image.webp', kind: 'image', type: 'image/webp', ext: 'webp', size: true, skip: !WEBP_ENCODER },
      { file: 'clip.mp4', kind: 'video', type: 'video/mp4', ext: 'mp4', size: true },
      { file: 'clip-faststart.mp4', kind: 'video', type: 'video/mp4', ext: 'mp4', size: true },
      { file: 'clip.mov', kind: 'video', type: 'video/quicktime', ext: 'mov', size: true },
      { file: 'clip-open-ended.mp4', kind: 'video', type: 'video/mp4', ext: 'mp4', size: true },
      { file: 'tone.wav', kind: 'audio', type: 'audio/wav', ext: 'wav' },
      { file: 'tone.m4a', kind: 'audio', type: 'audio/mp4', ext: 'm4a' },
      { file: 'tone.aac', kind: 'audio', type: 'audio/aac', ext: 'aac' },
      { file: 'tone.mp3', kind: 'audio', type: 'audio/mpeg', ext: 'mp3', skip: !MP3_ENCODER },
    ];
    for (const { file, kind, type, ext, size, skip } of cases) {
      it(`stores ${file} as ${kind} ${type} with its probed metadata`, { skip }, async () => {
        const { intake, store, stored, scratchLeft } = await fresh();
        const { media, probed } = await takeIn(intake, file);
        assert.equal(probed.kind, kind);
        assert.equal(probed.contentType, type);
        assert.match(media.id, new RegExp(`^med_\\w+\\.${ext}$`));
        assert.equal(media.contentType, type);
        assert.equal(media.size, (await stat(fixture(file))).size, 'the bytes are stored unchanged');
        assert.equal((await store.stat(media.id))?.contentType, type);
        if (size) assert.deepEqual([probed.width, probed.height], [320, 240]);
        if (kind === 'image') assert.equal(probed.duration_sec, undefined);
        else assert.ok(Math.abs(probed.duration_sec! - 2) < 0.15, `duration ${probed.duration_sec}`);
        assert.deepEqual(await stored(), [media.id, `${media.id}.meta.json`].sort());
        assert.deepEqual(await scratchLeft(), [], 'the scratch copy is removed');
      });
    }

    it('reports the displayed size of a video stored with a 90° rotation', async () => {
      const { intake } = await fresh();
      const { probed } = await takeIn(intake, 'clip-rotated.mp4');
      assert.deepEqual([probed.width, probed.height], [240, 320]);
    });
  });

  describe('refused files', () => {
    const refusals: Array<[string, string]> = [
      ['an HLS playlist named .mp4', 'playlist.mp4'],
      ['an HLS playlist behind an ID3 header (sniffed as mp3, read only as mp3)', 'playlist-id3.mp3'],
      ['an ffconcat script named .mp4', 'concat.mp4'],
      ['a plain text file', 'notes.txt'],
      ['an mp4 cut in half (moov at the end)', 'clip-cut.mp4'],
      ['an mp4 cut in half (faststart: moov first)', 'clip-faststart-cut.mp4'],
      ['an mp4 cut in half whose mdat runs "to the end of the file"', 'clip-open-ended-cut.mp4'],
      ['a wav cut in half', 'tone-cut.wav'],
      ['a png cut in half', 'image-cut.png'],
    ];
    for (const [what, file] of refusals) {
      it(`refuses ${what} with 415 and stores nothing`, async () => {
        const { intake, stored, scratchLeft } = await fresh();
        await assertUnsupported(takeIn(intake, file));
        assert.deepEqual(await stored(), []);
        assert.deepEqual(await scratchLeft(), []);
      });
    }

    it('never lets a playlist reach the addresses it names', async () => {
      const before = trap.connections;
      const { intake } = await fresh();
      await assertUnsupported(takeIn(intake, 'playlist.mp4'));
      await assertUnsupported(takeIn(intake, 'playlist-id3.mp3'));
      // A wait for nothing: a connection ffprobe might make late must not come either.
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(trap.connections, before);
    });

    it('refuses a concat script that ffprobe left to guess would read as the file it names', async () => {
      const { stdout } = await run(ffprobe, [
        '-v',
        'error',
        '-show_format',
        '-of',
        'json',
        fixture('concat.mp4'),
      ]);
      assert.match(stdout, /"format_name": "concat"/, 'the threat is real: auto-detection opens it');
      const { intake } = await fresh();
      await assertUnsupported(takeIn(intake, 'concat.mp4'));
    });

    it('refuses a file whose probe outlives its time limit, and keeps nothing', async () => {
      const { intake, stored, scratchLeft } = await fresh({ probeTimeoutMs: 1 });
      await assert.rejects(takeIn(intake, 'clip.mp4'), (error: unknown) => {
        assert.ok(error instanceof AppError && error.status === 415, String(error));
        assert.match(String(error.cause), /timed out/);
        return true;
      });
      assert.deepEqual(await stored(), []);
      assert.deepEqual(await scratchLeft(), []);
    });

    it('answers 413 past maxBytes, stores nothing and stops reading the source', async () => {
      const { intake, stored, scratchLeft } = await fresh();
      const size = (await stat(fixture('clip.mp4'))).size;
      await assert.rejects(takeIn(intake, 'clip.mp4', size - 1), {
        code: 'payload_too_large',
        message: `File too large (max ${size - 1} bytes)`,
      });
      // A PNG's signature, so the first bytes pass and only the size stops it.
      const endless = Readable.from(
        (async function* () {
          yield Buffer.from(PNG_SIGNATURE, 'hex');
          for (;;) yield Buffer.alloc(64 * 1024);
        })(),
      );
      await assert.rejects(intake.fromStream(endless, { maxBytes: 1024 * 1024 }), { status: 413 });
      assert.ok(endless.destroyed, 'the source is destroyed');
      assert.deepEqual(await stored(), []);
      assert.deepEqual(await scratchLeft(), []);
    });
  });

  describe('media limits (docs/editor.md "Media limits")', () => {
    /** IMAGE_MAX_PIXELS one below the 320×240 fixtures: only a size read right from each header refuses them. */
    const tight = mediaLimits(320 * 240 - 1);

    let videos: OverLimitVideos;
    before(async () => {
      videos = await makeOverLimitVideos(join(root, 'fixtures'));
    });

    async function assertOverLimit(work: Promise<unknown>, message: string | RegExp): Promise<void> {
      await assert.rejects(work, (error: unknown) => {
        assert.ok(error instanceof MediaOverLimit, String(error));
        assert.equal(error.status, 415);
        assert.deepEqual(Object.keys(error.toBody()), ['error', 'message']);
        assert.equal(error.toBody().error, 'unsupported_media');
        if (typeof message === 'string') assert.equal(error.toBody().message, message);
        else assert.match(String(error.toBody().message), message);
        return true;
      });
    }

    const images = ['image.png', 'image.jpg', ...(WEBP_ENCODER ? ['image.webp'] : [])];
    for (const file of images) {
      it(`refuses ${file} from its header past IMAGE_MAX_PIXELS, and takes it at the limit`, async () => {
        const { intake, stored, scratchLeft } = await fresh({ limits: tight });
        await assertOverLimit(
          takeIn(intake, file),
          'The image is too large: 320×240 pixels is more than IMAGE_MAX_PIXELS (76799)',
        );
        assert.deepEqual(await stored(), []);
        assert.deepEqual(await scratchLeft(), []);
        const { intake: roomy } = await fresh({ limits: mediaLimits(320 * 240) });
        assert.equal((await takeIn(roomy, file)).probed.kind, 'image');
      });
    }

    it('refuses an image whose header declares no size, before ffprobe', async () => {
      const { intake, stored } = await fresh();
      const png = await readFile(fixture('image.png'));
      const noSize = Buffer.from(png);
      noSize.writeUInt32BE(0, 16); // IHDR width 0
      await assert.rejects(
        intake.fromStream(Readable.from([noSize]), { maxBytes: MAX }),
        (error: unknown) => {
          assert.ok(error instanceof AppError && error.status === 415, String(error));
          assert.equal(String(error.cause), 'an image header without a readable size');
          return true;
        },
      );
      assert.deepEqual(await stored(), []);
    });

    const takeInFile = (intake: MediaIntake, path: string) =>
      intake.fromStream(createReadStream(path), { maxBytes: MAX });

    it('refuses videos too wide, too fast or too long, naming the limit', async () => {
      const { intake, stored } = await fresh();
      await assertOverLimit(
        takeInFile(intake, videos.wide),
        'The video is too large: 4097×64 has a side over 4096 pixels',
      );
      await assertOverLimit(
        takeInFile(intake, videos.fast),
        'The video has too high a frame rate: 121 frames per second is more than 120',
      );
      const { durationSeconds } = await probeMedia(videos.long);
      assert.ok(durationSeconds > 3900, `${durationSeconds} s`);
      await assertOverLimit(
        takeInFile(intake, videos.long),
        `The video is too long: ${Math.round(durationSeconds * 1000) / 1000} seconds is more than 3600`,
      );
      assert.deepEqual(await stored(), []);
    });

    it('names the limit of a video whose frame is larger than a probe may decode, from its container', async () => {
      // Default limits: a probe may decode 40 000 000 pixels, so the frame decodes and its size is reported.
      const { intake } = await fresh();
      const message = 'The video is too large: 4100×4100 has a side over 4096 pixels';
      await assertOverLimit(takeInFile(intake, videos.largeFrame), message);
      // Tight limits: at most 4096² pixels, so the decode fails and a probe that decodes nothing names the size.
      const { intake: tightIntake } = await fresh({ limits: tight });
      await assertOverLimit(takeInFile(tightIntake, videos.largeFrame), message);
    });

    it('refuses a video whose container understates its frame, its decode stopped by the bound', async () => {
      // The fixture is what it claims: left alone, ffprobe decodes the frame and reports its real width.
      const { stdout } = await run(ffprobe, [
        ...['-v', 'error', '-show_entries', 'stream=width', '-of', 'csv=p=0', videos.understated],
      ]);
      assert.equal(stdout.trim(), '4100');
      const { intake, stored } = await fresh({ limits: tight });
      await assert.rejects(takeInFile(intake, videos.understated), (error: unknown) => {
        assert.ok(error instanceof AppError && !(error instanceof MediaOverLimit), String(error));
        assert.deepEqual(error.toBody(), { error: 'unsupported_media', message: UNSUPPORTED_MEDIA_MESSAGE });
        assert.match(
          String(error.cause),
          /exceeds specified max pixel count|did not decode within max_pixels/,
        );
        return true;
      });
      assert.deepEqual(await stored(), []);
    });
  });

  describe('fromUrl', () => {
    const url = (path: string) => `http://127.0.0.1:${web.port}${path}`;

    it('fetches a PNG and stores it as the probe says, whatever the server called it', async () => {
      const { intake, stored } = await fresh();
      const { media, probed } = await intake.fromUrl(url('/image'), { maxBytes: MAX, field: 'url' });
      assert.equal(probed.kind, 'image');
      assert.equal(media.contentType, 'image/png');
      assert.equal((await stored()).length, 2);
    });

    it('refuses a playlist served as video/mp4 with 415, without following it', async () => {
      const before = trap.connections;
      const { intake, stored } = await fresh();
      await assertUnsupported(intake.fromUrl(url('/playlist'), { maxBytes: MAX, field: 'url' }));
      assert.equal(trap.connections, before);
      assert.deepEqual(await stored(), []);
    });

    it('refuses loopback targets without connecting when private targets are not allowed', async () => {
      const before = web.connections;
      const { intake, stored } = await fresh({ allowPrivate: false });
      await assertBadRequest(
        intake.fromUrl(url('/image'), { maxBytes: MAX, field: 'url' }),
        'url must be a https URL',
      );
      const https = `https://127.0.0.1:${web.port}/image`;
      await assertBadRequest(
        intake.fromUrl(https, { maxBytes: MAX, field: 'url' }),
        'url could not be fetched: the URL points to a private or local address',
      );
      assert.equal(web.connections, before);
      assert.deepEqual(await stored(), []);
    });

    it('names the upstream status of a failed download and never its body', async () => {
      const { intake } = await fresh();
      await assertBadRequest(
        intake.fromUrl(url('/missing'), { maxBytes: MAX, field: 'url' }),
        'url could not be fetched: HTTP 404',
      );
    });

    it('stops a download past maxBytes and one that outlives the time limit', async () => {
      const { intake, stored, scratchLeft } = await fresh({ fetchTimeoutMs: 500 });
      await assertBadRequest(
        intake.fromUrl(url('/image'), { maxBytes: 100, field: 'url' }),
        'url could not be fetched: the answer is larger than 100 bytes',
      );
      await assertBadRequest(
        intake.fromUrl(url('/stalls'), { maxBytes: MAX, field: 'url' }),
        'url could not be fetched: no complete answer within 500 ms',
      );
      assert.deepEqual(await stored(), []);
      assert.deepEqual(await scratchLeft(), []);
    });

    it("reads the service's own media from the store instead of downloading them, into a copy of its own", async () => {
      const { intake, store, stored } = await fresh();
      const { media } = await takeIn(intake, 'clip.mp4');
      const before = web.connections;
      const again = await intake.fromUrl(OWN_PREFIX + media.id, { maxBytes: MAX, field: 'url' });
      assert.notEqual(again.media.id, media.id, 'the new asset owns its file');
      assert.equal(again.media.size, media.size);
      assert.equal(again.probed.kind, 'video');
      assert.equal(web.connections, before);
      assert.equal((await stored()).length, 4, 'two files, each with its metadata');
      await assertBadRequest(
        intake.fromUrl(`${OWN_PREFIX}med_${'x'.repeat(24)}.mp4`, { maxBytes: MAX, field: 'url' }),
        "url is not a file in this service's media",
      );
      const text = await store.put(newMediaId('txt'), await readFile(fixture('notes.txt')), 'text/plain');
      await assertUnsupported(intake.probeStored(text.id));
    });
  });
});

function hlsPlaylist(port: number): string {
  const segment = `http://127.0.0.1:${port}/seg.ts`;
  return `#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n${segment}\n#EXT-X-ENDLIST\n`;
}
