// The export runner and pool against a real ffmpeg: success with progress, and every way a child is stopped
// (abort, time-out, a closed pool) leaving no ffmpeg process behind.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { createExportPool, exportWorkerUrl } from '../../src/export/pool.ts';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { outputSize } from '../../workers/export/output-size.ts';
import { runFfmpeg } from '../../workers/ffmpeg/runner.ts';
import { spawnsUnderGroupSignals } from '../helpers/spawns-under-group-signals.ts';
import { type ExportPlan, type ExportSource } from '../../workers/export/work-order.ts';

const { ffmpeg } = resolveFfmpeg({
  ffmpegPath: process.env.FFMPEG_PATH,
  ffprobePath: process.env.FFPROBE_PATH,
});
const logger = pino({ level: 'silent' });
const ABORT_BUDGET_MS = 2_000;

/** Whether a process with this pid exists (a zombie would count: the runner must have reaped it). */
function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    assert.equal((error as NodeJS.ErrnoException).code, 'ESRCH');
    return false;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The command name of a live pid, '' once it is gone. */
function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** Waits until `nice` has exec'd ffmpeg in place (same pid, ffmpeg's name), or the pid is gone. */
async function ffmpegExeced(pid: number, limitMs = 10_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!['ffmpeg', ''].includes(commandOf(pid))) {
    assert.ok(Date.now() < deadline, `pid ${pid} is still ${commandOf(pid)} after ${limitMs} ms`);
    await sleep(10);
  }
}

/** Resolves with the first pid `onSpawn`/`onPid` reports. */
function pidWatch() {
  let resolvePid!: (pid: number) => void;
  const first = new Promise<number>((resolve) => (resolvePid = resolve));
  return { first, seen: resolvePid };
}

/** ffmpeg arguments for a lavfi picture rendered with progress on stdout. */
function lavfiArgs(source: string, encode: string[], output: string): string[] {
  return ['-hide_banner', '-nostdin', '-y', '-nostats', '-progress', 'pipe:1', '-f', 'lavfi', '-i', source]
    .concat(encode)
    .concat(output === '-' ? ['-f', 'null', '-'] : ['-f', 'mp4', `file:${output}`]);
}

/** Minutes of work: a 720p test pattern at the slowest x264 preset, thrown away. */
const LONG = lavfiArgs('testsrc2=s=1280x720:r=30:d=600', ['-c:v', 'libx264', '-preset', 'veryslow'], '-');

