// The sound made apart from the picture (segments, the fast path) against the one command that mixes and
// encodes it, both by real ffmpeg (mixdown.ts): the mixdown pass measures the same loudness as the measuring
// pass, and the sound encoded from the mixdown is the command's sound sample for sample. A segmented render
// asked for its sound alone (what a cluster's joining node makes while other nodes encode the picture) makes
// that one file, which the join then takes as it is.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { measureCommand, measuredLoudness } from '../../workers/export/measure-command.ts';
import { mixdownCommand, soundFromMixdownCommand } from '../../workers/export/mixdown.ts';
import { soundOnlyCommand } from '../../workers/export/parallel-render.ts';
import type { ExportPlan, ExportSource } from '../../workers/export/work-order.ts';
import { soundKey } from '../../workers/export/segment-command.ts';
import { runFfmpeg } from '../../workers/ffmpeg/runner.ts';
import { createExportPool } from '../../src/export/pool.ts';
import { pino } from 'pino';
import { ffmpeg, ffmpegRun } from '../helpers/media-analysis.ts';

const SECONDS = 12;
let dir: string;
let video: ExportSource;
let voice: ExportSource;
let music: ExportSource;

/** Runs one command through the export's runner (not niced: the test waits for it); answers its log. */
async function ffmpegStep(args: string[], keepStderr = false): Promise<string> {
  const result = await runFfmpeg({ ffmpegPath: ffmpeg, args, timeoutMs: 60_000, niceness: 0, keepStderr });
  assert.ok(result.ok, `ffmpeg failed: ${JSON.stringify(result)}`);
  return result.stderr ?? '';
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mf-mixdown-'));
  const chord = '0.1*(sin(2*PI*220*t)+sin(2*PI*277.18*t)+sin(2*PI*329.63*t))';
  await Promise.all([
    ffmpegRun([
      ...['-f', 'lavfi', '-i', `testsrc2=s=160x90:r=30:d=${SECONDS}`],
      ...[
        '-f',
        'lavfi',
        '-i',
        `aevalsrc=0.3*sin(2*PI*(300+10*t)*t)|0.3*sin(2*PI*(310+10*t)*t):s=48000:d=${SECONDS}`,
      ],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-c:a', 'aac', '-b:a', '192k', '-shortest'],
      join(dir, 'video.mp4'),
    ]),
    ffmpegRun([
      ...['-f', 'lavfi', '-i', `aevalsrc=0.5*sin(2*PI*180*t)*(0.5+0.5*sin(2*PI*4*t)):s=48000:d=4`],
      ...['-c:a', 'pcm_s16le', join(dir, 'voice.wav')],
    ]),
    ffmpegRun([
      ...['-f', 'lavfi', '-i', `aevalsrc=${chord}|${chord}:s=44100:d=${SECONDS}`],
      ...['-c:a', 'libmp3lame', '-b:a', '192k', join(dir, 'music.mp3')],
    ]),
  ]);
  video = {
    path: join(dir, 'video.mp4'),
    demuxer: 'mov',
    kind: 'video',
    durationSec: SECONDS,
    video: { codec: 'h264', width: 160, height: 90, fps: 30, pixFmt: 'yuv420p' },
    audio: { codec: 'aac', sampleRate: 48_000, channels: 2 },
  };
  voice = {
    path: join(dir, 'voice.wav'),
    demuxer: 'wav',
    kind: 'audio',
    durationSec: 4,
    audio: { codec: 'pcm_s16le', sampleRate: 48_000, channels: 1 },
  };
  music = {
    path: join(dir, 'music.mp3'),
    demuxer: 'mp3',
    kind: 'audio',
    durationSec: SECONDS,
    audio: { codec: 'mp3', sampleRate: 44_100, channels: 2 },
  };
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Two cuts of the video with its sound, a voice at 3 s ducking the music under it, loudness normalised. */
function timeline(quality: 'final' | 'preview'): ExportPlan {
  return {
    picture: [
      { source: video, trimStartSec: 0, durationSec: 5, volume: 1 },
      { source: video, trimStartSec: 6, durationSec: 5, volume: 0.8, fadeInSec: 0.5 },
    ],
    sounds: [
      { source: voice, track: 'voice', startSec: 3, trimStartSec: 0, durationSec: 4, volume: 0.9 },
      { source: music, track: 'music', startSec: 0, trimStartSec: 0, durationSec: 10, volume: 0.5 },
    ],
    output: { width: 160, height: 90, fps: 30, fit: 'fit', quality, path: join(dir, 'unused.mp4') },
    filters: { loudnorm: true, sidechaincompress: true },
  };
}

/** The decoded samples of a file's sound, 48 kHz stereo float, interleaved. */
async function samples(path: string): Promise<Float32Array> {
  const { stdout } = await promisify(execFile)(
    ffmpeg,
    ['-v', 'error', '-i', `file:${path}`, '-f', 'f32le', '-ac', '2', '-ar', '48000', '-'],
    { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 },
  );
  return new Float32Array(stdout.buffer, stdout.byteOffset, stdout.length / 4);
}

describe('the sound from a mixdown', () => {
  for (const quality of ['final', 'preview'] as const) {
    it(`${quality}: measures what the measuring pass measures, and encodes the same samples as one command`, async () => {
      const plan = timeline(quality);
      const measure = quality === 'final';
      const mixdown = join(dir, `${quality}.wav`);
      const mixLog = await ffmpegStep(mixdownCommand(plan, mixdown, measure), measure);
      let measured = plan;
      if (measure) {
        const alone = measuredLoudness(await ffmpegStep(measureCommand(plan), true));
        assert.deepEqual(measuredLoudness(mixLog), alone, 'the same measurement as the measuring pass');
        measured = { ...plan, measuredLoudness: alone };
      }
      const [reference, fromMixdown] = [
        join(dir, `${quality}-whole.mp4`),
        join(dir, `${quality}-mixdown.mp4`),
      ];
      await ffmpegStep(soundOnlyCommand(measured, reference));
      await ffmpegStep(soundFromMixdownCommand(measured, mixdown, fromMixdown));
      const [whole, apart] = await Promise.all([samples(reference), samples(fromMixdown)]);
      assert.ok(
        whole.length >= 2 * 48_000 * 10,
        `the sound lasts the programme (${whole.length / 2} samples)`,
      );
      assert.equal(apart.length, whole.length, 'as many samples');
      const differing = whole.findIndex((value, i) => value !== apart[i]);
      assert.equal(differing, -1, `sample for sample the same (first difference at ${differing / 2})`);
    });
  }
});

describe('a segmented render’s sound alone, then its join', () => {
  it('mixes and encodes only the sound, into its key’s file, which the join then muxes as it is', async () => {
    const pool = createExportPool({
      concurrency: 1,
      ffmpegPath: ffmpeg,
      niceness: 0,
      logger: pino({ level: 'silent' }),
    });
    try {
      const segments = join(dir, 'segments');
      await mkdir(segments);
      const output = join(dir, 'joined.mp4');
      const plan: ExportPlan = {
        ...timeline('final'),
        output: { ...timeline('final').output, path: output },
      };
      const key = soundKey(plan);
      const soundOnly = await pool.run(
        { ...plan, segmented: { dir: segments, reused: [], parallel: 1, soundOnly: true } },
        { timeoutMs: 60_000 },
      );
      assert.ok(soundOnly.ok, JSON.stringify(soundOnly));
      assert.deepEqual(await readdir(segments), [`${key}.mp4`], 'the sound and no segment');
      await assert.rejects(stat(output), 'no output yet');
      const mixed = await stat(join(segments, `${key}.mp4`));

      const joined = await pool.run(
        { ...plan, segmented: { dir: segments, reused: [key], parallel: 1 } },
        { timeoutMs: 60_000 },
      );
      assert.ok(joined.ok, JSON.stringify(joined));
      const kept = await stat(join(segments, `${key}.mp4`));
      assert.equal(kept.mtimeMs, mixed.mtimeMs, 'the join did not mix the sound again');
      const soundPackets = (path: string) =>
        promisify(execFile)(ffmpeg, [
          '-v',
          'error',
          '-i',
          `file:${path}`,
          '-map',
          '0:a',
          '-c',
          'copy',
          '-f',
          'md5',
          '-',
        ]);
      assert.equal(
        (await soundPackets(output)).stdout,
        (await soundPackets(join(segments, `${key}.mp4`))).stdout,
        'the output’s sound is that file’s, packet for packet',
      );
    } finally {
      await pool.close();
    }
  });
});
