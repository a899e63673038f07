import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MongoClient } from 'mongodb';
import { newMediaId } from '../../src/platform/storage/media-id.ts';
import type { MediaStore, StoredMedia } from '../../src/platform/storage/media-store.ts';
import { createFsMediaStore } from '../../src/platform/storage/fs-store.ts';
import { createGridFsMediaStore } from '../../src/platform/storage/gridfs-store.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, type RunningService } from '../helpers/service.ts';

const MB = 1024 * 1024;

/** A file put in the store by the test, with its bytes. */
interface Fixture {
  media: StoredMedia;
  data: Buffer;
}

async function putFixture(store: MediaStore, size: number, ext: string, type: string): Promise<Fixture> {
  const data = randomBytes(size);
  return { media: await store.put(newMediaId(ext), data, type), data };
}

async function get(url: string, headers: Record<string, string> = {}, method = 'GET') {
  const response = await fetch(url, { method, headers });
  return {
    status: response.status,
    headers: response.headers,
    body: Buffer.from(await response.arrayBuffer()),
  };
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** A parsed HTTP/1.1 answer read off a raw socket. */
interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  /** Bytes after the header block (for a HEAD answer: whatever followed it on the connection). */
  rest: Buffer;
}

function parseHead(buffer: Buffer): RawAnswer | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, rest: buffer.subarray(end + 4) };
}

/** Opens a raw connection to the service and sends `text` (request paths go out exactly as written). */
function rawConnect(baseUrl: string, text: string): Socket {
  const { hostname, port } = new URL(baseUrl);
  const socket = connect(Number(port), hostname);
  socket.write(text);
  return socket;
}

/** Sends a raw request and collects bytes until `enough` says so (or the connection closes). */
function rawExchange(baseUrl: string, text: string, enough: (received: Buffer) => boolean): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = rawConnect(baseUrl, text);
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(`no complete answer; got ${JSON.stringify(received.toString('latin1').slice(0, 300))}`),
      );
    }, 10_000);
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(received);
    };
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      if (enough(received)) done();
    });
    socket.on('close', done);
    socket.on('error', reject);
  });
}

/** A raw GET whose answer is complete once its announced Content-Length has arrived. */
async function rawGet(
  baseUrl: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  const request = `GET ${path} HTTP/1.1\r\nHost: test\r\n${extra.join('')}\r\n`;
  const received = await rawExchange(baseUrl, request, (buffer) => {
    const head = parseHead(buffer);
    return head !== undefined && head.rest.length >= Number(head.headers['content-length'] ?? 0);
  });
  const answer = parseHead(received);
  assert.ok(answer, `an HTTP answer for ${path}`);
  return answer;
}

