// The sandbox provider stops working on a request that is cancelled, as a real provider does: its render
// leaves the queue (or its ffmpeg is killed), the next request gets the slot, and nothing is stored for it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { MongoClient } from 'mongodb';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { createSandboxProvider } from '../../src/jobs/providers/sandbox/provider.ts';
import { createSandboxRenderer } from '../../src/jobs/providers/sandbox/render.ts';
import { createFsMediaStore } from '../../src/platform/storage/fs-store.ts';
import { DEFAULT_PROVIDER_ENDPOINTS } from '../../schemas/models-catalog.ts';
import { systemClock } from '../../src/platform/core/clock.ts';
import type { Generation, ProviderHandle } from '../../src/jobs/ports/media-provider.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';

const video = (prompt: string): Generation => ({
  capability: 'text-to-video',
  prompt,
  duration_seconds: 15,
  aspect_ratio: '16:9',
  resolution: '720p',
  generate_audio: true,
  seed: 1,
});

describe('sandbox provider cancel', () => {
  let mongo: TestMongo;
  let dir: string;
  before(async () => {
    mongo = await startMongo();
    dir = await mkdtemp(join(tmpdir(), 'mf-sandbox-provider-'));
  });
  after(async () => {
    await mongo?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('stops the render of a cancelled request and gives its slot to the next one', async () => {
    const { ffmpeg } = resolveFfmpeg();
    const renderer = createSandboxRenderer({ ffmpegPath: ffmpeg, concurrency: 1, tmpDir: join(dir, 'tmp') });
    const store = await createFsMediaStore({ dir: join(dir, 'media') });
    const client = await MongoClient.connect(mongo.uri);
    const provider = await createSandboxProvider({
      db: client.db('sandbox_cancel'),
      store,
      renderer,
      endpoints: DEFAULT_PROVIDER_ENDPOINTS,
      clock: systemClock,
      logger: pino({ level: 'silent' }),
      videoMs: 0,
      imageMs: 0,
    });
    const first = await provider.submit(video('first, cancelled'));
    const second = await provider.submit(video('second, wanted'));
    while (renderer.running === 0) await sleep(5);
    assert.equal(renderer.queued, 1, 'the second request waits for the only slot');
    assert.equal(await provider.cancel(first), true);
    assert.deepEqual(await provider.status(first), { state: 'failed', error: 'The request was cancelled' });

    const until = async (handle: ProviderHandle) => {
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(50)) {
        const status = await provider.status(handle);
        if (status.state !== 'running') return status;
      }
      throw new Error('the request did not finish');
    };
    assert.deepEqual(await until(second), { state: 'completed' });
    const stored = (await readdir(join(dir, 'media'))).filter((name) => !name.endsWith('.meta.json'));
    assert.equal(stored.length, 1, `only the wanted request's video is stored: ${stored.join(', ')}`);
    await provider.close();
    await client.close();
  });
});