let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mf-export-runner-'));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('runFfmpeg', () => {
  it('renders a short lavfi clip with monotone progress ending at 1 and reports the pid', async () => {
    const fractions: number[] = [];
    let spawnedPid: number | undefined;
    const output = join(dir, 'short.mp4');
    const result = await runFfmpeg({
      ffmpegPath: ffmpeg,
      args: lavfiArgs('testsrc=s=320x240:r=25:d=2', ['-c:v', 'libx264', '-pix_fmt', 'yuv420p'], output),
      totalSec: 2,
      timeoutMs: 60_000,
      onProgress: (fraction) => fractions.push(fraction),
      onSpawn: (pid) => (spawnedPid = pid),
    });
    assert.deepEqual(result, { ok: true });
    assert.ok(existsSync(output));
    assert.ok(spawnedPid !== undefined && spawnedPid > 0);
    assert.ok(!exists(spawnedPid));
    assert.ok(fractions.length > 0);
    for (let i = 1; i < fractions.length; i++)
      assert.ok(fractions[i]! > fractions[i - 1]!, 'strictly rising');
    assert.ok(fractions.every((f) => f > 0 && f <= 1));
    assert.equal(fractions.at(-1), 1);
  });

  it('kills a long render on abort within 2 s; the pid is ffmpeg itself, niced', async () => {
    const controller = new AbortController();
    const watch = pidWatch();
    const running = runFfmpeg({
      ffmpegPath: ffmpeg,
      args: LONG,
      totalSec: 600,
      timeoutMs: 600_000,
      signal: controller.signal,
      onSpawn: watch.seen,
    });
    const pid = await watch.first;
    await ffmpegExeced(pid);
    if (existsSync(`/proc/${pid}/stat`)) {
      // `nice` has exec'd ffmpeg in place: same pid, ffmpeg's name, 10 above our own niceness.
      assert.equal(readFileSync(`/proc/${pid}/comm`, 'utf8').trim(), 'ffmpeg');
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const nice = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
      assert.equal(nice, Math.min(19, getPriority() + 10));
    }
    const started = Date.now();
    controller.abort();
    const result = await running;
    assert.ok(Date.now() - started < ABORT_BUDGET_MS, `resolved in ${Date.now() - started} ms`);
    assert.equal(result.ok, false);
    assert.equal(!result.ok && result.reason, 'aborted');
    assert.equal(!result.ok && result.signal, 'SIGKILL');
    assert.ok(!exists(pid));
  });

  it('kills a render that outlives its time-out', async () => {
    const watch = pidWatch();
    const started = Date.now();
    const result = await runFfmpeg({
      ffmpegPath: ffmpeg,
      args: LONG,
      totalSec: 600,
      timeoutMs: 1_000,
      onSpawn: watch.seen,
    });
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 1_000 && elapsed < 1_000 + ABORT_BUDGET_MS, `resolved in ${elapsed} ms`);
    assert.equal(!result.ok && result.reason, 'timeout');
    assert.ok(!exists(await watch.first));
  });

  it('reports a bad argument as a non-zero exit with the stderr tail', async () => {
    const result = await runFfmpeg({
      ffmpegPath: ffmpeg,
      args: lavfiArgs('testsrc=d=1', ['-c:v', 'no_such_encoder'], '-'),
      totalSec: 1,
      timeoutMs: 30_000,
    });
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.equal(result.reason, 'exit');
    assert.ok(result.code !== null && result.code !== 0);
    assert.match(result.stderrTail, /no_such_encoder/);
  });

  it('reports a missing binary as a spawn failure', async () => {
    const result = await runFfmpeg({
      ffmpegPath: join(dir, 'no-ffmpeg-here'),
      args: ['-version'],
      totalSec: 1,
      timeoutMs: 30_000,
    });
    assert.equal(!result.ok && result.reason, 'spawn');
  });

  it('spawns nothing when the signal is already aborted', async () => {
    let spawned = false;
    const result = await runFfmpeg({
      ffmpegPath: ffmpeg,
      args: LONG,
      totalSec: 600,
      timeoutMs: 30_000,
      signal: AbortSignal.abort(),
      onSpawn: () => (spawned = true),
    });
    assert.equal(!result.ok && result.reason, 'aborted');
    assert.equal(spawned, false);
  });
});

describe('runFfmpeg under stop signals to its process group', () => {
  it('starts again every ffmpeg that a signal killed before it ran, so no run fails', async () => {
    const report = await spawnsUnderGroupSignals('ffmpeg', 100);
    assert.ok(report.killedUnborn > 0, 'the same signals killed plain tied spawns beside the runs unborn');
    assert.equal(report.runs, 100);
    assert.deepEqual(report.failed, []);
  });
});