/** Open file descriptors of a process (Linux). */
function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** Resident memory of a process, in bytes (Linux). */
function residentBytes(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

let mongo: TestMongo;
before(async () => {
  mongo = await startMongo();
});
after(async () => {
  await mongo?.stop();
});

describe('GET /media/<id> with MEDIA_STORE=fs', () => {
  let mediaDir: string;
  let service: RunningService;
  let store: MediaStore;
  let video: Fixture;
  let image: Fixture;
  let big: Fixture; // larger than what loopback socket buffers absorb, so a client that stops reading stalls it
  let url: (fixture: Fixture) => string;
  before(async () => {
    mediaDir = mkdtempSync(join(tmpdir(), 'mf-media-e2e-'));
    service = await startService({ MONGO_URL: mongo.uri, MEDIA_STORE: 'fs', MEDIA_DIR: mediaDir });
    // The test writes through the same adapter, on the same folder, as the service reads.
    store = await createFsMediaStore({ dir: mediaDir });
    video = await putFixture(store, 6 * MB + 123, 'mp4', 'video/mp4');
    image = await putFixture(store, 2000, 'png', 'image/png');
    big = await putFixture(store, 48 * MB, 'mp4', 'video/mp4');
    url = (fixture) => `${service.url}/media/${fixture.media.id}`;
  });
  after(async () => {
    await service?.stop();
    if (mediaDir) rmSync(mediaDir, { recursive: true, force: true });
  });

  it('serves the whole file byte for byte with its type, length, ETag and caching headers', async () => {
    const answer = await get(url(video));
    assert.equal(answer.status, 200);
    assert.equal(answer.body.length, video.data.length);
    assert.equal(sha256(answer.body), sha256(video.data));
    assert.equal(answer.headers.get('content-type'), 'video/mp4');
    assert.equal(answer.headers.get('content-length'), String(video.data.length));
    assert.equal(answer.headers.get('accept-ranges'), 'bytes');
    assert.equal(answer.headers.get('etag'), video.media.etag);
    assert.equal(answer.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(answer.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(answer.headers.get('content-range'), null);

    const small = await get(url(image));
    assert.equal(small.status, 200);
    assert.deepEqual(small.body, image.data);
    assert.equal(small.headers.get('content-type'), 'image/png');
  });

  it('answers each Range form with 206, Content-Range and exactly those bytes', async () => {
    const size = video.data.length;
    const cases: Array<[string, number, number]> = [
      ['bytes=0-0', 0, 0],
      ['bytes=0-99', 0, 99],
      ['bytes=1048570-2097160', 1048570, 2097160],
      [`bytes=${size - 10}-`, size - 10, size - 1],
      ['bytes=5000000-', 5000000, size - 1],
      ['bytes=-500', size - 500, size - 1],
      [`bytes=-${size + 10}`, 0, size - 1],
      [`bytes=100-${size + 1000}`, 100, size - 1],
    ];
    for (const [range, start, end] of cases) {
      const answer = await get(url(video), { range });
      assert.equal(answer.status, 206, range);
      assert.equal(answer.headers.get('content-range'), `bytes ${start}-${end}/${size}`, range);
      assert.equal(answer.headers.get('content-length'), String(end - start + 1), range);
      assert.equal(answer.headers.get('etag'), video.media.etag, range);
      assert.ok(answer.body.equals(video.data.subarray(start, end + 1)), `bytes of ${range}`);
    }
  });

  it('answers an unsatisfiable range with 416 and Content-Range bytes */size', async () => {
    const size = video.data.length;
    for (const range of [`bytes=${size}-`, `bytes=${size + 5}-${size + 10}`, 'bytes=-0']) {
      const answer = await get(url(video), { range });
      assert.equal(answer.status, 416, range);
      assert.equal(answer.headers.get('content-range'), `bytes */${size}`, range);
      assert.deepEqual(JSON.parse(answer.body.toString()), { error: 'Range not satisfiable' });
    }
  });

  it('serves the whole file for several ranges, other units, malformed ranges and a stale If-Range', async () => {
    const variants: Array<Record<string, string>> = [
      { range: 'bytes=0-1,5-6' },
      { range: 'items=0-5' },
      { range: 'bytes=9-2' },
      { range: 'bytes=abc' },
      { range: 'bytes=0-10', 'if-range': '"some-older-version"' },
    ];
    for (const headers of variants) {
      const answer = await get(url(image), headers);
      assert.equal(answer.status, 200, JSON.stringify(headers));
      assert.deepEqual(answer.body, image.data);
    }
    const current = await get(url(image), { range: 'bytes=0-10', 'if-range': image.media.etag });
    assert.equal(current.status, 206);
    assert.deepEqual(current.body, image.data.subarray(0, 11));
  });

  it('answers 304 without a body when If-None-Match holds the ETag', async () => {
    for (const tag of [image.media.etag, `W/${image.media.etag}`, `"other", ${image.media.etag}`, '*']) {
      const answer = await rawGet(service.url, `/media/${image.media.id}`, { 'If-None-Match': tag });
      assert.equal(answer.status, 304, tag);
      assert.equal(answer.headers.etag, image.media.etag);
      assert.equal(answer.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.equal(answer.headers['content-length'], undefined);
      assert.equal(answer.rest.length, 0);
    }
    const changed = await get(url(image), { 'if-none-match': '"something-else"' });
    assert.equal(changed.status, 200);
    assert.deepEqual(changed.body, image.data);
  });

  it('answers HEAD with the headers of GET and no body, keeping the connection usable', async () => {
    const socket = rawConnect(service.url, `HEAD /media/${video.media.id} HTTP/1.1\r\nHost: test\r\n\r\n`);
    let received = Buffer.alloc(0);
    socket.on('data', (chunk) => (received = Buffer.concat([received, chunk])));
    /** Waits until the bytes received so far satisfy `done` (10 s at most). */
    const receivedUntil = async (what: string, done: (bytes: Buffer) => boolean) => {
      for (const deadline = Date.now() + 10_000; !done(received); await sleep(10))
        assert.ok(Date.now() < deadline, `${what}: ${received.toString('latin1')}`);
    };
    await receivedUntil('the HEAD answer', (bytes) => parseHead(bytes) !== undefined);
    const head = parseHead(received);
    assert.ok(head);
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], String(video.data.length));
    assert.equal(head.headers['content-type'], 'video/mp4');
    assert.equal(head.headers.etag, video.media.etag);
    assert.equal(head.headers['accept-ranges'], 'bytes');
    assert.equal(head.rest.length, 0, 'no body bytes after a HEAD answer');
    // The next request on the same connection is answered from the first byte after the HEAD headers.
    // (Any body bytes the HEAD answer wrongly sent would come before it and fail the match below.)
    socket.write('GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n');
    await receivedUntil('the GET answer', (bytes) => parseHead(parseHead(bytes)!.rest) !== undefined);
    socket.destroy();
    assert.match(parseHead(received)!.rest.toString('latin1'), /^HTTP\/1\.1 200 OK\r\n/);

    const ranged = await get(url(video), { range: 'bytes=10-19' }, 'HEAD');
    assert.equal(ranged.status, 206);
    assert.equal(ranged.headers.get('content-length'), '10');
    assert.equal(ranged.headers.get('content-range'), `bytes 10-19/${video.data.length}`);
    assert.equal(ranged.body.length, 0);
  });

  it('answers 404 for anything that is not a stored media id, whatever its encoding', async () => {
    writeFileSync(join(mediaDir, 'secret.txt'), 'not media');
    const id = video.media.id;
    const paths = [
      '/media/../etc/passwd',
      '/media/..%2F..%2F..%2Fetc%2Fpasswd',
      '/media/%2e%2e%2fsecret.txt',
      '/media/secret.txt',
      '/media/med_x.mp4',
      `/media/${id}.meta.json`,
      `/media/${id}%2F..`,
      `/media/${id}%00`,
      `/media/${newMediaId('mp4')}`,
      '/media/',
      '/media/%E0%A4%A',
    ];
    for (const path of paths) {
      const answer = await rawGet(service.url, path);
      assert.equal(answer.status, 404, path);
      assert.match(String(JSON.parse(answer.rest.toString()).error), /not found/i, path);
    }
    const typed = await get(`${service.url}/media/med_x.mp4`);
    assert.deepEqual(JSON.parse(typed.body.toString()), { error: 'Media not found' });
  });

  it('survives clients that abort mid-download without leaking file descriptors', async () => {
    const pid = service.proc.child.pid!;
    await get(url(video)); // warm: every lazily opened descriptor exists before counting
    const fdsBefore = openFds(pid);
    const request = `GET /media/${big.media.id} HTTP/1.1\r\nHost: test\r\n\r\n`;
    for (let i = 0; i < 8; i++) {
      // One goes away at once: the request arrives with the end of the connection, so the server learns of
      // the abort while the handler is still looking the file up.
      const { hostname, port } = new URL(service.url);
      connect(Number(port), hostname).end(request);
      // One after 1 MB, once the server has had to stop for it (not reading lets the socket fill up).

      const socket = rawConnect(service.url, request);
      let received = 0;
      await new Promise<void>((resolve) =>
        socket.on('data', (chunk) => {
          received += chunk.length;
          if (received > MB) {
            socket.pause();
            resolve();
          }
        }),
      );
      await sleep(200); // mid-download: the server is waiting for the client to read
      socket.destroy();
    }
    // Counted before any new request: the only connection left open is the warm-up's keep-alive one. The
    // server closes the aborted downloads' files as it learns of each abort: wait until it has (10 s at most).
    let fdsAfter = openFds(pid);
    for (const deadline = Date.now() + 10_000; fdsAfter > fdsBefore && Date.now() < deadline; await sleep(50))
      fdsAfter = openFds(pid);
    const health = await get(`${service.url}/healthz`);
    assert.equal(health.status, 200);
    const again = await get(url(video));
    assert.equal(sha256(again.body), sha256(video.data));
    assert.equal(service.proc.child.exitCode, null);
    assert.ok(fdsAfter <= fdsBefore, `open descriptors ${fdsBefore} → ${fdsAfter}`);
  });

  it('gives a slow reader the whole file while holding back what it cannot take', async () => {
    const pid = service.proc.child.pid!;
    const rssBefore = residentBytes(pid);
    const socket = rawConnect(service.url, `GET /media/${big.media.id} HTTP/1.1\r\nHost: test\r\n\r\n`);
    const chunks: Buffer[] = [];
    let received = 0;
    let expected = Number.POSITIVE_INFINITY; // header block + body, once the header block is in
    const finished = new Promise<void>((resolve, reject) => {
      socket.on('data', (chunk) => {
        chunks.push(chunk);
        received += chunk.length;
        if (expected === Number.POSITIVE_INFINITY) {
          const head = parseHead(Buffer.concat(chunks));
          if (head) expected = received - head.rest.length + Number(head.headers['content-length']);
        }
        if (received >= expected) resolve();
      });
      socket.on('error', reject);
      socket.on('close', () => resolve());
    });
    // Read a little, then stop reading for a while: the server must wait, not buffer the rest.
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.pause();
    await sleep(2500); // a wait for nothing: the server must not push the rest while the client does not read
    const heldBack = received;
    const rssPaused = residentBytes(pid);
    assert.ok(heldBack < big.data.length / 2, `received ${heldBack} bytes while not reading`);
    // Then trickle: resume for short bursts, with pauses between them.
    for (let i = 0; i < 10; i++) {
      socket.resume();
      await sleep(30);
      socket.pause();
      await sleep(70);
    }
    socket.resume();
    await finished;
    socket.destroy();
    const answer = parseHead(Buffer.concat(chunks))!;
    assert.equal(answer.status, 200);
    assert.equal(answer.rest.length, big.data.length);
    assert.equal(sha256(answer.rest), sha256(big.data));
    // Without backpressure the rest of the 48 MB would sit in the server's memory during the pause.
    assert.ok(
      rssPaused - rssBefore < 16 * MB,
      `server memory grew by ${Math.round((rssPaused - rssBefore) / MB)} MB for a paused reader`,
    );
  });
});

describe('GET /media/<id> with MEDIA_STORE=gridfs', () => {
  let service: RunningService;
  let client: MongoClient;
  let store: MediaStore;
  before(async () => {
    service = await startService({ MONGO_URL: mongo.uri, MEDIA_STORE: 'gridfs', MONGO_DB: 'media_e2e' });
    client = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
    await client.connect();
    store = await createGridFsMediaStore(client.db('media_e2e'));
  });
  after(async () => {
    await service?.stop();
    await client?.close();
  });

  it('serves files written to the same database, whole and by range', async () => {
    const video = await putFixture(store, 3 * MB + 7, 'mp4', 'video/mp4');
    const whole = await get(`${service.url}/media/${video.media.id}`);
    assert.equal(whole.status, 200);
    assert.equal(sha256(whole.body), sha256(video.data));
    assert.equal(whole.headers.get('etag'), video.media.etag);
    assert.equal(whole.headers.get('content-type'), 'video/mp4');

    const start = MB - 3;
    const end = 2 * MB + 3;
    const part = await get(`${service.url}/media/${video.media.id}`, { range: `bytes=${start}-${end}` });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), `bytes ${start}-${end}/${video.data.length}`);
    assert.ok(part.body.equals(video.data.subarray(start, end + 1)));

    await store.delete(video.media.id);
    assert.equal((await get(`${service.url}/media/${video.media.id}`)).status, 404);
  });
});
