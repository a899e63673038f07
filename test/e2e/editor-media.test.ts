// Editor media end to end (`POST /projects/<id>/assets`, docs/editor.md, Uploads and
// imports: user media is hostile input): the service as a process, real HTTP, real media made by ffmpeg at test time. Uploads are judged by
// their bytes, never their Content-Type; playlists, scripts, text, truncated and empty files are 415 with
// nothing stored and no connection made; UPLOAD_MAX_BYTES is enforced without reading what is refused; a
// 150 MB upload streams through without the service's memory growing with it; imports go through the
// guarded fetch (https served by a test CA the service trusts); another user's project is 404.
//
// Two services share one MongoDB-wire server: `main` (WEBHOOK_ALLOW_PRIVATE=true, the default 200 MiB limit)
// and `small` (UPLOAD_MAX_BYTES=1 MiB, private targets not allowed). Each has its own MEDIA_DIR and TMPDIR, so
// "nothing stored" is checked on the store's folder and on the intake's scratch copies alike.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  createReadStream,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { type IncomingMessage, type ServerResponse, Agent, request } from 'node:http';
import {
  connect,
  createServer as createTcpServer,
  type AddressInfo,
  type Server as TcpServer,
} from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { UNSUPPORTED_MEDIA_MESSAGE } from '../../workers/probe/probe.ts';
import { editorClient, editorUser, type Asset } from '../helpers/editor.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, type RunningService } from '../helpers/service.ts';
import { createTestCa, startHttpsServer, type TestCa, type TestHttpsServer } from '../helpers/tls.ts';

const run = promisify(execFile);
const { ffmpeg } = resolveFfmpeg({
  ffmpegPath: process.env.FFMPEG_PATH,
  ffprobePath: process.env.FFPROBE_PATH,
});

const MB = 1024 * 1024;
const SMALL_LIMIT = 1 * MB;
/** 44.1 kHz stereo 16-bit PCM is 176 400 bytes a second: 850 s is a ~150 MB wav. */
const BIG_WAV_SECONDS = 850;
/** ~50 MB: the first large body a process takes in, measured apart (see the streaming test). */
const WARM_UP_WAV_SECONDS = 300;
/** ~17 MB: large enough that the reader falls behind and the socket is paused. */
const KEEP_ALIVE_WAV_SECONDS = 100;
/**
 * How much the service's RSS may grow while it takes in the ~143 MiB file: a body held whole adds at least
 * its own size (live, until it is stored), a streamed one only what is in flight plus garbage.
 */
const RSS_GROWTH_LIMIT = 60 * MB;
/**
 * The big upload's pace. Every body chunk the service handles (copied off uWS, then read back from the scratch
 * file into the store) is a fresh ArrayBuffer, and V8 collects those late: a client sending over loopback as
 * fast as it can, on a busy machine, raised RSS by +135..303 MiB for this 143 MiB file, all of it garbage
 * (gone at the next GC); at 48 MiB/s, +0..35 MiB. A body held whole would be live at any pace.
 */
const UPLOAD_BYTES_PER_SECOND = 48 * MB;
const ASSETS = '/api/v1/media-studio/projects';

/** One service under test with the folders it writes to. */
interface Node {
  service: RunningService;
  mediaDir: string;
  tmpDir: string;
}

type UploadAnswer = { status: number; body: Record<string, unknown> & { asset?: Asset } };

