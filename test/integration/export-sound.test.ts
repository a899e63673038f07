// The export's sound graph run by real ffmpeg, measured by ffmpeg's own analysis filters: on the resolved ffmpeg
// and, when it is installed, on the registry's 2018 fallback build (the graph must parse and behave on both).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { FEATURE_FILTERS, detectFilterSupport } from '../../workers/export/filter-support.ts';
import {
  hasOwnSound,
  type ExportPlan,
  type ExportSource,
  type FilterSupport,
  type SoundClip,
} from '../../workers/export/plan.ts';
import { linearGainDb, parseLoudnormJson } from '../../workers/export/loudness.ts';
import type { MeasuredLoudness } from '../../workers/export/work-order.ts';
import { MEASURED_OUT, measureGraph, soundGraph } from '../../workers/export/sound-graph.ts';

const run = promisify(execFile);
const { ffmpeg } = resolveFfmpeg({
  ffmpegPath: process.env.FFMPEG_PATH,
  ffprobePath: process.env.FFPROBE_PATH,
});

/** The registry's fallback binary, when its package is installed for this platform. */
function fallbackFfmpeg(): string | undefined {
  try {
    const { path } = createRequire(import.meta.url)('@ffmpeg-installer/ffmpeg') as { path: string };
    return existsSync(path) && path !== ffmpeg ? path : undefined;
  } catch {
    return undefined;
  }
}
const builds = [
  { name: 'resolved ffmpeg', path: ffmpeg },
  ...(fallbackFfmpeg() ? [{ name: '2018 fallback', path: fallbackFfmpeg()! }] : []),
];

/** Where the beep is in the video file, and where the timeline below puts it (after a 1 s image, trim 0.5 s). */
const BEEP_IN_SOURCE = 1;
const BEEP_ON_TIMELINE = 1.5;
const VOICE_START = 2.2;
const TOTAL = 3;
const FRAME = 1 / 30;

let dir: string;
const file = (name: string) => join(dir, name);