describe('createExportPool', () => {
  it('finds the worker beside the pool both as TypeScript source and compiled into dist/', () => {
    assert.equal(
      exportWorkerUrl('file:///app/src/export/pool.ts').href,
      'file:///app/workers/export/worker.ts',
    );
    assert.equal(
      exportWorkerUrl('file:///app/dist/src/export/pool.js').href,
      'file:///app/dist/workers/export/worker.js',
    );
    assert.ok(existsSync(exportWorkerUrl()));
  });

  let image: ExportSource;

  before(async () => {
    const path = join(dir, 'still.png');
    await promisify(execFile)(ffmpeg, [
      ...['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=s=640x360', '-frames:v', '1', path],
    ]);
    image = { path, demuxer: 'png_pipe', kind: 'image', durationSec: null };
  });

  /** A plan of one still shown for `seconds`, in 16:9 at 720p. */
  function plan(seconds: number, name: string): ExportPlan {
    return {
      picture: [{ source: image, trimStartSec: 0, durationSec: seconds, volume: 1 }],
      sounds: [],
      output: { ...outputSize('16:9'), fps: 30, fit: 'fit', path: join(dir, name) },
      filters: { loudnorm: false, sidechaincompress: false },
    };
  }

  it('renders two plans in parallel, each with its progress and pid', async () => {
    const pool = createExportPool({ concurrency: 2, ffmpegPath: ffmpeg, niceness: 10, logger });
    try {
      const alive = new Set<number>();
      const events: Array<[number, boolean]> = [];
      let mostAlive = 0;
      const onPid = (pid: number, isAlive: boolean) => {
        events.push([pid, isAlive]);
        if (isAlive) alive.add(pid);
        else alive.delete(pid);
        mostAlive = Math.max(mostAlive, alive.size);
      };
      const progress: number[][] = [[], []];
      const results = await Promise.all(
        [0, 1].map((i) =>
          pool.run(plan(20, `parallel-${i}.mp4`), {
            timeoutMs: 120_000,
            onProgress: (fraction) => progress[i]!.push(fraction),
            onPid,
          }),
        ),
      );
      assert.deepEqual(results, [{ ok: true }, { ok: true }]);
      assert.equal(mostAlive, 2, 'both children ran at once');
      assert.equal(alive.size, 0, 'every pid reported gone');
      assert.equal(events.length, 4);
      for (const [pid] of events) assert.ok(!exists(pid));
      for (const fractions of progress) {
        for (let i = 1; i < fractions.length; i++) assert.ok(fractions[i]! > fractions[i - 1]!);
        assert.equal(fractions.at(-1), 1);
      }
      for (const i of [0, 1]) assert.ok(existsSync(join(dir, `parallel-${i}.mp4`)));
    } finally {
      await pool.close();
    }
  });

  it('kills the child within 2 s when a run is aborted', async () => {
    const pool = createExportPool({ concurrency: 2, ffmpegPath: ffmpeg, niceness: 10, logger });
    try {
      const controller = new AbortController();
      const watch = pidWatch();
      const gone: number[] = [];
      const running = pool.run(plan(600, 'aborted.mp4'), {
        timeoutMs: 600_000,
        signal: controller.signal,
        onPid: (pid, alive) => (alive ? watch.seen(pid) : gone.push(pid)),
      });
      const pid = await watch.first;
      await ffmpegExeced(pid); // the abort kills a running ffmpeg, not `nice` about to exec it
      assert.ok(exists(pid));
      const started = Date.now();
      controller.abort();
      const result = await running;
      assert.ok(Date.now() - started < ABORT_BUDGET_MS, `resolved in ${Date.now() - started} ms`);
      assert.equal(!result.ok && result.reason, 'aborted');
      assert.deepEqual(gone, [pid]);
      assert.ok(!exists(pid));
    } finally {
      await pool.close();
    }
  });

  it('spawns nothing for a run aborted before it starts', async () => {
    const pool = createExportPool({ concurrency: 1, ffmpegPath: ffmpeg, niceness: 10, logger });
    try {
      const pids: number[] = [];
      const result = await pool.run(plan(600, 'never.mp4'), {
        timeoutMs: 600_000,
        signal: AbortSignal.abort(),
        onPid: (pid) => pids.push(pid),
      });
      assert.equal(!result.ok && result.reason, 'aborted');
      assert.deepEqual(pids, []);
    } finally {
      await pool.close();
    }
  });

  it('kills a running child when the pool is closed', async () => {
    const pool = createExportPool({ concurrency: 2, ffmpegPath: ffmpeg, niceness: 10, logger });
    const watch = pidWatch();
    const running = pool.run(plan(600, 'closed.mp4'), { timeoutMs: 600_000, onPid: watch.seen });
    const pid = await watch.first;
    await ffmpegExeced(pid); // closing kills a running ffmpeg, not `nice` about to exec it
    const started = Date.now();
    await pool.close();
    const result = await running;
    assert.ok(Date.now() - started < ABORT_BUDGET_MS, `closed in ${Date.now() - started} ms`);
    assert.equal(!result.ok && result.reason, 'aborted');
    assert.ok(!exists(pid));
    await assert.rejects(pool.run(plan(1, 'late.mp4'), { timeoutMs: 1_000 }), /closed/);
  });
});
