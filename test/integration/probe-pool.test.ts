// createProbePool: export probes run in worker threads (so ffprobe's fork blocks a thread, not the service's
// event loop) and answer exactly as probeExportSource does in the main thread: the same source, the same 415
// AppError with its reason as the cause, a plain Error for a binary that cannot start.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { createProbePool, type ProbePool } from '../../src/export/probe-pool.ts';
import { probeExportSource } from '../../workers/probe/export-probe.ts';
import { UNSUPPORTED_MEDIA_MESSAGE, type MediaProbeOptions } from '../../workers/probe/probe.ts';
import { AppError } from '../../src/platform/core/errors.ts';
import { ffmpeg, ffprobe, openEndedMdat } from '../helpers/media-analysis.ts';

const run = promisify(execFile);
const options: MediaProbeOptions = { ffmpegPath: ffmpeg, ffprobePath: ffprobe };

/** The error probeExportSource rejects with in the main thread (the pool must reject with its equal). */
async function directError(path: string): Promise<unknown> {
  return probeExportSource(path, options).then(
    () => assert.fail(`${path} was accepted`),
    (error: unknown) => error,
  );
}

/** This process's OS threads (Linux): each worker thread is one, so they show whether close() ended them. */
const osThreads = (): number => readdirSync('/proc/self/task').length;

describe('createProbePool', () => {
  let dir: string;
  let pool: ProbePool;
  const file = (name: string) => join(dir, name);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mf-probe-pool-'));
    const make = (...args: string[]) =>
      run(ffmpeg, ['-hide_banner', '-nostdin', '-v', 'error', '-y', ...args]);
    await make(
      ...['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=30', '-f', 'lavfi', '-i', 'sine=duration=1'],
      ...['-t', '1', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'],
      ...['-c:a', 'aac', '-ar', '44100', '-ac', '1', '-shortest', '-movflags', '+faststart'],
      file('clip.mp4'),
    );
    // An mp4 whose extent only its packets tell: the probe runs ffmpeg after ffprobe, both in the thread.
    await writeFile(file('open-ended.mp4'), openEndedMdat(await readFile(file('clip.mp4'))));
    await writeFile(file('garbage.mp4'), Buffer.from('this is not a video file at all, just some text\n'));
    // Sniffed as an mp4 and whole by its boxes, so ffprobe itself (a child of the thread) refuses it.
    const ftyp = Buffer.concat([
      Buffer.from([0, 0, 0, 24]),
      Buffer.from('ftypisom\0\0\x02\0isomiso2', 'latin1'),
    ]);
    const mdat = Buffer.concat([Buffer.from([0, 0, 0x10, 8]), Buffer.from('mdat'), Buffer.alloc(4096, 0x5a)]);
    await writeFile(file('boxes.mp4'), Buffer.concat([ftyp, mdat]));
    pool = createProbePool({ ffmpegPath: ffmpeg, ffprobePath: ffprobe });
  });

  after(async () => {
    await pool.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers the same source as probeExportSource, for a plain and an open-ended mp4', async () => {
    for (const name of ['clip.mp4', 'open-ended.mp4']) {
      const source = await pool.probe(file(name));
      assert.deepEqual(source, await probeExportSource(file(name), options));
      assert.equal(source.kind, 'video');
      assert.deepEqual(source.audio, { codec: 'aac', sampleRate: 44100, channels: 1 });
    }
  });

  for (const name of ['garbage.mp4', 'boxes.mp4']) {
    it(`rejects ${name} with the 415 AppError of the main thread, reason kept as the cause`, async () => {
      const expected = await directError(file(name));
      assert.ok(expected instanceof AppError);
      await assert.rejects(pool.probe(file(name)), (error: unknown) => {
        assert.ok(error instanceof AppError, String(error));
        assert.equal(error.status, 415);
        assert.equal(error.code, 'unsupported_media');
        assert.equal(error.message, 'unsupported_media');
        assert.equal(typeof error.cause, 'string');
        // ffprobe's messages name its contexts by address, which differ from run to run.
        const unaddressed = (cause: unknown) => String(cause).replace(/0x[0-9a-f]+/g, '0x…');
        assert.equal(unaddressed(error.cause), unaddressed(expected.cause));
        assert.deepEqual(error.toBody(), { error: 'unsupported_media', message: UNSUPPORTED_MEDIA_MESSAGE });
        return true;
      });
    });
  }

  it('rejects with a plain Error (a server fault, not a 415) when ffprobe cannot start', async () => {
    const broken = createProbePool({ ffmpegPath: ffmpeg, ffprobePath: join(dir, 'no-such-ffprobe') });
    try {
      const expected = await probeExportSource(file('clip.mp4'), {
        ...options,
        ffprobePath: join(dir, 'no-such-ffprobe'),
      }).catch((error: unknown) => error);
      await assert.rejects(broken.probe(file('clip.mp4')), (error: unknown) => {
        assert.ok(error instanceof Error && !(error instanceof AppError), String(error));
        assert.equal(error.message, (expected as Error).message);
        assert.match(error.message, /could not be started/);
        return true;
      });
    } finally {
      await broken.close();
    }
  });

  it('completes 8 probes at once', async () => {
    const names = ['clip.mp4', 'open-ended.mp4', 'garbage.mp4', 'boxes.mp4'];
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => pool.probe(file(names[i % names.length]!))),
    );
    const expected = await probeExportSource(file('clip.mp4'), options);
    results.forEach((result, i) => {
      const name = names[i % names.length]!;
      if (name === 'clip.mp4') assert.deepEqual(result, { status: 'fulfilled', value: expected });
      else if (name === 'open-ended.mp4') assert.equal(result.status, 'fulfilled');
      else assert.ok(result.status === 'rejected' && result.reason instanceof AppError, name);
    });
  });

  it(
    'close() ends its threads and refuses later probes',
    { skip: !existsSync('/proc/self/task') && 'needs /proc' },
    async () => {
      const before = osThreads();
      const local = createProbePool({
        ffmpegPath: ffmpeg,
        ffprobePath: ffprobe,
        threads: 2,
        concurrentPerThread: 2,
      });
      await Promise.all([local.probe(file('clip.mp4')), local.probe(file('clip.mp4'))]);
      assert.ok(osThreads() >= before + 2, `threads ${before} → ${osThreads()}`);
      await local.close();
      // A terminated thread is joined as its 'exit' is emitted, which close() awaits; allow a little slack.
      for (let i = 0; i < 20 && osThreads() > before; i++) await sleep(50);
      assert.equal(osThreads(), before);
      await assert.rejects(local.probe(file('clip.mp4')), /probe pool closed/);
      await local.close();
    },
  );
});