async function ffmpegRun(binary: string, args: string[]): Promise<string> {
  const { stderr } = await run(binary, ['-hide_banner', '-nostdin', '-y', ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stderr;
}

const audio = { codec: 'pcm_s16le', sampleRate: 48_000, channels: 2 };
const video: ExportSource = {
  path: '',
  demuxer: 'mov',
  kind: 'video',
  durationSec: 3,
  video: { codec: 'h264', width: 320, height: 240, fps: 30, pixFmt: 'yuv420p' },
  audio: { codec: 'aac', sampleRate: 48_000, channels: 2 },
};
const image: ExportSource = { path: '', demuxer: 'png_pipe', kind: 'image', durationSec: null };
const tone = (name: string, seconds: number): ExportSource => ({
  path: file(name),
  demuxer: 'wav',
  kind: 'audio',
  durationSec: seconds,
  audio,
});

/** A 1 s image (no audio) then the video from 0.5 s for 2 s: the beep at 1.0 s in the file lands at 1.5 s. */
function plan(sounds: SoundClip[], filters: FilterSupport): ExportPlan {
  return {
    picture: [
      { source: image, trimStartSec: 0, durationSec: 1, volume: 1 },
      { source: { ...video, path: file('beep.mp4') }, trimStartSec: 0.5, durationSec: 2, volume: 1 },
    ],
    sounds,
    output: { width: 320, height: 240, fps: 30, fit: 'fit', path: '' },
    filters,
  };
}

/**
 * What the colleague's input args do (one input per picture clip, then per sound clip, each trimmed on the
 * input), reduced to audio: the image is a silent lavfi source.
 */
function inputs(exportPlan: ExportPlan): string[] {
  // As the export numbers them (plan.ts): picture clips, sound clips, then each picture clip's own sound again.
  const ownSound = exportPlan.picture.filter(hasOwnSound);
  return [...exportPlan.picture, ...exportPlan.sounds, ...ownSound].flatMap((clip) =>
    clip.source.kind === 'image'
      ? ['-f', 'lavfi', '-t', String(clip.durationSec), '-i', 'color=c=black:s=32x32:r=30']
      : [
          ...['-ss', String(clip.trimStartSec)],
          ...['-t', String(clip.durationSec * ('speed' in clip ? (clip.speed ?? 1) : 1))],
          ...['-i', clip.source.path],
        ],
  );
}

/**
 * The export's two passes, reduced to audio: with loudnorm, the measuring pass first (the mix into loudnorm's
 * JSON), then the graph with that measurement, mapped to a wav.
 */
async function mix(binary: string, exportPlan: ExportPlan, output: string): Promise<void> {
  let measured = exportPlan;
  if (exportPlan.filters.loudnorm) {
    const log = await ffmpegRun(binary, [
      ...inputs(exportPlan),
      '-filter_complex',
      measureGraph(exportPlan),
      ...['-map', `[${MEASURED_OUT}]`, '-f', 'null', '-'],
    ]);
    measured = { ...exportPlan, measuredLoudness: parseLoudnormJson(log) };
  }
  await ffmpegRun(binary, [
    ...inputs(measured),
    '-filter_complex',
    soundGraph(measured),
    '-map',
    '[aout]',
    '-t',
    String(TOTAL),
    output,
  ]);
}

/** Runs an analysis chain on a file's audio and returns ffmpeg's log (where the analysis filters print). */
const analyse = (path: string, filters: string) =>
  ffmpegRun(ffmpeg, ['-i', path, '-af', filters, '-f', 'null', '-']);

/** Times at which sound starts after silence (`silencedetect`'s `silence_end`). */
async function onsets(path: string): Promise<number[]> {
  const log = await analyse(path, 'silencedetect=n=-40dB:d=0.05');
  return [...log.matchAll(/silence_end: ([\d.]+)/g)].map((m) => Number(m[1]));
}

/** Mean level (dBFS) of the music band (150 Hz) between two times. */
async function musicLevel(path: string, from: number, to: number): Promise<number> {
  const log = await analyse(
    path,
    `atrim=start=${from}:end=${to},lowpass=f=300,lowpass=f=300,lowpass=f=300,volumedetect`,
  );
  return Number(/mean_volume: (-?[\d.]+) dB/.exec(log)?.[1]);
}

/** Integrated loudness from `ebur128`'s summary. */
async function integratedLoudness(path: string): Promise<number> {
  const log = await analyse(path, 'ebur128');
  return Number(/Integrated loudness:\s+I:\s+(-?[\d.]+) LUFS/.exec(log)?.[1]);
}

/** Number of samples per channel, from `astats`. */
async function samples(path: string): Promise<number> {
  const log = await analyse(path, 'astats');
  return Number([...log.matchAll(/Number of samples: (\d+)/g)].at(-1)?.[1]);
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mf-export-sound-'));
  // A 3 s video whose audio is a 0.1 s 1 kHz beep at exactly 1.0 s, silence elsewhere.
  await ffmpegRun(ffmpeg, [
    ...['-f', 'lavfi', '-i', 'testsrc2=s=320x240:r=30:d=3'],
    ...['-f', 'lavfi', '-i', 'sine=f=1000:r=48000:d=0.1'],
    '-filter_complex',
    `[1:a]adelay=${BEEP_IN_SOURCE * 1000}|${BEEP_IN_SOURCE * 1000},apad,atrim=0:3,aformat=channel_layouts=stereo[a]`,
    ...['-map', '0:v', '-map', '[a]', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-t', '3'],
    file('beep.mp4'),
  ]);
  // Voice-like: a 600 Hz tone at speech level (lavfi's sine peaks at 1/8: −21 dBFS RMS); music: a 150 Hz
  // tone 6 dB under it.
  await ffmpegRun(ffmpeg, ['-f', 'lavfi', '-i', 'sine=f=600:r=48000:d=3', file('voice.wav')]);
  await ffmpegRun(ffmpeg, ['-f', 'lavfi', '-i', 'sine=f=150:r=48000:d=3,volume=0.5', file('music.wav')]);
  // Near-silence: a 600 Hz tone peaking at −59 dBFS, about −60 LUFS.
  await ffmpegRun(ffmpeg, [
    '-f',
    'lavfi',
    '-i',
    "aevalsrc='0.0011*sin(2*PI*600*t)':s=48000:d=3",
    file('hum.wav'),
  ]);
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

for (const build of builds) {
  describe(`export sound graph on the ${build.name}`, () => {
    it('finds loudnorm and sidechaincompress', async () => {
      const { loudnorm, sidechaincompress, missing } = await detectFilterSupport(build.path);
      assert.deepEqual({ loudnorm, sidechaincompress }, { loudnorm: true, sidechaincompress: true });
      // Every filter a plain export needs is there; a build may lack only filters of the effects (transitions,
      // text, motion, speed), which an export using one refuses with unsupported_feature.
      const effectsOnly = new Set<string>(Object.values(FEATURE_FILTERS).flat());
      assert.deepEqual(
        missing.filter((name) => !effectsOnly.has(name)),
        [],
      );
    });

    for (const loudnorm of [false, true]) {
      it(`keeps the beep and a voice clip in place, and lasts exactly the picture (${loudnorm ? 'loudnorm' : 'limiter'})`, async () => {
        const out = file(`sync-${loudnorm}-${builds.indexOf(build)}.wav`);
        const voice: SoundClip = {
          source: tone('voice.wav', 3),
          track: 'voice',
          startSec: VOICE_START,
          trimStartSec: 0,
          durationSec: 0.5,
          volume: 1,
        };
        await mix(build.path, plan([voice], { loudnorm, sidechaincompress: true }), out);
        const [beep, voiceAt] = await onsets(out);
        console.log(
          `${build.name}, loudnorm ${loudnorm}: beep at ${beep} s (expected ${BEEP_ON_TIMELINE}), voice at ${voiceAt} s (expected ${VOICE_START})`,
        );
        assert.ok(Math.abs(beep! - BEEP_ON_TIMELINE) <= FRAME, `beep at ${beep}`);
        assert.ok(Math.abs(voiceAt! - VOICE_START) <= FRAME, `voice at ${voiceAt}`);
        assert.equal(await samples(out), TOTAL * 48_000);
      });
    }

    for (const ducking of [true, false]) {
      it(`${ducking ? 'ducks' : 'does not duck'} music under voice`, async () => {
        const out = file(`duck-${ducking}-${builds.indexOf(build)}.wav`);
        const sounds: SoundClip[] = [
          {
            source: tone('voice.wav', 3),
            track: 'voice',
            startSec: 1,
            trimStartSec: 0,
            durationSec: 1,
            volume: 1,
          },
          {
            source: tone('music.wav', 3),
            track: 'music',
            startSec: 0,
            trimStartSec: 0,
            durationSec: 3,
            volume: 1,
          },
        ];
        await mix(build.path, plan(sounds, { loudnorm: false, sidechaincompress: ducking }), out);
        const alone = await musicLevel(out, 0.2, 0.9);
        const underVoice = await musicLevel(out, 1.3, 1.9);
        console.log(
          `${build.name}: music ${alone} dB alone, ${underVoice} dB under voice (ducking ${ducking})`,
        );
        if (ducking) assert.ok(alone - underVoice >= 6, `ducked by ${alone - underVoice} dB`);
        else assert.ok(Math.abs(alone - underVoice) < 1, `changed by ${alone - underVoice} dB`);
      });
    }

    it('runs speed (atempo stages), fades, cross-fades and ramps, exactly the timeline long', async () => {
      const out = file(`effects-${builds.indexOf(build)}.wav`);
      const beep = { ...video, path: file('beep.mp4') };
      const effects: ExportPlan = {
        ...plan([], { loudnorm: true, sidechaincompress: true }),
        picture: [
          // 2 s of the source in 0.5 s (two atempo=2 stages), the beep at 0.25 s.
          { source: beep, trimStartSec: 0, durationSec: 0.5, volume: 1, speed: 4 },
          // 0.625 s of the source (from 0.25 s, before the beep) in 2.5 s (two atempo=0.5 stages), cross-faded
          // over 0.25 s: the timeline lasts 0.5 + 2.5 − 0.25 = 2.75 s.
          {
            source: beep,
            trimStartSec: 0.25,
            durationSec: 2.5,
            volume: 1,
            speed: 0.25,
            transitionIn: { type: 'fade', durationSec: 0.25 },
            fadeOutSec: 0.5,
          },
        ],
        sounds: [
          {
            source: tone('voice.wav', 3),
            track: 'voice',
            startSec: 1,
            trimStartSec: 0,
            durationSec: 1,
            volume: 1,
            fadeInSec: 0.2,
          },
        ],
      };
      await mix(build.path, effects, out);
      const [beepAt, voiceAt] = await onsets(out);
      console.log(
        `${build.name}: sped-up beep at ${beepAt} s (expected 0.25), faded voice from ${voiceAt} s`,
      );
      // atempo overlaps windows of 1/24 s: a sharp onset spreads up to half a window early, never late.
      assert.ok(beepAt! <= 0.25 + 0.002 && beepAt! >= 0.25 - 1 / 48, `beep at ${beepAt}`);
      // The voice fades in from 1 s: it crosses −40 dB a little later.
      assert.ok(voiceAt! > 1 && voiceAt! < 1.1, `voice at ${voiceAt}`);
      assert.equal(await samples(out), 2.75 * 48_000);
    });

    it('normalises the mix to −14 LUFS in two passes (measure, then one gain)', async () => {
      const out = file(`loud-${builds.indexOf(build)}.wav`);
      const sounds: SoundClip[] = [
        {
          source: tone('voice.wav', 3),
          track: 'voice',
          startSec: 0,
          trimStartSec: 0,
          durationSec: 3,
          volume: 1,
        },
        {
          source: tone('music.wav', 3),
          track: 'music',
          startSec: 0,
          trimStartSec: 0,
          durationSec: 3,
          volume: 1,
        },
      ];
      await mix(build.path, plan(sounds, { loudnorm: true, sidechaincompress: true }), out);
      const loudness = await integratedLoudness(out);
      console.log(`${build.name}: integrated loudness ${loudness} LUFS`);
      assert.ok(Math.abs(loudness - -14) <= 1, `${loudness} LUFS`);
      assert.equal(await samples(out), TOTAL * 48_000);
    });

    it('does not raise a near-silent mix (about −60 LUFS stays there)', async () => {
      const out = file(`hum-${builds.indexOf(build)}.wav`);
      const hum: SoundClip = {
        source: tone('hum.wav', 3),
        track: 'music',
        startSec: 0,
        trimStartSec: 0,
        durationSec: 3,
        volume: 1,
      };
      // A silent picture (an image) under it: the hum is the whole programme.
      const alone: ExportPlan = {
        ...plan([hum], { loudnorm: true, sidechaincompress: true }),
        picture: [{ source: image, trimStartSec: 0, durationSec: TOTAL, volume: 1 }],
      };
      const before = await integratedLoudness(file('hum.wav'));
      await mix(build.path, alone, out);
      const after = await integratedLoudness(out);
      console.log(`${build.name}: near-silence ${before} LUFS → ${after} LUFS`);
      assert.ok(before < -55, `the source is near-silent: ${before}`);
      assert.ok(Math.abs(after - before) <= 1, `not raised: ${before} → ${after}`);
    });

    it('applies one gain exactly where loudnorm would keep its linear mode, and the same gain', async () => {
      // The measurements loudnorm is given (the voice tone is about −21 LUFS): a gain of 7 dB within the ceiling;
      // the same gain with the peak 0.02 dB over it; lowered by 5 dB; at the ceiling to the hundredth; a range
      // wider than the target. Each is run through loudnorm in linear mode as the reference.
      const cases: (MeasuredLoudness & { targetRange: string })[] = [
        {
          integratedLufs: -21,
          truePeakDbtp: -9,
          rangeLu: 3,
          thresholdLufs: -31,
          offsetLu: 0,
          targetRange: '11',
        },
        {
          integratedLufs: -21,
          truePeakDbtp: -7.98,
          rangeLu: 3,
          thresholdLufs: -31,
          offsetLu: 0,
          targetRange: '11',
        },
        {
          integratedLufs: -9,
          truePeakDbtp: 0,
          rangeLu: 3,
          thresholdLufs: -19,
          offsetLu: 0,
          targetRange: '11',
        },
        {
          integratedLufs: -21,
          truePeakDbtp: -8,
          rangeLu: 3,
          thresholdLufs: -31,
          offsetLu: 0,
          targetRange: '11',
        },
        {
          integratedLufs: -21,
          truePeakDbtp: -9,
          rangeLu: 12.5,
          thresholdLufs: -31,
          offsetLu: 0,
          targetRange: '12',
        },
      ];
      // The voice tone through `filters`, in stereo as the export's programme is.
      const through = (filters: string, out: string) =>
        ffmpegRun(build.path, [
          '-i',
          file('voice.wav'),
          '-af',
          `aformat=channel_layouts=stereo,${filters}`,
          out,
        ]);
      for (const [i, measured] of cases.entries()) {
        const reference = [
          `loudnorm=I=-14:TP=-1:LRA=${measured.targetRange}:measured_I=${measured.integratedLufs}`,
          `measured_TP=${measured.truePeakDbtp}:measured_LRA=${measured.rangeLu}`,
          `measured_thresh=${measured.thresholdLufs}:linear=true:print_format=json`,
        ].join(':');
        const referenceOut = file(`linear-reference-${i}-${builds.indexOf(build)}.wav`);
        const log = await through(`${reference},aresample=48000`, referenceOut);
        const mode = /"normalization_type" : "(\w+)"/.exec(log)?.[1];
        const gain = linearGainDb(measured, measured.targetRange);
        assert.equal(
          gain !== undefined,
          mode === 'linear',
          `case ${i}: loudnorm chose ${mode}, the export ${gain} dB`,
        );
        if (gain === undefined) continue;
        const ownOut = file(`linear-own-${i}-${builds.indexOf(build)}.wav`);
        await through(`volume=${gain.toFixed(2)}dB`, ownOut);
        const [own, theirs] = [await integratedLoudness(ownOut), await integratedLoudness(referenceOut)];
        assert.ok(
          Math.abs(own - theirs) <= 0.05,
          `case ${i}: ${own} LUFS with volume, ${theirs} with loudnorm`,
        );
      }
    });
  });
}
