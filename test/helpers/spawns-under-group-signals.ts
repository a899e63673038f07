// A process that spawns tied children while its own process group is sent SIGTERM every few milliseconds, as a
// service's group is by `kill -- -<pgid>` or Ctrl-C while it starts exports. Run it as the leader of a group of
// its own (`spawnsUnderGroupSignals`); it prints what happened as one JSON line. The signals come from a child
// in the group, as they would from outside: a spawn cannot overlap a signal its own thread sends.
//   tied   — plain tied spawns of /bin/true: how many a signal killed, and how many `diedUnborn` named unborn.
//   ffmpeg — `runFfmpeg` runs, each beside a plain tied spawn that shows the signals did kill children unborn.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { diedUnborn, tiedToThisThread } from '../../src/platform/core/tied-child.ts';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { runFfmpeg } from '../../workers/ffmpeg/runner.ts';

export type SpawnMode = 'tied' | 'ffmpeg';
export interface SpawnReport {
  spawns: number;
  /** Plain tied spawns that died of SIGTERM. */
  killed: number;
  /** Plain tied spawns `diedUnborn` named unborn, and those of them that died of SIGTERM. */
  unborn: number;
  killedUnborn: number;
  /** `runFfmpeg` runs and the failed ones (mode ffmpeg). */
  runs: number;
  failed: string[];
}

const SIGNAL_EVERY_MS = 5;

/** Runs this script for `count` rounds in a process group of its own and resolves with its report. */
export function spawnsUnderGroupSignals(mode: SpawnMode, count: number): Promise<SpawnReport> {
  const script = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, ['--import', 'tsx', script, mode, String(count)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(JSON.parse(out) as SpawnReport);
      else reject(new Error(`the spawning process exited with ${code}: ${out}`));
    });
  });
}

/** One plain tied spawn of /bin/true: whether a signal killed it, and whether `diedUnborn` said so. */
async function tiedTrue(report: SpawnReport): Promise<void> {
  const tied = tiedToThisThread('/bin/true', []);
  const child = spawn(tied.command, tied.args, { stdio: 'ignore', detached: tied.detached });
  const unborn = diedUnborn(child.pid, tied.command);
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_, s) => resolve(s)));
  report.spawns += 1;
  if (signal === 'SIGTERM') report.killed += 1;
  if (unborn) report.unborn += 1;
  if (unborn && signal === 'SIGTERM') report.killedUnborn += 1;
}

async function ffmpegRun(ffmpegPath: string, report: SpawnReport): Promise<void> {
  const args = ['-hide_banner', '-nostdin', '-f', 'lavfi', '-i', 'color=s=16x16:d=0.04', '-f', 'null', '-'];
  const result = await runFfmpeg({ ffmpegPath, args, timeoutMs: 30_000, niceness: 0 });
  report.runs += 1;
  if (!result.ok) report.failed.push(JSON.stringify(result));
}

async function work(mode: SpawnMode, count: number): Promise<SpawnReport> {
  const report: SpawnReport = { spawns: 0, killed: 0, unborn: 0, killedUnborn: 0, runs: 0, failed: [] };
  const { ffmpeg } = resolveFfmpeg({ ffmpegPath: process.env.FFMPEG_PATH, ffprobePath: process.env.FFPROBE_PATH });
  for (let round = 0; round < count; round++) {
    await Promise.all(
      mode === 'tied'
        ? [tiedTrue(report), tiedTrue(report), tiedTrue(report)]
        : [tiedTrue(report), ffmpegRun(ffmpeg, report), tiedTrue(report)],
    );
  }
  return report;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.on('SIGTERM', () => {}); // as a draining service does
  const [mode, count] = [process.argv[2] as SpawnMode, Number(process.argv[3])];
  const sender = `process.on('SIGTERM', () => {}); setInterval(() => process.kill(-${process.pid}, 'SIGTERM'), ${SIGNAL_EVERY_MS});`;
  const signaller = spawn(process.execPath, ['-e', sender], { stdio: 'ignore' });
  const report = await work(mode, count);
  signaller.kill('SIGKILL');
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
