import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { filterSupport, parseFilterList } from '../../workers/export/filter-support.ts';
import type {
  ExportPlan,
  ExportSource,
  FilterSupport,
  PictureClip,
  SoundClip,
} from '../../workers/export/plan.ts';
import { inputArgs } from '../../workers/export/input-args.ts';
import { linearGainDb, parseLoudnormJson } from '../../workers/export/loudness.ts';
import { measureCommand, needsMeasuring } from '../../workers/export/measure-command.ts';
import {
  measureGraph,
  programmeHasSound,
  soundGraph,
  tempoFilters,
} from '../../workers/export/sound-graph.ts';
import type { MeasuredLoudness } from '../../workers/export/work-order.ts';
import { inputsOf, optionOf } from '../helpers/ffmpeg-run.ts';

const stereo = { codec: 'aac', sampleRate: 44_100, channels: 2 };
const videoWithAudio: ExportSource = {
  path: '/v.mp4',
  demuxer: 'mov',
  kind: 'video',
  durationSec: 10,
  audio: stereo,
};
const silentVideo: ExportSource = { path: '/s.mp4', demuxer: 'mov', kind: 'video', durationSec: 10 };
const image: ExportSource = { path: '/i.png', demuxer: 'png_pipe', kind: 'image', durationSec: null };
const song: ExportSource = { path: '/a.mp3', demuxer: 'mp3', kind: 'audio', durationSec: 60, audio: stereo };

const clip = (source: ExportSource, durationSec: number, volume = 1): PictureClip => ({
  source,
  trimStartSec: 0,
  durationSec,
  volume,
});
const sound = (track: SoundClip['track'], startSec: number, durationSec: number, volume = 1): SoundClip => ({
  source: song,
  track,
  startSec,
  trimStartSec: 0,
  durationSec,
  volume,
});
const all: FilterSupport = { loudnorm: true, sidechaincompress: true };

function plan(picture: PictureClip[], sounds: SoundClip[] = [], filters: FilterSupport = all): ExportPlan {
  return {
    picture,
    sounds,
    output: { width: 1280, height: 720, fps: 30, fit: 'fit', path: '/o.mp4' },
    filters,
  };
}

/** The graph's chains, and the one that defines `label`. */
function chains(graph: string): string[] {
  return graph.split(';');
}
function defining(graph: string, label: string): string {
  const found = chains(graph).filter((c) => c.endsWith(`[${label}]`));
  assert.equal(found.length, 1, `one chain defines [${label}] in ${graph}`);
  return found[0]!;
}

/** Every label used as an input is defined exactly once and used once (or is an ffmpeg input), and [aout] ends it. */
function assertWellFormed(graph: string): void {
  const defined = new Map<string, number>();
  const used = new Map<string, number>();
  for (const chain of chains(graph)) {
    const out = /\[(\w+)\]$/.exec(chain)?.[1];
    assert.ok(out, `chain ends in a label: ${chain}`);
    defined.set(out, (defined.get(out) ?? 0) + 1);
    const head = /^((?:\[[\w:]+\])*)/.exec(chain)![1]!;
    for (const m of head.matchAll(/\[([\w:]+)\]/g)) used.set(m[1]!, (used.get(m[1]!) ?? 0) + 1);
    // asplit defines two labels at once
    for (const m of chain.matchAll(/asplit=2\[(\w+)\]\[(\w+)\]$/g)) defined.set(m[1]!, 1);
  }
  for (const [label, count] of used) {
    assert.equal(count, 1, `[${label}] used once`);
    if (!label.includes(':')) assert.equal(defined.get(label), 1, `[${label}] defined`);
  }
  for (const label of defined.keys()) if (label !== 'aout') assert.ok(used.has(label), `[${label}] is used`);
  assert.ok(graph.endsWith('[aout]'));
}

/** The `afade`s of a chain, as `<in|out>:<start sample>:<samples>:<curve>`. */
function fades(chain: string): string[] {
  return [...chain.matchAll(/afade=t=(in|out):ss=(\d+):ns=(\d+):curve=(\w+)/g)].map((m) =>
    m.slice(1).join(':'),
  );
}