describe('editor media: uploads and imports (the service as a process)', () => {
  let root: string;
  const fixture = (name: string) => join(root, name);
  let ca: TestCa;
  let mongo: TestMongo;
  let main: Node;
  let small: Node;
  let web: TestHttpsServer;
  /** Connections and requests the https server saw, by path. */
  const webSeen = { connections: 0, paths: [] as string[] };
  /** What a playlist names: nothing may ever connect here. */
  const trap = { connections: 0, port: 0, server: createTcpServer() as TcpServer };
  /** Every service's MEDIA_DIR and TMPDIR, removed in `after` even when a start failed. */
  const folders: string[] = [];
  let owner: { userId: string; token: string };
  let stranger: { userId: string; token: string };
  let reader: { userId: string; token: string };

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'mf-editor-media-'));
    trap.server.on('connection', (socket) => {
      trap.connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => trap.server.listen(0, '127.0.0.1', resolve));
    trap.port = (trap.server.address() as AddressInfo).port;

    const make = (...args: string[]) =>
      run(ffmpeg, ['-hide_banner', '-nostdin', '-v', 'error', '-y', ...args]);
    const picture = ['-f', 'lavfi', '-i', 'testsrc2=size=320x240', '-frames:v', '1'];
    const silence = (seconds: number, name: string) =>
      make('-f', 'lavfi', '-i', 'anullsrc=r=44100:cl=stereo', '-t', String(seconds), fixture(name));
    const tone = (seconds: number) => [
      '-f',
      'lavfi',
      '-i',
      `sine=frequency=440:sample_rate=44100:duration=${seconds}`,
    ];
    await Promise.all([
      make(...picture, fixture('image.png')),
      make(...tone(2), fixture('tone.wav')),
      // ~2.1 MB of valid stereo wav: only its size can refuse it.
      make(...tone(12), '-ac', '2', fixture('two-mb.wav')),
      make(
        ...['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25', ...tone(2), '-t', '2'],
        ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest'],
        fixture('clip.mp4'),
      ),
      silence(BIG_WAV_SECONDS, 'big.wav'),
      silence(WARM_UP_WAV_SECONDS, 'warm-up.wav'),
      silence(KEEP_ALIVE_WAV_SECONDS, 'keep-alive.wav'),
    ]);
    await make(
      '-i',
      fixture('clip.mp4'),
      '-c',
      'copy',
      '-movflags',
      '+faststart',
      fixture('clip-faststart.mp4'),
    );
    for (const name of ['clip.mp4', 'clip-faststart.mp4', 'tone.wav']) {
      const data = readFileSync(fixture(name));
      writeFileSync(fixture(`cut-${name}`), data.subarray(0, Math.floor(data.length / 2)));
    }
    writeFileSync(fixture('playlist.mp4'), hlsPlaylist(trap.port));
    // "ID3" first: the sniff says mp3, so only the forced demuxer and the protocol whitelist stop ffprobe.
    const id3 = Buffer.from('49443304000000000000', 'hex');
    writeFileSync(fixture('playlist-id3.mp3'), Buffer.concat([id3, Buffer.from(hlsPlaylist(trap.port))]));
    writeFileSync(fixture('concat.mp4'), `ffconcat version 1.0\nfile http://127.0.0.1:${trap.port}/seg.ts\n`);
    writeFileSync(fixture('notes.txt'), 'not media at all, just a text file\n'.repeat(10));

    ca = createTestCa();
    web = await startHttpsServer(serveFixtures, ca);
    web.server.on('connection', () => webSeen.connections++);

    mongo = await startMongo();
    const common = { MONGO_URL: mongo.uri, NODE_EXTRA_CA_CERTS: ca.caPath, RATE_LIMIT_PER_MINUTE: '100000' };
    [main, small] = await Promise.all([
      startNode({ ...common, MONGO_DB: 'editor_media', WEBHOOK_ALLOW_PRIVATE: 'true' }),
      startNode({ ...common, MONGO_DB: 'editor_media_small', UPLOAD_MAX_BYTES: String(SMALL_LIMIT) }),
    ]);
    owner = await editorUser(main.service);
    stranger = await editorUser(main.service);
    reader = await editorUser(main.service, { scopes: ['video-editor:read'] });
  });

  after(async () => {
    await Promise.all([main?.service.stop(), small?.service.stop()]);
    await mongo?.stop();
    await web?.stop();
    await new Promise((resolve) => trap.server.close(resolve));
    ca?.remove();
    for (const dir of [...folders, root]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function startNode(env: Record<string, string>): Promise<Node> {
    const mediaDir = mkdtempSync(join(tmpdir(), 'mf-editor-media-store-'));
    const tmpDir = mkdtempSync(join(tmpdir(), 'mf-editor-media-tmp-'));
    folders.push(mediaDir, tmpDir);
    const service = await startService({ ...env, MEDIA_DIR: mediaDir, TMPDIR: tmpDir });
    return { service, mediaDir, tmpDir };
  }

  function serveFixtures(req: IncomingMessage, res: ServerResponse): void {
    webSeen.paths.push(req.url ?? '');
    const serve = (name: string, type: string): void => {
      res.writeHead(200, { 'content-type': type }).end(readFileSync(fixture(name)));
    };
    if (req.url === '/image.png') return serve('image.png', 'application/octet-stream');
    if (req.url === '/playlist.mp4') return serve('playlist.mp4', 'video/mp4');
    res.writeHead(404, { 'content-type': 'text/plain' }).end('secret error page');
  }

  const client = (node: () => Node, token: string) => editorClient(() => node().service, token);
  const ownerApi = () => client(() => main, owner.token);

  /** A raw upload through fetch (Content-Length declared), with optional extra headers. */
  async function upload(
    node: Node,
    token: string,
    projectId: string,
    data: Buffer,
    contentType: string,
    headers: Record<string, string> = {},
  ): Promise<UploadAnswer> {
    const response = await fetch(`${node.service.url}${ASSETS}/${projectId}/assets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': contentType, ...headers },
      body: data,
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as UploadAnswer['body']) : {} };
  }

  /** What the service keeps: its store's files, the intake's scratch folders, the project's assets. */
  async function snapshot(node: Node, token: string, projectId: string) {
    const state = await client(() => node, token).state(projectId);
    assert.equal(state.status, 200, JSON.stringify(state.body));
    return {
      stored: readdirSync(node.mediaDir).sort(),
      scratch: readdirSync(node.tmpDir).filter((name) => name.startsWith('mf-intake-')),
      assets: state.body.assets.map((asset) => asset.id),
    };
  }

  /** Runs `work` and checks it left no file in the store or scratch folder and no asset in the project. */
  async function assertNothingKept(node: Node, projectId: string, work: () => Promise<void>): Promise<void> {
    const before = await snapshot(node, owner.token, projectId);
    assert.deepEqual(before.scratch, []);
    await work();
    const after = await snapshot(node, owner.token, projectId);
    assert.deepEqual(after.stored, before.stored, 'no file was stored');
    assert.deepEqual(after.scratch, [], 'no scratch copy is left');
    assert.deepEqual(after.assets, before.assets, 'no asset was added');
  }

  function assertUnsupported(answer: UploadAnswer): void {
    assert.equal(answer.status, 415, JSON.stringify(answer.body));
    assert.deepEqual(answer.body, { error: 'unsupported_media', message: UNSUPPORTED_MEDIA_MESSAGE });
  }

  /** Checks a stored asset: its media file in MEDIA_DIR, and `/media` serving the bytes with `type`. */
  async function assertServed(node: Node, asset: Asset, type: string, bytes?: Buffer): Promise<void> {
    const mediaId = new URL(asset.url).pathname.replace(/^\/media\//, '');
    assert.ok(asset.url.startsWith(`${node.service.url}/media/`), asset.url);
    const stored = readdirSync(node.mediaDir);
    assert.ok(stored.includes(mediaId) && stored.includes(`${mediaId}.meta.json`), `${mediaId} in the store`);
    const response = await fetch(asset.url);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), type);
    const body = Buffer.from(await response.arrayBuffer());
    if (bytes) assert.ok(body.equals(bytes), 'the stored bytes are the uploaded ones');
  }

  describe('uploads as raw bodies', () => {
    const cases = [
      {
        file: 'image.png',
        type: 'image/png',
        kind: 'image',
        served: 'image/png',
        size: true,
        duration: false,
      },
      { file: 'clip.mp4', type: 'video/mp4', kind: 'video', served: 'video/mp4', size: true, duration: true },
      {
        file: 'tone.wav',
        type: 'audio/wav',
        kind: 'audio',
        served: 'audio/wav',
        size: false,
        duration: true,
      },
      // The header is never trusted: a PNG called an mp4 is a PNG.
      {
        file: 'image.png',
        type: 'video/mp4',
        kind: 'image',
        served: 'image/png',
        size: true,
        duration: false,
      },
    ];
    for (const { file, type, kind, served, size, duration } of cases) {
      it(`stores ${file} sent as ${type} as kind ${kind}, served as ${served}`, async () => {
        const api = ownerApi();
        const project = await api.createProject();
        const data = readFileSync(fixture(file));
        const answer = await upload(main, owner.token, project.id, data, type, {
          'x-asset-name': `My ${file}`,
        });
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        const asset = answer.body.asset!;
        assert.equal(asset.kind, kind);
        assert.equal(asset.source, 'upload');
        assert.equal(asset.metadata.name, `My ${file}`);
        if (size) assert.deepEqual([asset.metadata.width, asset.metadata.height], [320, 240]);
        else assert.equal(asset.metadata.width, undefined);
        if (duration) {
          const seconds = asset.metadata.duration_sec as number;
          assert.ok(Math.abs(seconds - 2) < 0.15, `duration ${seconds}`);
        } else assert.equal(asset.metadata.duration_sec, undefined);
        await assertServed(main, asset, served, data);
        const state = await api.state(project.id);
        assert.deepEqual(
          state.body.assets.map((one) => [one.id, one.kind, one.source]),
          [[asset.id, kind, 'upload']],
        );
      });
    }
  });

  describe('hostile uploads: 415, nothing stored, nothing fetched', () => {
    const cases: Array<[string, string, string]> = [
      ['an HLS playlist sent as video/mp4', 'playlist.mp4', 'video/mp4'],
      ['an HLS playlist behind an ID3 header sent as audio/mpeg', 'playlist-id3.mp3', 'audio/mpeg'],
      ['an ffconcat script sent as video/mp4', 'concat.mp4', 'video/mp4'],
      ['a plain text file sent as audio/mpeg', 'notes.txt', 'audio/mpeg'],
      ['an mp4 cut in half (moov at the end)', 'cut-clip.mp4', 'video/mp4'],
      ['an mp4 cut in half (faststart: moov first)', 'cut-clip-faststart.mp4', 'video/mp4'],
      ['a wav cut in half', 'cut-tone.wav', 'audio/wav'],
    ];
    for (const [what, file, type] of cases) {
      it(`refuses ${what}`, async () => {
        const project = await ownerApi().createProject();
        await assertNothingKept(main, project.id, async () => {
          assertUnsupported(await upload(main, owner.token, project.id, readFileSync(fixture(file)), type));
        });
      });
    }

    it('refuses an empty body', async () => {
      const project = await ownerApi().createProject();
      await assertNothingKept(main, project.id, async () => {
        assertUnsupported(await upload(main, owner.token, project.id, Buffer.alloc(0), 'video/mp4'));
      });
    });

    it('refuses a file sent as a type no upload takes (application/octet-stream), naming the types', async () => {
      const project = await ownerApi().createProject();
      await assertNothingKept(main, project.id, async () => {
        const answer = await upload(
          main,
          owner.token,
          project.id,
          readFileSync(fixture('image.png')),
          'application/octet-stream',
        );
        assert.equal(answer.status, 415, JSON.stringify(answer.body));
        assert.equal(answer.body.error, 'unsupported_media');
        assert.match(String(answer.body.message), /image\/png.*video\/mp4.*audio\/wav/);
      });
    });

    it('refuses a text body from its first bytes, without waiting for the rest', async () => {
      // 150 MB announced, 1 MB sent, then the client waits: only a refusal from the first bytes answers it.
      const project = await ownerApi().createProject();
      const { port } = new URL(main.service.url);
      await assertNothingKept(main, project.id, async () => {
        const head =
          `POST ${ASSETS}/${project.id}/assets HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
          `Authorization: Bearer ${owner.token}\r\nContent-Type: audio/mpeg\r\n` +
          `Content-Length: ${150 * MB}\r\n\r\n`;
        const text = Buffer.from('#EXTM3U and then text, forever\n'.repeat(34 * 1024));
        assert.ok(text.length >= MB);
        const raw = await rawExchange(Number(port), Buffer.concat([Buffer.from(head), text]), 10_000);
        const answer = parseAnswer(raw.data);
        assertUnsupported({ status: answer.status, body: JSON.parse(answer.body) as UploadAnswer['body'] });
        assert.ok(raw.closed, 'the connection is closed after the answer (the rest of the body never comes)');
      });
    });

    it('keeps nothing of an upload whose client disconnects halfway', async () => {
      const project = await ownerApi().createProject();
      const before = await snapshot(main, owner.token, project.id);
      const size = statSync(fixture('warm-up.wav')).size;
      await new Promise<void>((resolve) => {
        const req = request(`${main.service.url}${ASSETS}/${project.id}/assets`, {
          method: 'POST',
          agent: false,
          headers: {
            authorization: `Bearer ${owner.token}`,
            'content-type': 'audio/wav',
            'content-length': String(size),
          },
        });
        req.on('error', () => resolve());
        req.on('close', () => resolve());
        const source = createReadStream(fixture('warm-up.wav'));
        let sent = 0;
        source.on('data', (chunk) => {
          sent += chunk.length;
          if (sent > size / 2) {
            source.destroy();
            req.destroy();
          }
        });
        source.pipe(req);
      });
      // The service hears of the disconnect on its own time: wait for the scratch copy to go.
      const deadline = Date.now() + 10_000;
      let after = await snapshot(main, owner.token, project.id);
      while (after.scratch.length > 0 && Date.now() < deadline) {
        await sleep(100);
        after = await snapshot(main, owner.token, project.id);
      }
      assert.deepEqual(after, before, 'no file, scratch copy or asset is left');
      // And the service still takes uploads.
      const answer = await upload(
        main,
        owner.token,
        project.id,
        readFileSync(fixture('image.png')),
        'image/png',
      );
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
    });

    it('refuses a wav of zeros from its header, at once, on a connection that stays usable', async (t) => {
      // A RIFF/WAVE header and 24 MiB of zeros: read as chunks, zeros are endless empty chunks (ffprobe's wav
      // demuxer once scanned such a file for 14-24 s). Its first chunk id is not four printable characters, so
      // it is refused without ffprobe. The body is sent chunked, so it tends to end while the socket is paused
      // for backpressure: the next request on the same connection must still go through.
      const data = Buffer.alloc(24 * MB);
      data.write('RIFF', 0, 'latin1');
      data.writeUInt32LE(data.length - 8, 4);
      data.write('WAVE', 8, 'latin1');
      const project = await ownerApi().createProject();
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        await assertNothingKept(main, project.id, async () => {
          const started = Date.now();
          const answer = await streamUpload(
            main,
            owner.token,
            project.id,
            Readable.from(chunks(data, 64 * 1024)),
            {
              headers: { 'content-type': 'audio/wav' },
              agent,
            },
          );
          const elapsed = Date.now() - started;
          t.diagnostic(`refused after ${elapsed} ms`);
          assertUnsupported(answer);
          assert.ok(elapsed < 10_000, `refused after ${elapsed} ms: the header alone says it is not a wav`);
        });
        const next = await streamUpload(
          main,
          owner.token,
          project.id,
          Readable.from([readFileSync(fixture('image.png'))]),
          {
            headers: { 'content-type': 'image/png' },
            agent,
          },
        );
        assert.equal(next.status, 200, JSON.stringify(next.body));
        assert.equal(next.reused, true, 'the kept-alive connection carried the next request');
      } finally {
        agent.destroy();
      }
    });

    it('never lets a playlist reach the addresses it names', async () => {
      const project = await ownerApi().createProject();
      const before = trap.connections;
      for (const [file, type] of [
        ['playlist.mp4', 'video/mp4'],
        ['playlist-id3.mp3', 'audio/mpeg'],
        ['concat.mp4', 'video/mp4'],
      ] as const) {
        assertUnsupported(await upload(main, owner.token, project.id, readFileSync(fixture(file)), type));
      }
      await sleep(500); // a wait for nothing: a late connection to the trap must not come either
      assert.equal(trap.connections, before);
      assert.equal(trap.connections, 0, 'the trap was never connected to in this file');
    });
  });

  describe('UPLOAD_MAX_BYTES', () => {
    const tooLarge = new RegExp(`too large \\(max ${SMALL_LIMIT} bytes\\)`);

    it('answers 413 to a streamed (chunked) upload past the limit and keeps nothing', async () => {
      const user = await editorUser(small.service);
      const project = await client(() => small, user.token).createProject();
      const data = readFileSync(fixture('two-mb.wav'));
      assert.ok(data.length > 2 * MB);
      const before = await snapshot(small, user.token, project.id);
      const answer = await streamUpload(
        small,
        user.token,
        project.id,
        Readable.from(chunks(data, 64 * 1024)),
        {
          headers: { 'content-type': 'audio/wav' },
        },
      );
      assert.equal(answer.status, 413, JSON.stringify(answer.body));
      assert.match(String(answer.body.error), tooLarge);
      const after = await snapshot(small, user.token, project.id);
      assert.deepEqual(after, before);
      // The same file with its length declared is refused too; and one under the limit is taken. The service
      // answers a declared length at once and closes without reading the body, so a client still writing it
      // may see EPIPE before it reads the answer (fetch does): the headers go alone, over a raw socket.
      const { port } = new URL(small.service.url);
      const declaredHead =
        `POST ${ASSETS}/${project.id}/assets HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
        `Authorization: Bearer ${user.token}\r\nContent-Type: audio/wav\r\n` +
        `Content-Length: ${data.length}\r\n\r\n`;
      const declared = parseAnswer((await rawExchange(Number(port), declaredHead, 10_000)).data);
      assert.equal(declared.status, 413, declared.body);
      assert.match(String((JSON.parse(declared.body) as { error: string }).error), tooLarge);
      assert.deepEqual(await snapshot(small, user.token, project.id), after);
      const fits = await upload(
        small,
        user.token,
        project.id,
        readFileSync(fixture('tone.wav')),
        'audio/wav',
      );
      assert.equal(fits.status, 200, JSON.stringify(fits.body));
      assert.equal(fits.body.asset!.kind, 'audio');
    });

    it('refuses a declared Content-Length above the limit without reading the body', async () => {
      const user = await editorUser(small.service);
      const project = await client(() => small, user.token).createProject();
      const before = await snapshot(small, user.token, project.id);
      const { port } = new URL(small.service.url);
      // Headers only: the 413 must come while the body has not been sent at all.
      const head =
        `POST ${ASSETS}/${project.id}/assets HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
        `Authorization: Bearer ${user.token}\r\nContent-Type: video/mp4\r\n` +
        `Content-Length: ${2 * MB}\r\n\r\n`;
      const started = Date.now();
      const raw = await rawExchange(Number(port), head, 10_000);
      const elapsed = Date.now() - started;
      const parsed = parseAnswer(raw.data);
      assert.equal(parsed.status, 413, raw.data.toString('latin1'));
      assert.match(String((JSON.parse(parsed.body) as { error: string }).error), tooLarge);
      assert.ok(raw.closed, 'the connection is closed after the answer (the unread body stays unread)');
      assert.ok(elapsed < 5_000, `answered in ${elapsed} ms`);
      assert.deepEqual(await snapshot(small, user.token, project.id), before);
    });
  });

  describe('streaming: the body never sits whole in memory', () => {
    it('keeps a keep-alive connection usable after streamed uploads that paused the socket', async () => {
      // Chunked bodies: the terminating chunk arrives in the same read as the data before it, so a request
      // can end while the socket is paused for backpressure. Left paused, the next request on the connection
      // stalls until the idle timeout resets it (ECONNRESET after ~10 s).
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const data = readFileSync(fixture('keep-alive.wav'));
        const project = await ownerApi().createProject();
        for (let round = 0; round < 3; round++) {
          const answer = await streamUpload(
            main,
            owner.token,
            project.id,
            Readable.from(chunks(data, 64 * 1024)),
            {
              headers: { 'content-type': 'audio/wav' },
              agent,
            },
          );
          assert.equal(answer.status, 200, `round ${round}: ${JSON.stringify(answer.body)}`);
          assert.equal(
            answer.reused,
            round > 0,
            `round ${round} ${round > 0 ? 'reuses' : 'opens'} the connection`,
          );
          assert.ok(
            Math.abs((answer.body.asset!.metadata.duration_sec as number) - KEEP_ALIVE_WAV_SECONDS) < 0.01,
          );
        }
      } finally {
        agent.destroy();
      }
    });

    it('takes in a ~150 MB wav with the service RSS growing far less than the file', async (t) => {
      const size = statSync(fixture('big.wav')).size;
      assert.ok(size > 140 * MB, `big.wav is ${size} bytes`);
      const project = await ownerApi().createProject();
      const pid = main.service.proc.child.pid!;
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      /** Streams one file (Content-Length declared, paced) while sampling the service's RSS every 10 ms. */
      const measured = async (name: string) => {
        await sleep(300); // the previous upload's memory settles before the baseline is read
        const baseline = rssBytes(pid);
        let peak = baseline;
        const sampler = setInterval(() => {
          peak = Math.max(peak, rssBytes(pid));
        }, 10);
        const started = Date.now();
        const bytes = statSync(fixture(name)).size;
        try {
          const answer = await streamUpload(
            main,
            owner.token,
            project.id,
            Readable.from(paced(fixture(name))),
            {
              headers: { 'content-type': 'audio/wav', 'content-length': String(bytes) },
              agent,
            },
          );
          peak = Math.max(peak, rssBytes(pid));
          const growth = peak - baseline;
          t.diagnostic(
            `${name}: ${(bytes / MB).toFixed(1)} MiB in ${Date.now() - started} ms; service RSS ` +
              `${(baseline / MB).toFixed(1)} → peak ${(peak / MB).toFixed(1)} MiB (+${(growth / MB).toFixed(1)} MiB)`,
          );
          return { answer, growth };
        } finally {
          clearInterval(sampler);
        }
      };
      try {
        // The first large body a process takes in raises its RSS once (heap and allocator growth), so the big
        // file is measured after a ~50 MB one; both figures are reported.
        const warmUp = await measured('warm-up.wav');
        assert.equal(warmUp.answer.status, 200, JSON.stringify(warmUp.answer.body));
        const { answer, growth } = await measured('big.wav');
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        const asset = answer.body.asset!;
        assert.equal(asset.kind, 'audio');
        assert.equal(asset.source, 'upload');
        const duration = asset.metadata.duration_sec as number;
        assert.ok(Math.abs(duration - BIG_WAV_SECONDS) < 0.01, `duration ${duration}`);
        assert.ok(growth < RSS_GROWTH_LIMIT, `RSS grew by ${(growth / MB).toFixed(1)} MiB`);
        const mediaId = new URL(asset.url).pathname.replace(/^\/media\//, '');
        assert.equal(statSync(join(main.mediaDir, mediaId)).size, size, 'stored whole');
        const range = await fetch(asset.url, { headers: { range: 'bytes=0-11' } });
        assert.equal(range.status, 206);
        assert.equal(range.headers.get('content-type'), 'audio/wav');
        assert.equal(range.headers.get('content-range'), `bytes 0-11/${size}`);
        assert.equal(Buffer.from(await range.arrayBuffer()).toString('latin1', 8, 12), 'WAVE');
        assert.deepEqual(
          readdirSync(main.tmpDir).filter((entry) => entry.startsWith('mf-intake-')),
          [],
        );
      } finally {
        agent.destroy();
      }
    });
  });

  describe('imports by URL', () => {
    const importUrl = (node: Node, token: string, projectId: string, url: string) =>
      client(() => node, token).importUrl(projectId, url) as Promise<UploadAnswer>;

    it('imports an https PNG served as application/octet-stream as an image', async () => {
      const project = await ownerApi().createProject();
      const url = `${web.url}/image.png`;
      const answer = await importUrl(main, owner.token, project.id, url);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const asset = answer.body.asset!;
      assert.equal(asset.kind, 'image');
      assert.equal(asset.source, 'import');
      assert.equal(asset.metadata.source_url, url);
      assert.deepEqual([asset.metadata.width, asset.metadata.height], [320, 240]);
      await assertServed(main, asset, 'image/png', readFileSync(fixture('image.png')));
    });

    it("imports the service's own media as a copy, without fetching it", async () => {
      const project = await ownerApi().createProject();
      const data = readFileSync(fixture('clip.mp4'));
      const uploaded = await upload(main, owner.token, project.id, data, 'video/mp4');
      assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
      const seen = webSeen.paths.length;
      const answer = await importUrl(main, owner.token, project.id, uploaded.body.asset!.url);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const asset = answer.body.asset!;
      assert.equal(asset.kind, 'video');
      assert.equal(asset.source, 'import');
      assert.notEqual(asset.url, uploaded.body.asset!.url, 'the import owns its own file');
      await assertServed(main, asset, 'video/mp4', data);
      assert.equal(webSeen.paths.length, seen);
    });

    it('refuses an https playlist served as video/mp4 with 415, without following it', async () => {
      const project = await ownerApi().createProject();
      const before = trap.connections;
      await assertNothingKept(main, project.id, async () => {
        assertUnsupported(await importUrl(main, owner.token, project.id, `${web.url}/playlist.mp4`));
      });
      await sleep(500); // a wait for nothing: a late connection to the trap must not come either
      assert.equal(trap.connections, before);
      assert.ok(webSeen.paths.includes('/playlist.mp4'), 'the playlist itself was fetched');
    });

    it('answers 400 naming the upstream status (never its body) for a 404', async () => {
      const project = await ownerApi().createProject();
      await assertNothingKept(main, project.id, async () => {
        const answer = await importUrl(main, owner.token, project.id, `${web.url}/missing.png`);
        assert.equal(answer.status, 400, JSON.stringify(answer.body));
        assert.deepEqual(answer.body, { error: 'url could not be fetched: HTTP 404' });
      });
    });

    it('refuses a plain http URL with 400 (https only), even with private targets allowed', async () => {
      const project = await ownerApi().createProject();
      const seen = webSeen.connections;
      await assertNothingKept(main, project.id, async () => {
        const answer = await importUrl(
          main,
          owner.token,
          project.id,
          `http://127.0.0.1:${web.port}/image.png`,
        );
        assert.equal(answer.status, 400, JSON.stringify(answer.body));
        assert.deepEqual(answer.body, { error: 'url must be a https URL' });
      });
      assert.equal(webSeen.connections, seen);
    });

    it('refuses http, loopback and special-use names without WEBHOOK_ALLOW_PRIVATE, before connecting', async () => {
      const user = await editorUser(small.service);
      const project = await client(() => small, user.token).createProject();
      const seen = webSeen.connections;
      const before = await snapshot(small, user.token, project.id);
      const http = await importUrl(small, user.token, project.id, `http://127.0.0.1:${web.port}/image.png`);
      assert.equal(http.status, 400, JSON.stringify(http.body));
      assert.deepEqual(http.body, { error: 'url must be a https URL' });
      const https = await importUrl(small, user.token, project.id, `${web.url}/image.png`);
      assert.equal(https.status, 400, JSON.stringify(https.body));
      assert.deepEqual(https.body, {
        error: 'url could not be fetched: the URL points to a private or local address',
      });
      for (const host of ['media.localhost', 'nas.local', 'files.internal', 'x.home.arpa', 'abc.onion']) {
        const special = await importUrl(small, user.token, project.id, `https://${host}/image.png`);
        assert.deepEqual(
          [special.status, special.body],
          [400, { error: 'url could not be fetched: the URL points to a private or local address' }],
          host,
        );
      }
      await sleep(200); // a wait for nothing: a late connection must not come either
      assert.equal(webSeen.connections, seen, 'the loopback server saw no connection');
      assert.deepEqual(await snapshot(small, user.token, project.id), before);
    });
  });

  describe('ids and ownership', () => {
    const strangerImport = (projectId: string) =>
      client(() => main, stranger.token).importUrl(
        projectId,
        `${web.url}/image.png`,
      ) as Promise<UploadAnswer>;

    it("answers 404 to an upload or import into another user's project, keeping nothing", async () => {
      const project = await ownerApi().createProject();
      const seen = webSeen.paths.length;
      await assertNothingKept(main, project.id, async () => {
        const answer = await upload(
          main,
          stranger.token,
          project.id,
          readFileSync(fixture('image.png')),
          'image/png',
        );
        assert.equal(answer.status, 404, JSON.stringify(answer.body));
        assert.deepEqual(answer.body, { error: 'Project not found' });
        const imported = await strangerImport(project.id);
        assert.equal(imported.status, 404, JSON.stringify(imported.body));
        assert.deepEqual(imported.body, { error: 'Project not found' });
      });
      assert.equal(webSeen.paths.length, seen, 'nothing was fetched for a project that is not the caller’s');
      const missing = await upload(
        main,
        owner.token,
        'vp_doesnotexist000',
        readFileSync(fixture('image.png')),
        'image/png',
      );
      assert.equal(missing.status, 404, JSON.stringify(missing.body));
    });

    it('answers 403 without video-editor:write, keeping nothing', async () => {
      const project = await ownerApi().createProject();
      await assertNothingKept(main, project.id, async () => {
        const answer = await upload(
          main,
          reader.token,
          project.id,
          readFileSync(fixture('image.png')),
          'image/png',
        );
        assert.equal(answer.status, 403, JSON.stringify(answer.body));
        assert.deepEqual(answer.body, { error: 'Missing required scope: video-editor:write' });
      });
    });
  });

  /**
   * Uploads `source` through `http.request` (chunked unless a Content-Length is given), with backpressure;
   * `reused` says whether the request went out on a kept-alive connection.
   */
  function streamUpload(
    node: Node,
    token: string,
    projectId: string,
    source: Readable,
    options: { headers: Record<string, string>; agent?: Agent },
  ): Promise<UploadAnswer & { reused: boolean }> {
    return new Promise((resolve, reject) => {
      const req = request(`${node.service.url}${ASSETS}/${projectId}/assets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, ...options.headers },
        agent: options.agent ?? false,
      });
      let answered = false;
      req.on('response', (res) => {
        answered = true;
        const parts: Buffer[] = [];
        res.on('data', (chunk: Buffer) => parts.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          // Answered: whatever was still to be sent is moot (an early 413/415 leaves the rest unread).
          source.unpipe(req);
          source.destroy();
          const text = Buffer.concat(parts).toString('utf8');
          const body = text ? (JSON.parse(text) as UploadAnswer['body']) : {};
          resolve({ status: res.statusCode!, body, reused: req.reusedSocket });
        });
      });
      // An answer given before the whole body was sent (413) ends the exchange: later write errors are moot.
      req.on('error', (error) => {
        if (!answered) reject(error);
      });
      source.on('error', reject);
      source.pipe(req);
    });
  }
});

function hlsPlaylist(port: number): string {
  const segment = `http://127.0.0.1:${port}/seg0.ts`;
  return `#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n${segment}\n#EXT-X-ENDLIST\n`;
}

/** The file at `path`, read in 256 KiB chunks yielded no faster than UPLOAD_BYTES_PER_SECOND. */
async function* paced(path: string): AsyncGenerator<Buffer> {
  const started = Date.now();
  let sent = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>) {
    const due = started + (sent / UPLOAD_BYTES_PER_SECOND) * 1000;
    if (due > Date.now()) await sleep(due - Date.now());
    sent += chunk.length;
    yield chunk;
  }
}

function* chunks(data: Buffer, size: number): Generator<Buffer> {
  for (let offset = 0; offset < data.length; offset += size) yield data.subarray(offset, offset + size);
}

/** The resident set of process `pid` (`VmRSS` in /proc), in bytes. */
function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (!kb) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb[1]) * 1024;
}

/** Sends `text` on a raw connection and collects what comes back until the server closes it (or `timeoutMs`). */
function rawExchange(
  port: number,
  text: string | Buffer,
  timeoutMs: number,
): Promise<{ data: Buffer; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const parts: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ data: Buffer.concat(parts), closed: false });
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => parts.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ data: Buffer.concat(parts), closed: true });
    });
    socket.write(text);
  });
}

/** The status and body of one HTTP/1.1 answer with a Content-Length. */
function parseAnswer(data: Buffer): { status: number; body: string } {
  const end = data.indexOf('\r\n\r\n');
  assert.ok(end > 0, `an HTTP answer: ${JSON.stringify(data.toString('latin1'))}`);
  const head = data.subarray(0, end).toString('latin1');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
  const length = Number(/^content-length:\s*(\d+)/im.exec(head)?.[1]);
  return { status, body: data.subarray(end + 4, end + 4 + length).toString('utf8') };
}
