// How the export mixes the sound, on real exports (the export worker's task, real ffmpeg) decoded back to PCM
// and measured: a fade-in rises, a butt cut has no click, a transition cross-fades, speed keeps the pitch,
// programme material lands on −14 LUFS in two passes while near-silence is not raised, and a preview skips the
// measuring pass. The picture of these exports is a small colour card: its tests are elsewhere.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { detectFilterSupport } from '../../workers/export/filter-support.ts';
import type {
  ExportPlan,
  ExportSource,
  ExportWorkerMessage,
  FilterSupport,
  PictureClip,
  RunResult,
  SoundClip,
} from '../../workers/export/work-order.ts';
import { exportTask, MEASURE_SHARE } from '../../workers/export/worker.ts';
import { pictureClip } from '../helpers/export-media.ts';
import { analyseAudio, ffmpeg, ffmpegRun, integratedLoudness } from '../helpers/media-analysis.ts';

const run = promisify(execFile);
const RATE = 48_000;
/** The export's picture: a size no source has, so nothing takes the fast path (it copies the picture). */
const OUTPUT = { width: 160, height: 90, fps: 30, fit: 'fit' as const };

let dir: string;
let filters: FilterSupport;
const file = (name: string) => join(dir, name);

/**
 * A 128×72 colour card with `audio` (an `aevalsrc` expression in `t`, or any lavfi audio source) as 16-bit PCM
 * in a QuickTime file: a video clip whose own sound is exactly the expression, no codec in between.
 */
