import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createFsMediaStore } from '../../src/platform/storage/fs-store.ts';
import type { MediaStore } from '../../src/platform/storage/media-store.ts';
import { createSegmentCache, type SegmentCache } from '../../src/export/segment-cache.ts';
import { createMongoSegmentIndex } from '../../src/export/mongo-segment-index.ts';
import { useMongoClient } from '../helpers/mongo.ts';

// The export's segment cache on a real MongoDB-wire server and the fs media store: entries per user and
// project, the least recently used evicted past SEGMENT_CACHE_MAX_BYTES (files and entries), a file gone is
// a miss, and a project's segments go with it.

describe('segment cache (MongoDB index, fs store)', () => {
  const mongo = useMongoClient();
  let dir: string;
  let store: MediaStore;
  let files: string;
  let clock = 1_000;
  let database = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mf-segment-cache-'));
    store = await createFsMediaStore({ dir: join(dir, 'media') });
    files = join(dir, 'segments');
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A cache on a database of its own, bounded at `maxBytes`. */
  async function cache(maxBytes: number): Promise<SegmentCache> {
    const index = createMongoSegmentIndex(mongo.client.db(`segment_cache_${++database}`));
    await index.ensureIndexes();
    return createSegmentCache({
      index,
      store,
      maxBytes,
      clock: { now: () => clock },
      logger: pino({ level: 'silent' }),
    });
  }

  /** A local "encoded segment" of `bytes` bytes. */
  async function segment(name: string, bytes: number): Promise<string> {
    const path = `${files}-${name}`;
    await writeFile(path, Buffer.alloc(bytes, name.charCodeAt(0)));
    return path;
  }

  const stored = async () => (await readdir(join(dir, 'media'))).filter((name) => name.endsWith('.mp4'));

  it('answers a kept segment to its own user and project only', async () => {
    const segments = await cache(10_000);
    await segments.keep('usr_a', 'vp_1', [{ key: 'k1', path: await segment('a', 100), bytes: 100 }]);
    const kept = (await segments.lookup('usr_a', 'vp_1', 'k1'))!;
    assert.match(kept, /^med_\w+\.mp4$/);
    assert.equal(await segments.lookup('usr_b', 'vp_1', 'k1'), null, 'never another user');
    assert.equal(await segments.lookup('usr_a', 'vp_2', 'k1'), null, 'never another project');
    assert.equal(await segments.lookup('usr_a', 'vp_1', 'k2'), null);
    const media = await store.stat(kept);
    assert.equal(media?.size, 100);
  });

  it('keeps one file when two exports keep the same key', async () => {
    const segments = await cache(10_000);
    const before = (await stored()).length;
    const path = await segment('b', 50);
    await Promise.all([
      segments.keep('usr_a', 'vp_1', [{ key: 'same', path, bytes: 50 }]),
      segments.keep('usr_a', 'vp_1', [{ key: 'same', path, bytes: 50 }]),
    ]);
    assert.notEqual(await segments.lookup('usr_a', 'vp_1', 'same'), null);
    assert.equal((await stored()).length, before + 1, 'the second copy deleted');
  });

  it('evicts the least recently used past its bound, files and entries', async () => {
    const segments = await cache(300);
    const ids: string[] = [];
    for (const key of ['k1', 'k2', 'k3']) {
      clock += 1000;
      await segments.keep('usr_a', 'vp_1', [{ key, path: await segment(key, 100), bytes: 100 }]);
      ids.push((await segments.lookup('usr_a', 'vp_1', key))!);
    }
    clock += 1000;
    assert.equal(await segments.lookup('usr_a', 'vp_1', 'k1'), ids[0], 'k1 used: now the newest');
    clock += 1000;
    await segments.keep('usr_a', 'vp_1', [{ key: 'k4', path: await segment('k4', 100), bytes: 100 }]);
    assert.equal(await segments.lookup('usr_a', 'vp_1', 'k2'), null, 'the least recently used went');
    assert.equal(await store.stat(ids[1]!), null, 'with its file');
    for (const key of ['k1', 'k3', 'k4'])
      assert.notEqual(await segments.lookup('usr_a', 'vp_1', key), null, key);
    clock += 1000;
    await segments.keep('usr_b', 'vp_9', [{ key: 'big', path: await segment('big', 250), bytes: 250 }]);
    for (const key of ['k1', 'k3', 'k4'])
      assert.equal(await segments.lookup('usr_a', 'vp_1', key), null, key);
    assert.notEqual(await segments.lookup('usr_b', 'vp_9', 'big'), null);
  });

  it("keeps an export's segments together, then brings the cache within its bound once", async () => {
    const segments = await cache(250);
    clock += 1000;
    const batch = [];
    for (const key of ['b1', 'b2', 'b3']) batch.push({ key, path: await segment(key, 100), bytes: 100 });
    await segments.keep('usr_a', 'vp_1', batch);
    const left = [];
    for (const key of ['b1', 'b2', 'b3']) if (await segments.lookup('usr_a', 'vp_1', key)) left.push(key);
    assert.equal(left.length, 2, `within 250 bytes: ${left.join(', ')}`);
  });

  it('misses, and forgets the entry, when the file is gone', async () => {
    const segments = await cache(10_000);
    await segments.keep('usr_a', 'vp_1', [{ key: 'gone', path: await segment('g', 10), bytes: 10 }]);
    const kept = (await segments.lookup('usr_a', 'vp_1', 'gone'))!;
    await store.delete(kept);
    assert.equal(await segments.lookup('usr_a', 'vp_1', 'gone'), null);
    await segments.keep('usr_a', 'vp_1', [{ key: 'gone', path: await segment('g', 10), bytes: 10 }]);
    const again = await segments.lookup('usr_a', 'vp_1', 'gone');
    assert.ok(again && again !== kept, 'kept anew');
  });

  it('keeps nothing when its bound is 0', async () => {
    const segments = await cache(0);
    const before = (await stored()).length;
    await segments.keep('usr_a', 'vp_1', [{ key: 'k1', path: await segment('z', 10), bytes: 10 }]);
    assert.equal(await segments.lookup('usr_a', 'vp_1', 'k1'), null);
    assert.equal((await stored()).length, before);
  });

  it("removes a project's segments with it, and no other", async () => {
    const segments = await cache(10_000);
    const mine: string[] = [];
    for (const key of ['k1', 'k2']) {
      await segments.keep('usr_a', 'vp_del', [{ key, path: await segment(`d${key}`, 10), bytes: 10 }]);
      mine.push((await segments.lookup('usr_a', 'vp_del', key))!);
    }
    await segments.keep('usr_a', 'vp_keep', [{ key: 'k1', path: await segment('o1', 10), bytes: 10 }]);
    const other = await segments.lookup('usr_a', 'vp_keep', 'k1');
    await segments.forgetProject('vp_del');
    for (const mediaId of mine) assert.equal(await store.stat(mediaId), null, `${mediaId} deleted`);
    assert.equal(await segments.lookup('usr_a', 'vp_del', 'k1'), null);
    assert.equal(await segments.lookup('usr_a', 'vp_keep', 'k1'), other);
    await segments.forgetProject('vp_del'); // again: nothing left, nothing fails
  });
});