const FORMAT = 'aformat=sample_fmts=fltp:sample_rates=48000:channel_layouts=stereo';
const measured: MeasuredLoudness = {
  integratedLufs: -23.4,
  truePeakDbtp: -12.1,
  rangeLu: 4.2,
  thresholdLufs: -33.6,
  offsetLu: 0.3,
};

describe('soundGraph: the video track’s own sound', () => {
  it('joins butt-cut clips on one lane, each exactly its length, with a 10 ms de-click ramp at every edge', () => {
    const graph = soundGraph(plan([clip(videoWithAudio, 2, 0.5), clip(videoWithAudio, 1.5)]));
    assertWellFormed(graph);
    const first = defining(graph, 'pic0');
    // Each clip's own sound is its file opened again (inputs 2 and 3, after the two pictures).
    assert.ok(first.startsWith('[2:a:0]aresample=48000:async=1:first_pts=0,aformat=sample_fmts=fltp'));
    assert.match(
      first,
      /first_pts=0,aformat=[^,]+,atrim=end_sample=96000,apad=whole_len=96000,asetpts=N\/SR\/TB,volume=0\.5,afade/,
    );
    assert.doesNotMatch(first, /atempo/);
    assert.deepEqual(fades(first), ['in:0:480:tri', 'out:95520:480:tri']);
    assert.deepEqual(fades(defining(graph, 'pic1')), ['in:0:480:tri', 'out:71520:480:tri']);
    assert.equal(defining(graph, 'picture_lane0'), '[pic0][pic1]concat=n=2:v=0:a=1[picture_lane0]');
    // A single stream: no amix; cut to 3.5 s, limited (no measurement), cut again.
    assert.doesNotMatch(graph, /amix|loudnorm/);
    assert.equal(
      defining(graph, 'aout'),
      `[picture_lane0]apad=whole_len=168000,atrim=end_sample=168000,alimiter=limit=0.84:attack=1:release=50:level=0,${FORMAT},apad=whole_len=168000,atrim=end_sample=168000[aout]`,
    );
  });

  it('leaves a clip without audio (image, silent video) as silence between the others, never reading it', () => {
    const graph = soundGraph(plan([clip(image, 1), clip(videoWithAudio, 2), clip(silentVideo, 0.5)]));
    assertWellFormed(graph);
    // Only clip 1 has sound: its file is opened again for it, as input 3.
    assert.match(defining(graph, 'pic1'), /^\[3:a:0\]/);
    assert.doesNotMatch(graph, /\[[012]:a|pic0|pic2/, 'inputs without audio are never referenced');
    assert.equal(
      defining(graph, 'gap0'),
      `anullsrc=r=48000:cl=stereo,atrim=end_sample=48000,${FORMAT}[gap0]`,
    );
    // One second of silence, the clip, padded to the 3.5 s.
    assert.equal(
      defining(graph, 'picture_lane0'),
      '[gap0][pic1]concat=n=2:v=0:a=1,apad=whole_len=168000[picture_lane0]',
    );
  });

  it('rounds segment ends, not durations, so positions never drift', () => {
    const third = 1 / 3;
    const graph = soundGraph(
      plan([clip(videoWithAudio, third), clip(videoWithAudio, third), clip(videoWithAudio, third)]),
    );
    const lengths = [0, 1, 2].map((i) =>
      Number(/apad=whole_len=(\d+),asetpts/.exec(defining(graph, `pic${i}`))![1]),
    );
    assert.equal(
      lengths.reduce((a, b) => a + b),
      48_000,
    );
  });

  it('cross-fades the two clips of a transition over its length with equal-power curves, on two lanes', () => {
    const second = { ...clip(videoWithAudio, 3), transitionIn: { type: 'fade' as const, durationSec: 1 } };
    const third = {
      ...clip(videoWithAudio, 2),
      transitionIn: { type: 'wipeleft' as const, durationSec: 0.5 },
    };
    const graph = soundGraph(plan([clip(videoWithAudio, 2), second, third]));
    assertWellFormed(graph);
    // Starts 0, 1 and 3.5 s; the whole lasts 2 + 3 + 2 − 1 − 0.5 = 5.5 s.
    assert.deepEqual(fades(defining(graph, 'pic0')), ['in:0:480:tri', 'out:48000:48000:qsin']);
    assert.deepEqual(fades(defining(graph, 'pic1')), ['in:0:48000:qsin', 'out:120000:24000:qsin']);
    assert.deepEqual(fades(defining(graph, 'pic2')), ['in:0:24000:qsin', 'out:95520:480:tri']);
    // Clips 0 and 2 on one lane (silence between them), clip 1 on the other, both the whole 5.5 s.
    assert.equal(defining(graph, 'picture_lane0'), '[pic0][gap0][pic2]concat=n=3:v=0:a=1[picture_lane0]');
    assert.match(defining(graph, 'gap0'), /atrim=end_sample=72000,/);
    assert.equal(
      defining(graph, 'picture_lane1'),
      '[gap1][pic1]concat=n=2:v=0:a=1,apad=whole_len=264000[picture_lane1]',
    );
    assert.match(defining(graph, 'gap1'), /atrim=end_sample=48000,/);
    // Summed without normalising: amix divides by 2, volume=2 undoes it.
    assert.equal(defining(graph, 'mix'), '[picture_lane0][picture_lane1]amix=inputs=2,volume=2[mix]');
  });

  it('fades a first clip’s sound in from silence over its transition (a fade in from black)', () => {
    const first = {
      ...clip(videoWithAudio, 2),
      transitionIn: { type: 'fadeblack' as const, durationSec: 0.5 },
    };
    const graph = soundGraph(plan([first]));
    assert.deepEqual(fades(defining(graph, 'pic0')), ['in:0:24000:qsin', 'out:95520:480:tri']);
  });

  it('plays duration × speed source seconds with atempo stages within 0.5–2, pitch kept', () => {
    const fast = { ...clip(videoWithAudio, 2), speed: 2 };
    const graph = soundGraph(plan([fast]));
    const chain = defining(graph, 'pic0');
    // 4 s of source, then atempo, then exactly the 2 s of the timeline.
    assert.match(
      chain,
      /atrim=end_sample=192000,apad=whole_len=192000,atempo=2,atrim=end_sample=96000,apad=whole_len=96000,asetpts/,
    );
    assert.deepEqual(tempoFilters(4), ['atempo=2', 'atempo=2']);
    assert.deepEqual(tempoFilters(0.25), ['atempo=0.5', 'atempo=0.5']);
    assert.deepEqual(tempoFilters(0.5), ['atempo=0.5']);
    assert.deepEqual(tempoFilters(1.5), ['atempo=1.5']);
    assert.deepEqual(tempoFilters(3), ['atempo=1.732051', 'atempo=1.732051']);
    assert.deepEqual(tempoFilters(1), []);
  });

  it('opens a clip at a speed for duration × speed seconds of its source', () => {
    const args = inputArgs(
      plan([{ ...clip(videoWithAudio, 2), trimStartSec: 1, speed: 2 }, clip(videoWithAudio, 1.5)]),
    );
    const [fast, normal] = inputsOf(args);
    assert.deepEqual([optionOf(fast!, '-ss'), optionOf(fast!, '-t')], ['1', '4']);
    assert.equal(optionOf(normal!, '-t'), '1.5');
  });

  it('applies a clip’s own fades where they are longer than the de-click ramp, the ramp where they are not', () => {
    const faded = { ...clip(videoWithAudio, 4), fadeInSec: 1, fadeOutSec: 0.005 };
    assert.deepEqual(fades(defining(soundGraph(plan([faded])), 'pic0')), [
      'in:0:48000:tri',
      'out:191520:480:tri',
    ]);
  });

  it('applies a clip’s own fade on top of a cross-fade', () => {
    const faded = { ...clip(videoWithAudio, 4), fadeOutSec: 0.25 };
    const next = {
      ...clip(videoWithAudio, 2),
      transitionIn: { type: 'fade' as const, durationSec: 0.5 },
      fadeInSec: 0.25,
    };
    const graph = soundGraph(plan([faded, next]));
    assert.deepEqual(fades(defining(graph, 'pic0')), [
      'in:0:480:tri',
      'out:168000:24000:qsin',
      'out:180000:12000:tri',
    ]);
    assert.deepEqual(fades(defining(graph, 'pic1')), [
      'in:0:24000:qsin',
      'in:0:12000:tri',
      'out:95520:480:tri',
    ]);
  });
});

describe('soundGraph: the audio tracks and the mix', () => {
  it('places voice and music on lanes, with ramps, cut at the end, and ducks music under the voice bus', () => {
    const graph = soundGraph(
      plan([clip(videoWithAudio, 10)], [sound('voice', 1.5, 2, 1.2), sound('music', 0, 20, 0.3)]),
    );
    assertWellFormed(graph);
    const voice = defining(graph, 'voice0');
    assert.ok(voice.startsWith('[1:a:0]aresample=48000:async=1:first_pts=0,'));
    assert.match(voice, /atrim=end_sample=96000,apad=whole_len=96000,asetpts=N\/SR\/TB,volume=1\.2,/);
    assert.deepEqual(fades(voice), ['in:0:480:tri', 'out:95520:480:tri']);
    assert.equal(
      defining(graph, 'voice_lane0'),
      '[gap0][voice0]concat=n=2:v=0:a=1,apad=whole_len=480000[voice_lane0]',
    );
    assert.match(defining(graph, 'gap0'), /atrim=end_sample=72000,/);
    // Music is longer than the picture: cut at the end, with a de-click ramp at the cut; its own end ramp is
    // past the end and dropped.
    const music = defining(graph, 'music1');
    assert.ok(music.startsWith('[2:a:0]'));
    assert.match(music, /volume=0\.3,/);
    assert.deepEqual(fades(music), ['in:0:480:tri', 'out:479520:480:tri']);
    assert.match(music, /atrim=end_sample=480000,apad=whole_len=480000,asetpts/);
    assert.ok(chains(graph).includes('[voice_lane0]asplit=2[voice_out][voice_key]'));
    assert.match(defining(graph, 'music_ducked'), /^\[music1\]\[voice_key\]sidechaincompress=threshold=/);
    // amix divides by N on every build; volume=N undoes it (no `normalize=0` in the 2018 build).
    assert.equal(defining(graph, 'mix'), '[pic0][voice_out][music_ducked]amix=inputs=3,volume=3[mix]');
  });

  it('applies an audio clip’s own fades where they are longer than the ramp', () => {
    const faded: SoundClip = { ...sound('music', 0, 10), fadeInSec: 1, fadeOutSec: 2 };
    const graph = soundGraph(plan([clip(image, 10)], [faded]));
    assert.deepEqual(fades(defining(graph, 'music0')), ['in:0:48000:tri', 'out:384000:96000:tri']);
  });

  it('plays music at its volume when sidechaincompress is missing', () => {
    const graph = soundGraph(
      plan([clip(image, 10)], [sound('voice', 1, 2), sound('music', 0, 10)], {
        loudnorm: true,
        sidechaincompress: false,
      }),
    );
    assertWellFormed(graph);
    assert.doesNotMatch(graph, /sidechaincompress|asplit/);
    assert.equal(defining(graph, 'mix'), '[voice_lane0][music1]amix=inputs=2,volume=2[mix]');
  });

  it('joins a track’s clips on one lane when they do not overlap, on two when they do; sfx straight into the mix', () => {
    const graph = soundGraph(
      plan(
        [clip(image, 10)],
        [
          sound('voice', 0, 2),
          sound('sfx', 3, 1),
          sound('voice', 5, 2),
          sound('voice', 6, 1),
          sound('music', 0, 10),
        ],
      ),
    );
    assertWellFormed(graph);
    assert.equal(
      defining(graph, 'voice_lane0'),
      '[voice0][gap0][voice2]concat=n=3:v=0:a=1,apad=whole_len=480000[voice_lane0]',
    );
    assert.equal(
      defining(graph, 'voice_lane1'),
      '[gap1][voice3]concat=n=2:v=0:a=1,apad=whole_len=480000[voice_lane1]',
    );
    assert.equal(defining(graph, 'voice'), '[voice_lane0][voice_lane1]amix=inputs=2,volume=2[voice]');
    assert.ok(chains(graph).includes('[voice]asplit=2[voice_out][voice_key]'));
    assert.equal(defining(graph, 'mix'), '[voice_out][sfx_lane0][music_ducked]amix=inputs=3,volume=3[mix]');
  });

  it('skips sound clips that start after the picture ends or have no audio', () => {
    const mute: SoundClip = { ...sound('sfx', 1, 1), source: { ...song, audio: undefined } };
    const graph = soundGraph(plan([clip(videoWithAudio, 5)], [sound('sfx', 5, 2), mute]));
    assertWellFormed(graph);
    assert.doesNotMatch(graph, /\[1:a|\[2:a|amix/);
    assert.equal(programmeHasSound(plan([clip(image, 5)], [sound('sfx', 5, 2), mute])), false);
    assert.equal(programmeHasSound(plan([clip(image, 5)], [sound('sfx', 4, 2)])), true);
  });

  it('gives silence of the whole duration when there is no audio at all', () => {
    const graph = soundGraph(
      plan([clip(image, 2), clip(silentVideo, 1.5)], [{ ...sound('music', 0, 3), source: image }]),
    );
    assert.equal(graph, `anullsrc=r=48000:cl=stereo,atrim=end_sample=168000,${FORMAT}[aout]`);
  });

  it('refuses a timeline without picture', () => {
    assert.throws(() => soundGraph(plan([], [sound('music', 0, 3)])), RangeError);
  });
});

describe('the loudness stage', () => {
  const master = (p: ExportPlan) => defining(soundGraph(p), 'aout');
  const withMeasure = (p: ExportPlan, m: MeasuredLoudness = measured): ExportPlan => ({
    ...p,
    measuredLoudness: m,
  });

  it('normalises a measured programme with one gain at 48 kHz where loudnorm’s linear mode would', () => {
    // −14 − (−23.4) = 9.4 dB lifts the true peak to −2.7 dBTP, under the ceiling.
    assert.match(
      master(withMeasure(plan([clip(videoWithAudio, 2)]))),
      /atrim=end_sample=96000,volume=9\.4dB,aformat=/,
    );
    // A wide programme is still lifted linearly: the target range follows the measured one (up to 20 LU).
    assert.match(
      master(withMeasure(plan([clip(videoWithAudio, 2)]), { ...measured, rangeLu: 14.26 })),
      /atrim=end_sample=96000,volume=9\.4dB,aformat=/,
    );
    // A quieter programme is lowered the same way.
    assert.match(
      master(
        withMeasure(plan([clip(videoWithAudio, 2)]), { ...measured, integratedLufs: -9.05, truePeakDbtp: 0 }),
      ),
      /volume=-4\.95dB,/,
    );
    assert.doesNotMatch(soundGraph(withMeasure(plan([clip(videoWithAudio, 2)]))), /loudnorm/);
  });

  it('leaves the gain to loudnorm’s dynamic mode where one gain would lift the peak over the ceiling or the range is too wide', () => {
    // 9.4 dB on a peak of −9.5 dBTP would reach −0.1 dBTP.
    const peaky = { ...measured, truePeakDbtp: -9.5 };
    assert.match(
      master(withMeasure(plan([clip(videoWithAudio, 2)]), peaky)),
      /atrim=end_sample=96000,loudnorm=I=-14:TP=-1:LRA=11:measured_I=-23\.4:measured_TP=-9\.5:measured_LRA=4\.2:measured_thresh=-33\.6:print_format=none,aresample=48000,aformat=/,
    );
    // A steady programme measures a range of 0, which loudnorm would read as none given.
    assert.match(
      master(withMeasure(plan([clip(videoWithAudio, 2)]), { ...peaky, rangeLu: 0 })),
      /:measured_LRA=0\.01:/,
    );
    // A wide programme keeps its range as the target, up to 20 LU; wider than that, it cannot be linear.
    assert.match(
      master(withMeasure(plan([clip(videoWithAudio, 2)]), { ...peaky, rangeLu: 14.26 })),
      /:LRA=14\.3:/,
    );
    assert.match(
      master(withMeasure(plan([clip(videoWithAudio, 2)]), { ...measured, rangeLu: 31 })),
      /loudnorm=.*:LRA=20:/,
    );
  });

  it('decides linear as loudnorm does, on the options’ rounded values, the ceiling included', () => {
    // Exactly at the ceiling: −14 − (−20) = 6 dB on −7 dBTP gives −1 dBTP, which loudnorm accepts.
    const atCeiling = { ...measured, integratedLufs: -20.004, truePeakDbtp: -7.001 };
    assert.equal(linearGainDb(atCeiling, '11'), 6);
    assert.equal(linearGainDb({ ...atCeiling, truePeakDbtp: -6.99 }, '11'), undefined);
    assert.equal(linearGainDb({ ...measured, rangeLu: 11.01 }, '11'), undefined);
    assert.equal(linearGainDb({ ...measured, rangeLu: 11 }, '11')?.toFixed(2), '9.40');
  });

  it('only limits near-silence, a preview, an unmeasured plan and an ffmpeg without loudnorm', () => {
    const limited = /atrim=end_sample=96000,alimiter=limit=0\.84:attack=1:release=50:level=0,aformat=/;
    const base = plan([clip(videoWithAudio, 2)]);
    const cases: [string, ExportPlan][] = [
      ['near-silence', withMeasure(base, { ...measured, integratedLufs: -60.2 })],
      ['silence', withMeasure(base, { ...measured, integratedLufs: -Infinity, truePeakDbtp: -Infinity })],
      ['preview', withMeasure({ ...base, output: { ...base.output, quality: 'preview' } })],
      ['unmeasured', base],
      ['no loudnorm', withMeasure({ ...base, filters: { loudnorm: false, sidechaincompress: false } })],
    ];
    for (const [name, p] of cases) {
      assert.match(master(p), limited, name);
      assert.doesNotMatch(soundGraph(p), /loudnorm/, name);
    }
    // Just above the near-silence bound, a programme is normalised.
    assert.match(master(withMeasure(base, { ...measured, integratedLufs: -49.9 })), /loudnorm=I=-14:/);
  });

  it('measures the same mix as the render, into loudnorm’s JSON on a null output', () => {
    const p = plan([clip(videoWithAudio, 2)], [sound('music', 0, 2)]);
    const measure = measureGraph(p);
    const render = soundGraph(withMeasure(p));
    const mixOf = (graph: string) => chains(graph).filter((c) => !/\[(aout|measured)\]$/.test(c));
    assert.deepEqual(mixOf(measure), mixOf(render));
    assert.equal(
      defining(measure, 'measured'),
      '[mix]apad=whole_len=96000,atrim=end_sample=96000,loudnorm=I=-14:TP=-1:LRA=11:measured_I=-14:measured_TP=-99:' +
        'measured_LRA=0.01:measured_thresh=-24:linear=true:print_format=json[measured]',
    );
    const args = measureCommand(p);
    assert.deepEqual(args.slice(0, 6), ['-hide_banner', '-nostdin', '-y', '-nostats', '-progress', 'pipe:1']);
    assert.equal(optionOf(args, '-filter_complex'), measure);
    assert.deepEqual(args.slice(-5), ['-map', '[measured]', '-f', 'null', '-']);
  });

  it('measures a final export with sound; not a preview, not a silent one, not without loudnorm', () => {
    const base = plan([clip(videoWithAudio, 2)]);
    assert.equal(needsMeasuring(base), true);
    assert.equal(needsMeasuring({ ...base, output: { ...base.output, quality: 'final' } }), true);
    assert.equal(needsMeasuring({ ...base, output: { ...base.output, quality: 'preview' } }), false);
    assert.equal(needsMeasuring(plan([clip(image, 2)])), false);
    assert.equal(needsMeasuring({ ...base, filters: { loudnorm: false, sidechaincompress: true } }), false);
  });

  it('reads loudnorm’s JSON from the end of the log, silence as −inf', () => {
    const log = `Stream mapping:\n  Stream #0:0 (aac) -> loudnorm\n[Parsed_loudnorm_7 @ 0x55d0c8a3c2c0] \n{\n\t"input_i" : "-27.61",\n\t"input_tp" : "-16.02",\n\t"input_lra" : "0.00",\n\t"input_thresh" : "-37.61",\n\t"output_i" : "-14.06",\n\t"output_tp" : "-2.46",\n\t"output_lra" : "0.00",\n\t"output_thresh" : "-24.06",\n\t"normalization_type" : "dynamic",\n\t"target_offset" : "0.06"\n}\nvideo:0kB audio:0kB subtitle:0kB other streams:0kB global headers:0kB muxing overhead: unknown\n`;
    assert.deepEqual(parseLoudnormJson(log), {
      integratedLufs: -27.61,
      truePeakDbtp: -16.02,
      rangeLu: 0,
      thresholdLufs: -37.61,
      offsetLu: 0.06,
    });
    const silent = log.replace('"-27.61"', '"-inf"').replace('"-16.02"', '"-inf"').replace('"0.06"', '"inf"');
    const m = parseLoudnormJson(silent);
    assert.equal(m.integratedLufs, -Infinity);
    assert.equal(m.offsetLu, Infinity);
    assert.throws(() => parseLoudnormJson('Conversion failed!\n'), SyntaxError);
    assert.throws(() => parseLoudnormJson(log.replace('"-27.61"', '"loud"')), SyntaxError);
  });
});

// Excerpts of `ffmpeg -hide_banner -filters`: 5.1 (Debian 12) and the registry's 2018 static build, verbatim.
const FFMPEG_5_FILTERS = `Filters:
  T.. = Timeline support
  .S. = Slice threading
  ..C = Command support
  A = Audio input/output
  V = Video input/output
  N = Dynamic number and/or type of input/output
  | = Source or sink filter
 ... abench            A->A       Benchmark part of a filtergraph.
 ..C acompressor       A->A       Audio compressor.
 T.C adelay            A->A       Delay one or more audio channels.
 ..C amix              N->A       Audio mixing.
 ... loudnorm          A->A       EBU R128 loudness normalization
 ..C sidechaincompress AA->A      Sidechain compressor.
 ... anullsrc          |->A       Null audio source, return empty audio frames.
 ... nullsink          V->|       Do absolutely nothing with the input video.
 ..C concat            N->N       Concatenate audio and video streams.
 ... buffersink        V->|       Buffer video frames, and make them available to the end of the filter graph.
`;
const FFMPEG_2018_FILTERS = `Filters:
  T.. = Timeline support
  .S. = Slice threading
  ..C = Command support
  A = Audio input/output
  V = Video input/output
  N = Dynamic number and/or type of input/output
  | = Source or sink filter
 ... abench            A->A       Benchmark part of a filtergraph.
 ... acompressor       A->A       Audio compressor.
 ... amix              N->A       Audio mixing.
 T.C volume            A->A       Change input volume.
 ... anullsrc          |->A       Null audio source, return empty audio frames.
 ... showvolume        A->V       Convert input audio volume to video output.
 ... abuffersink       A->|       Buffer audio frames, and make them available to the end of the filter graph.
`;

describe('parseFilterList', () => {
  it('reads filter names from ffmpeg 5 output, skipping the legend', () => {
    const names = parseFilterList(FFMPEG_5_FILTERS);
    assert.deepEqual([...names].sort(), [
      'abench',
      'acompressor',
      'adelay',
      'amix',
      'anullsrc',
      'buffersink',
      'concat',
      'loudnorm',
      'nullsink',
      'sidechaincompress',
    ]);
    assert.deepEqual(filterSupport(names), { loudnorm: true, sidechaincompress: true });
  });

  it('reads the 2018 build’s output; an excerpt without loudnorm and sidechaincompress disables both', () => {
    const names = parseFilterList(FFMPEG_2018_FILTERS);
    assert.deepEqual([...names].sort(), [
      'abench',
      'abuffersink',
      'acompressor',
      'amix',
      'anullsrc',
      'showvolume',
      'volume',
    ]);
    assert.deepEqual(filterSupport(names), { loudnorm: false, sidechaincompress: false });
  });

  it('finds nothing in unrelated text', () => {
    assert.equal(parseFilterList('ffmpeg: command not found\n').size, 0);
  });
});
