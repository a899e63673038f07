import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { AppError } from '../../src/platform/core/errors.ts';
import { newMediaId } from '../../src/platform/storage/media-id.ts';
import type { MediaStore } from '../../src/platform/storage/media-store.ts';
import { createFsMediaStore } from '../../src/platform/storage/fs-store.ts';
import { createGridFsMediaStore } from '../../src/platform/storage/gridfs-store.ts';
import { useMongoClient } from '../helpers/mongo.ts';

/** A store under test and a snapshot of everything it keeps underneath (to prove nothing was left). */
interface Subject {
  store: MediaStore;
  inventory(): Promise<unknown>;
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A stream of `total` pseudo-random bytes in chunks of `chunk` bytes, with the SHA-256 of all of them. */
function generated(total: number, chunk = 64 * 1024): { stream: Readable; sha256: string } {
  const hash = createHash('sha256');
  const parts: Buffer[] = [];
  for (let sent = 0; sent < total; sent += chunk) {
    const part = randomBytes(Math.min(chunk, total - sent));
    hash.update(part);
    parts.push(part);
  }
  return { stream: Readable.from(parts), sha256: hash.digest('hex') };
}

/** A stream that yields some bytes, then fails. */
function failingStream(): Readable {
  return Readable.from(
    (async function* () {
      yield randomBytes(300 * 1024);
      yield randomBytes(900 * 1024);
      throw new Error('upstream broke');
    })(),
  );
}

const quotedSha256 = (data: Buffer) => `"${createHash('sha256').update(data).digest('base64url')}"`;

function assertAppError(code: string) {
  return (error: unknown) => {
    assert.ok(error instanceof AppError, `expected an AppError, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  };
}

/** The one contract every MediaStore adapter passes. */
function mediaStoreContract(setup: () => Promise<Subject>) {
  let subject: Subject;
  let store: MediaStore;
  before(async () => {
    subject = await setup();
    store = subject.store;
  });

  it('stores a Buffer and describes it the same way in put and stat', async () => {
    const id = newMediaId('png');
    const data = randomBytes(5000);
    const before = Date.now();
    const stored = await store.put(id, data, 'image/png');
    assert.equal(stored.id, id);
    assert.equal(stored.size, 5000);
    assert.equal(stored.contentType, 'image/png');
    assert.equal(stored.etag, quotedSha256(data));
    assert.ok(stored.createdAt.getTime() >= before - 1000 && stored.createdAt.getTime() <= Date.now() + 1000);
    assert.deepEqual(await store.stat(id), stored);
    assert.deepEqual(await readAll(await store.open(id)), data);
  });

  it('stores a Readable of many chunks byte for byte', async () => {
    const id = newMediaId('mp4');
    const chunks = [randomBytes(1), randomBytes(70_000), randomBytes(1_200_000), randomBytes(3)];
    const stored = await store.put(id, Readable.from(chunks), 'video/mp4');
    const whole = Buffer.concat(chunks);
    assert.equal(stored.size, whole.length);
    assert.deepEqual(await readAll(await store.open(id)), whole);
  });

  it('reads inclusive byte ranges exactly, including across internal chunk boundaries', async () => {
    const id = newMediaId('mp4');
    const data = randomBytes(3 * 1024 * 1024 + 17);
    await store.put(id, data, 'video/mp4');
    const ranges = [
      { start: 0, end: 0 },
      { start: 0, end: 99 },
      { start: 1024 * 1024 - 5, end: 1024 * 1024 + 5 },
      { start: 255 * 1024 - 1, end: 2 * 1024 * 1024 + 1 },
      { start: data.length - 1, end: data.length - 1 },
      { start: 12_345, end: data.length - 1 },
      { start: 0, end: data.length - 1 },
    ];
    for (const range of ranges) {
      const got = await readAll(await store.open(id, range));
      assert.deepEqual(got, data.subarray(range.start, range.end + 1), `range ${range.start}-${range.end}`);
    }
  });

  it('refuses a range outside the file', async () => {
    const id = newMediaId('bin');
    await store.put(id, randomBytes(100), 'application/octet-stream');
    for (const range of [
      { start: 100, end: 100 },
      { start: 10, end: 100 },
      { start: 50, end: 49 },
      { start: -1, end: 5 },
    ]) {
      await assert.rejects(store.open(id, range), assertAppError('bad_request'));
    }
  });

  it('streams a 20 MB file in and out without changing a byte', async () => {
    const id = newMediaId('mp4');
    const { stream, sha256 } = generated(20 * 1024 * 1024);
    const stored = await store.put(id, stream, 'video/mp4');
    assert.equal(stored.size, 20 * 1024 * 1024);
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of await store.open(id)) {
      hash.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
    assert.equal(size, 20 * 1024 * 1024);
    assert.equal(hash.digest('hex'), sha256);
  });

  it('derives the ETag from the content alone', async () => {
    const data = randomBytes(2048);
    const a = await store.put(newMediaId('png'), data, 'image/png');
    const b = await store.put(
      newMediaId('jpg'),
      Readable.from([data.subarray(0, 7), data.subarray(7)]),
      'image/jpeg',
    );
    const c = await store.put(newMediaId('png'), Buffer.concat([data, Buffer.from([0])]), 'image/png');
    assert.equal(a.etag, b.etag);
    assert.notEqual(a.etag, c.etag);
    assert.match(a.etag, /^"[A-Za-z0-9_-]{43}"$/);
    assert.equal((await store.stat(a.id))!.etag, a.etag);
  });

  it('keeps an empty file', async () => {
    const id = newMediaId('txt');
    const stored = await store.put(id, Buffer.alloc(0), 'text/plain');
    assert.equal(stored.size, 0);
    assert.equal((await store.stat(id))!.size, 0);
    assert.deepEqual(await readAll(await store.open(id)), Buffer.alloc(0));
  });

  it('accepts exactly maxBytes and rejects one byte more, keeping nothing of the rejected write', async () => {
    const exact = newMediaId('bin');
    await store.put(exact, randomBytes(1000), 'application/octet-stream', { maxBytes: 1000 });
    assert.equal((await store.stat(exact))!.size, 1000);

    const snapshot = await subject.inventory();
    const fromBuffer = newMediaId('bin');
    await assert.rejects(
      store.put(fromBuffer, randomBytes(1001), 'application/octet-stream', { maxBytes: 1000 }),
      assertAppError('payload_too_large'),
    );
    const fromStream = newMediaId('mp4');
    const { stream } = generated(3 * 1024 * 1024);
    await assert.rejects(
      store.put(fromStream, stream, 'video/mp4', { maxBytes: 2 * 1024 * 1024 + 1 }),
      assertAppError('payload_too_large'),
    );
    assert.equal(await store.stat(fromBuffer), null);
    assert.equal(await store.stat(fromStream), null);
    assert.deepEqual(await subject.inventory(), snapshot);
  });

  it('keeps nothing when the source stream fails midway', async () => {
    const snapshot = await subject.inventory();
    const id = newMediaId('mp4');
    await assert.rejects(store.put(id, failingStream(), 'video/mp4'), /upstream broke/);
    assert.equal(await store.stat(id), null);
    assert.deepEqual(await subject.inventory(), snapshot);
  });

  it('refuses to overwrite an existing id and keeps the original', async () => {
    const id = newMediaId('png');
    const original = randomBytes(100);
    await store.put(id, original, 'image/png');
    const snapshot = await subject.inventory();
    await assert.rejects(store.put(id, randomBytes(100), 'image/png'), assertAppError('conflict'));
    assert.deepEqual(await readAll(await store.open(id)), original);
    assert.deepEqual(await subject.inventory(), snapshot);
  });

  it('deletes a file completely, and deleting again or deleting an unknown id is not an error', async () => {
    const snapshot = await subject.inventory();
    const id = newMediaId('mp4');
    await store.put(id, randomBytes(2 * 1024 * 1024 + 3), 'video/mp4');
    assert.notDeepEqual(await subject.inventory(), snapshot);
    await store.delete(id);
    assert.equal(await store.stat(id), null);
    await assert.rejects(store.open(id), assertAppError('not_found'));
    await store.delete(id);
    await store.delete(newMediaId('mp4'));
    assert.deepEqual(await subject.inventory(), snapshot);
  });

  it('answers null from stat and not_found from open for ids it does not have', async () => {
    for (const id of [
      newMediaId('mp4'),
      'med_x.mp4',
      '../etc/passwd',
      'med_AAAAAAAAAAAAAAAAAAAAAAAA.mp4/..',
      '',
    ]) {
      assert.equal(await store.stat(id), null, JSON.stringify(id));
      await assert.rejects(store.open(id), assertAppError('not_found'));
      await store.delete(id);
    }
  });

  it('refuses to write under an id newMediaId could not have made', async () => {
    const snapshot = await subject.inventory();
    for (const id of ['../escape.mp4', 'med_x.mp4', 'med_AAAAAAAAAAAAAAAAAAAAAAAA.mp4.meta.json']) {
      await assert.rejects(store.put(id, randomBytes(10), 'video/mp4'), assertAppError('bad_request'));
    }
    assert.deepEqual(await subject.inventory(), snapshot);
  });
}

describe('fs media store', () => {
  let dir: string;
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  mediaStoreContract(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mf-media-store-'));
    const store = await createFsMediaStore({ dir: join(dir, 'nested', 'media') });
    return { store, inventory: async () => (await readdir(join(dir, 'nested', 'media'))).sort() };
  });

  it('creates its folder and writes every file inside it', async () => {
    const root = await mkdtemp(join(tmpdir(), 'mf-media-store-'));
    try {
      const store = await createFsMediaStore({ dir: join(root, 'a', 'b') });
      const id = newMediaId('mp4');
      await store.put(id, randomBytes(10), 'video/mp4');
      assert.deepEqual((await readdir(root, { recursive: true })).sort(), [
        'a',
        join('a', 'b'),
        join('a', 'b', id),
        join('a', 'b', `${id}.meta.json`),
      ]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('fs media store: local paths', () => {
  it('lends the path of a stored file, and null for one it does not have', async () => {
    const root = await mkdtemp(join(tmpdir(), 'mf-media-store-'));
    try {
      const store = await createFsMediaStore({ dir: root });
      const id = newMediaId('wav');
      const bytes = randomBytes(1000);
      await store.put(id, bytes, 'audio/wav');
      const path = await store.localPath!(id);
      assert.equal(path, join(root, id));
      assert.ok((await readFile(path!)).equals(bytes));
      assert.equal(await store.localPath!(newMediaId('wav')), null);
      assert.equal(await store.localPath!('../etc/passwd'), null, 'only media ids reach the disk');
      await store.delete(id);
      assert.equal(await store.localPath!(id), null);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('GridFS media store (jongodb)', () => {
  const mongo = useMongoClient();
  mediaStoreContract(async () => {
    const db = mongo.client.db('media_store_test');
    const store = await createGridFsMediaStore(db);
    return {
      store,
      inventory: async () => ({
        files: (await db.collection('media.files').find({}).toArray()).map((f) => String(f.filename)).sort(),
        chunks: await db.collection('media.chunks').countDocuments({}),
      }),
    };
  });

  it('keeps media in the media bucket, one files document per id', async () => {
    const db = mongo.client.db('media_store_layout');
    const store = await createGridFsMediaStore(db);
    const id = newMediaId('mp4');
    await store.put(id, randomBytes(2.5 * 1024 * 1024), 'video/mp4');
    const files = await db.collection('media.files').find({}).toArray();
    assert.deepEqual(
      files.map((f) => f.filename),
      [id],
    );
    assert.equal(await db.collection('media.chunks').countDocuments({ files_id: files[0]!._id }), 3);
  });
});