async function videoWithSound(name: string, audio: string, seconds: number): Promise<ExportSource> {
  const source = audio.includes('=') ? audio : tone(audio);
  await ffmpegRun([
    ...['-f', 'lavfi', '-i', `color=c=gray:s=128x72:r=30:d=${seconds}`],
    ...['-f', 'lavfi', '-t', String(seconds), '-i', source],
    ...['-map', '0:v', '-map', '1:a', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'],
    ...['-c:a', 'pcm_s16le', '-ar', String(RATE), '-ac', '2', '-t', String(seconds), file(name)],
  ]);
  return {
    path: file(name),
    demuxer: 'mov',
    kind: 'video',
    durationSec: seconds,
    video: { codec: 'h264', width: 128, height: 72, fps: 30, pixFmt: 'yuv420p' },
    audio: { codec: 'pcm_s16le', sampleRate: RATE, channels: 2 },
  };
}

/** An `aevalsrc` of one expression in `t` (quoted: an expression may hold commas). */
const tone = (expression: string) => `aevalsrc='${expression}':s=${RATE}:c=stereo`;

/** A wav of a lavfi audio source, for the audio tracks. */
async function wav(name: string, source: string, seconds: number): Promise<ExportSource> {
  await ffmpegRun([
    '-f',
    'lavfi',
    '-t',
    String(seconds),
    '-i',
    source,
    '-ac',
    '2',
    '-ar',
    String(RATE),
    file(name),
  ]);
  return {
    path: file(name),
    demuxer: 'wav',
    kind: 'audio',
    durationSec: seconds,
    audio: { codec: 'pcm_s16le', sampleRate: RATE, channels: 2 },
  };
}

let card: ExportSource;

const soundClip = (source: ExportSource, startSec: number, durationSec: number): SoundClip => ({
  source,
  track: 'music',
  startSec,
  trimStartSec: 0,
  durationSec,
  volume: 1,
});

function plan(
  name: string,
  picture: PictureClip[],
  sounds: SoundClip[] = [],
  quality?: 'preview',
): ExportPlan {
  return {
    picture,
    sounds,
    output: { ...OUTPUT, path: file(name), ...(quality && { quality }) },
    filters,
  };
}

/** Runs the export worker's task on `p` as the pool would, collecting what it posts on its port. */
async function exportOf(p: ExportPlan): Promise<{ result: RunResult; messages: ExportWorkerMessage[] }> {
  const { port1, port2 } = new MessageChannel();
  const messages: ExportWorkerMessage[] = [];
  const result = await exportTask({
    plan: p,
    ffmpegPath: ffmpeg,
    timeoutMs: 120_000,
    niceness: 0,
    port: port2,
  });
  for (let next = receiveMessageOnPort(port1); next; next = receiveMessageOnPort(port1)) {
    messages.push(next.message as ExportWorkerMessage);
  }
  port1.close();
  assert.ok(result.ok, `the export succeeded: ${JSON.stringify(result)}`);
  return { result, messages };
}

/** Both channels averaged (they carry the same sound): the level of one channel. */
const MONO = 'pan=mono|c0=0.5*c0+0.5*c1';

/** The exported file's sound decoded to 48 kHz mono float samples. */
async function decoded(path: string): Promise<Float32Array> {
  const { stdout } = await run(
    ffmpeg,
    [
      '-v',
      'error',
      '-i',
      `file:${path}`,
      '-map',
      '0:a:0',
      '-af',
      MONO,
      '-ar',
      String(RATE),
      '-f',
      'f32le',
      '-',
    ],
    { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 },
  );
  return new Float32Array(new Uint8Array(stdout).buffer);
}

const at = (seconds: number) => Math.round(seconds * RATE);

/** Root mean square of the samples between two times. */
function rms(samples: Float32Array, from: number, to: number): number {
  let sum = 0;
  for (let i = at(from); i < at(to); i += 1) sum += samples[i]! ** 2;
  return Math.sqrt(sum / (at(to) - at(from)));
}

/** The largest step between two consecutive samples between two times. */
function largestStep(samples: Float32Array, from: number, to: number): number {
  let largest = 0;
  for (let i = at(from) + 1; i < at(to); i += 1)
    largest = Math.max(largest, Math.abs(samples[i]! - samples[i - 1]!));
  return largest;
}

/** The dominant frequency between two times, from the rising zero crossings (a pure tone's own frequency). */
function frequency(samples: Float32Array, from: number, to: number): number {
  const crossings: number[] = [];
  for (let i = at(from) + 1; i < at(to); i += 1) {
    if (samples[i - 1]! < 0 && samples[i]! >= 0)
      crossings.push(i - samples[i]! / (samples[i]! - samples[i - 1]!));
  }
  return ((crossings.length - 1) * RATE) / (crossings.at(-1)! - crossings[0]!);
}

/** Integrated loudness and true peak from `ebur128=peak=true`. */
async function loudness(path: string): Promise<{ integrated: number; truePeak: number }> {
  const log = await analyseAudio(path, 'ebur128=peak=true');
  const peak = /True peak:\s+Peak:\s+(-?[\d.]+|-inf) dBFS/.exec(log);
  assert.ok(peak, `ebur128 printed a true peak:\n${log.slice(-1500)}`);
  return { integrated: await integratedLoudness(path), truePeak: Number(peak[1]) };
}

const pids = (messages: ExportWorkerMessage[]) => messages.filter((m) => m.type === 'pid').length;
const progress = (messages: ExportWorkerMessage[]) =>
  messages.flatMap((m) => (m.type === 'progress' ? [m.fraction] : []));

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mf-export-mixing-'));
  const support = await detectFilterSupport(ffmpeg);
  filters = { loudnorm: support.loudnorm, sidechaincompress: support.sidechaincompress };
  card = await videoWithSound('card.mov', 'anullsrc=r=48000:cl=stereo', 8);
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('how the export mixes the sound (real exports, decoded)', () => {
  it('finds loudnorm in the resolved ffmpeg (the two-pass tests need it)', () => {
    assert.equal(filters.loudnorm, true);
  });

  it('raises a 1 s fade-in steadily in RMS, then holds the level', async () => {
    const steady = await videoWithSound('fade.mov', '0.25*sin(2*PI*440*t)', 3);
    const p = plan('fade.mp4', [pictureClip(steady, 3, { fadeInSec: 1 })]);
    await exportOf(p);
    const samples = await decoded(p.output.path);
    const quarters = [0, 0.25, 0.5, 0.75].map((from) => rms(samples, from, from + 0.25));
    const held = rms(samples, 1.25, 2.75);
    console.log(
      `fade-in RMS by quarter second: ${quarters.map((r) => r.toFixed(4)).join(', ')}; held ${held.toFixed(4)}`,
    );
    for (let i = 1; i < quarters.length; i += 1) {
      assert.ok(quarters[i]! > quarters[i - 1]! * 1.2, `quarter ${i} rises: ${quarters.join(', ')}`);
    }
    assert.ok(quarters[0]! < held * 0.25, 'the first quarter second is far below the held level');
    assert.ok(
      quarters[3]! > held * 0.7 && quarters[3]! < held,
      'the last quarter second nears the held level',
    );
    assert.ok(rms(samples, 0, 0.02) < held * 0.05, 'the sound starts from silence');
  });

  it('makes no sample jump at a butt cut larger than the tones’ own', async () => {
    // The first tone is at its peak where it is cut, the second starts at its negative peak: cut as they are,
    // the sound would jump by twice the amplitude at 1.0 s.
    const first = await videoWithSound('peak.mov', '0.4*cos(2*PI*250*t)', 2);
    const second = await videoWithSound('trough.mov', '-0.4*cos(2*PI*400*t)', 2);
    const p = plan('cut.mp4', [pictureClip(first, 1), pictureClip(second, 1.5)]);
    await exportOf(p);
    const samples = await decoded(p.output.path);
    const ownFirst = largestStep(samples, 0.2, 0.9);
    const ownSecond = largestStep(samples, 1.1, 1.4);
    const atCut = largestStep(samples, 0.95, 1.05);
    console.log(
      `largest sample step: first tone ${ownFirst.toFixed(4)}, second ${ownSecond.toFixed(4)}, at the cut ${atCut.toFixed(4)}`,
    );
    assert.ok(ownSecond > ownFirst, 'the 400 Hz tone moves faster than the 250 Hz one');
    assert.ok(atCut <= ownSecond * 1.05, `no click at the cut: ${atCut} against ${ownSecond}`);
    // The ramps are short: 20 ms from the cut both tones are at their full level.
    assert.ok(rms(samples, 0.9, 0.98) > rms(samples, 0.2, 0.9) * 0.9);
    assert.ok(rms(samples, 1.02, 1.1) > rms(samples, 1.1, 1.4) * 0.9);
  });

  it('cross-fades the sound over a transition: continuous, both tones in the middle, 1 s shorter', async () => {
    const a = await videoWithSound('a.mov', '0.3*sin(2*PI*440*t)', 3);
    const b = await videoWithSound('b.mov', '0.3*sin(2*PI*660*t)', 3);
    const p = plan('cross.mp4', [
      pictureClip(a, 3),
      pictureClip(b, 3, { transitionIn: { type: 'fade', durationSec: 1 } }),
    ]);
    await exportOf(p);
    const samples = await decoded(p.output.path);
    // The sound is the timeline's 5 s (3 + 3 − 1), not 6.
    const soundSec = (await soundSeconds(p.output.path)) ?? 0;
    assert.ok(Math.abs(soundSec - 5) <= 0.05, `the sound lasts ${soundSec} s`);
    const steady = rms(samples, 0.5, 1.5);
    const windows = Array.from({ length: 70 }, (_, k) => rms(samples, 1.65 + k * 0.02, 1.67 + k * 0.02));
    const [low, high] = [Math.min(...windows), Math.max(...windows)];
    console.log(
      `cross-fade: steady RMS ${steady.toFixed(4)}, across the overlap ${low.toFixed(4)}…${high.toFixed(4)}`,
    );
    // Equal power: the level holds through the overlap (a linear cross-fade dips 3 dB in the middle).
    assert.ok(low > steady * 0.85 && high < steady * 1.15, `continuous: ${low}…${high} against ${steady}`);
    assert.ok(Math.abs(frequency(samples, 0.5, 1.5) - 440) < 5);
    assert.ok(Math.abs(frequency(samples, 3.2, 4.8) - 660) < 5);
    const middle = await bandRms(p.output.path, 2.3, 2.7);
    console.log(
      `in the middle of the overlap: 440 Hz ${middle.low.toFixed(4)}, 660 Hz ${middle.high.toFixed(4)}`,
    );
    assert.ok(middle.low > steady * 0.4 && middle.high > steady * 0.4, 'both tones are heard in the middle');
  });

  it('plays a clip at speed 2 in half the time with its pitch kept', async () => {
    // 2 s of 440 Hz then 2 s of 880 Hz: at speed 2 the 4 s play in 2 s, still 440 then 880.
    const tones = await videoWithSound('tones.mov', '0.3*sin(2*PI*if(lt(t,2),440,880)*t)', 4);
    const p = plan('speed.mp4', [pictureClip(tones, 2, { speed: 2 })]);
    await exportOf(p);
    const samples = await decoded(p.output.path);
    const [first, second] = [frequency(samples, 0.2, 0.8), frequency(samples, 1.2, 1.8)];
    console.log(`speed 2: ${first.toFixed(1)} Hz then ${second.toFixed(1)} Hz, ${samples.length / RATE} s`);
    assert.ok(Math.abs(first - 440) < 440 * 0.02, `the pitch is kept: ${first} Hz`);
    assert.ok(
      Math.abs(second - 880) < 880 * 0.02,
      `the second half of the source is in the second second: ${second} Hz`,
    );
    assert.ok(Math.abs(samples.length / RATE - 2) <= 0.05);
  });

  it('lands loud, quiet and peaky programme material on −14 LUFS (±1), true peak under −1 dBTP', async () => {
    // Two tones and pink noise, peaking at −2.5 dBTP: about −8 LUFS, 6 dB over the target.
    const chord = `${tone('0.3*sin(2*PI*220*t)+0.3*sin(2*PI*330*t)')}[tones]`;
    const noise = `anoisesrc=color=pink:amplitude=0.3:seed=7:r=${RATE}[noise]`;
    const loudNoise = await wav(
      'loud.wav',
      `${chord};${noise};[tones][noise]amix=inputs=2,volume=2[out0]`,
      6,
    );
    // A 600 Hz tone peaking at −30.5 dBFS for 3 s, then 8 dB lower: about −33 LUFS.
    const quietVoice = await wav('quiet.wav', tone('(0.03-0.018*gte(t,3))*sin(2*PI*600*t)'), 6);
    // A quiet tone (−34 LUFS) with a short click every second peaking at −10 dBFS: one gain to −14 LUFS would put
    // the clicks at +10 dBTP, so loudnorm holds them (its dynamic mode, with the same measurement).
    const peaky = await wav('peaky.wav', tone('0.02*sin(2*PI*600*t)+0.3*lt(mod(t,1),0.0001)'), 6);
    for (const [name, source] of [
      ['loud', loudNoise],
      ['quiet', quietVoice],
      ['peaky', peaky],
    ] as const) {
      const before = await loudness(source.path);
      const p = plan(`${name}.mp4`, [pictureClip(card, 6)], [soundClip(source, 0, 6)]);
      const { messages } = await exportOf(p);
      const after = await loudness(p.output.path);
      console.log(
        `${name} programme: ${before.integrated} LUFS (true peak ${before.truePeak}) → ${after.integrated} LUFS (true peak ${after.truePeak} dBTP)`,
      );
      assert.equal(pids(messages), 2, 'a measuring pass, then the render');
      assert.ok(Math.abs(before.integrated - -14) >= 5, `${name}: the source is far from the target`);
      assert.ok(Math.abs(after.integrated - -14) <= 1, `${name}: ${after.integrated} LUFS`);
      // −1 dBTP before the AAC encoder, which may move peaks by a few tenths of a dB.
      assert.ok(after.truePeak <= -0.5, `${name}: true peak ${after.truePeak}`);
    }
    // One gain for the whole programme: the quiet programme's two halves keep their 8 dB between them.
    const samples = await decoded(file('quiet.mp4'));
    const step = 20 * Math.log10(rms(samples, 0.2, 2.8) / rms(samples, 3.2, 5.8));
    console.log(`quiet programme: ${step.toFixed(2)} dB between its halves (8 in the source)`);
    assert.ok(
      Math.abs(step - 20 * Math.log10(0.03 / 0.012)) <= 0.2,
      `the halves kept their balance: ${step} dB`,
    );
  });

  it('does not raise a near-silent programme (−60 LUFS stays near −60)', async () => {
    // Peaking at −59 dBFS: about −60 LUFS.
    const hum = await wav('hum.wav', tone('0.0011*sin(2*PI*600*t)'), 6);
    const before = await integratedLoudness(hum.path);
    const p = plan('hum.mp4', [pictureClip(card, 6)], [soundClip(hum, 0, 6)]);
    const { messages } = await exportOf(p);
    const after = await integratedLoudness(p.output.path);
    console.log(`near-silence: ${before} LUFS → ${after} LUFS`);
    assert.ok(before < -55 && before > -65, `the source is near-silent: ${before}`);
    assert.equal(pids(messages), 2, 'measured, then found near-silent');
    assert.ok(Math.abs(after - before) <= 1.5, `not raised: ${before} → ${after}`);
  });

  it('measures first as the first 20 % of the progress; a preview skips the measuring pass and renders its picture and sound at once', async () => {
    const source = await videoWithSound('preview.mov', '0.25*sin(2*PI*440*t)', 3);
    const final = await exportOf(plan('final.mp4', [pictureClip(source, 3)]));
    const preview = await exportOf(plan('preview.mp4', [pictureClip(source, 3)], [], 'preview'));
    const finalProgress = progress(final.messages);
    console.log(
      `final: ${pids(final.messages)} children, progress ${finalProgress.map((f) => f.toFixed(2)).join(' ')}`,
    );
    assert.equal(pids(final.messages), 2);
    assert.equal(pids(preview.messages), 3, 'the preview runs its two halves and their mux only');
    assert.deepEqual(
      preview.messages.filter((m) => m.type !== 'progress').map((m) => m.type),
      ['pid', 'pid', 'exit', 'exit', 'pid', 'exit'],
      'the picture and the sound side by side, then the mux',
    );
    assert.deepEqual(
      final.messages.filter((m) => m.type !== 'progress').map((m) => m.type),
      ['pid', 'exit', 'pid', 'exit'],
    );
    assert.ok(
      finalProgress.every((f, i) => i === 0 || f > finalProgress[i - 1]!),
      'progress only increases',
    );
    assert.ok(finalProgress.includes(MEASURE_SHARE), 'the measuring pass ends at 20 %');
    assert.equal(finalProgress.at(-1), 1);
    // The render's progress starts where the measuring pass ended.
    const secondPid = final.messages.findIndex((m, i) => m.type === 'pid' && i > 0);
    assert.ok(progress(final.messages.slice(0, secondPid)).every((f) => f <= MEASURE_SHARE));
    assert.equal(progress(preview.messages).at(-1), 1);
  });
});

/** Seconds of the exported sound (its decoded samples). */
async function soundSeconds(path: string): Promise<number> {
  return (await decoded(path)).length / RATE;
}

/** RMS of the 440 Hz and 660 Hz bands between two times (narrow band-pass filters), on the same scale. */
async function bandRms(path: string, from: number, to: number): Promise<{ low: number; high: number }> {
  const band = async (f: number) => {
    const log = await analyseAudio(
      path,
      `atrim=start=${from}:end=${to},${MONO},bandpass=f=${f}:width_type=q:w=8,bandpass=f=${f}:width_type=q:w=8,astats=metadata=0`,
    );
    const match = /RMS level dB: (-?[\d.]+|-inf)/.exec(log);
    assert.ok(match, `astats printed an RMS level:\n${log.slice(-1500)}`);
    return match[1] === '-inf' ? 0 : 10 ** (Number(match[1]) / 20);
  };
  return { low: await band(440), high: await band(660) };
}
