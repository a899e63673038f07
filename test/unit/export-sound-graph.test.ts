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
import { soundGraph } from '../../workers/export/sound-graph.ts';

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

describe('soundGraph', () => {
  it('places each picture clip’s audio by concatenating exact-length segments', () => {
    const graph = soundGraph(plan([clip(videoWithAudio, 2, 0.5), clip(videoWithAudio, 1.5)], [], all));
    assertWellFormed(graph);
    const first = defining(graph, 'pic0');
    assert.ok(first.startsWith('[0:a:0]aresample=48000:async=1:first_pts=0,aformat=sample_fmts=fltp'));
    assert.match(first, /volume=0\.5,atrim=end_sample=96000,apad=whole_len=96000\[pic0\]$/);
    assert.match(defining(graph, 'pic1'), /^\[1:a:0\].*atrim=end_sample=72000,apad=whole_len=72000\[pic1\]$/);
    assert.equal(defining(graph, 'picture'), '[pic0][pic1]concat=n=2:v=0:a=1[picture]');
    // A single stream: no amix; cut to 3.5 s, normalised, back to 48 kHz, cut again.
    assert.doesNotMatch(graph, /amix/);
    assert.equal(
      defining(graph, 'aout'),
      '[picture]apad=whole_len=168000,atrim=end_sample=168000,loudnorm=I=-14:TP=-1.5:LRA=11,aresample=48000,' +
        'aformat=sample_fmts=fltp:sample_rates=48000:channel_layouts=stereo,apad=whole_len=168000,atrim=end_sample=168000[aout]',
    );
  });

  it('fills a picture clip without audio (image, silent video) with silence of its duration', () => {
    const graph = soundGraph(plan([clip(image, 1), clip(videoWithAudio, 2), clip(silentVideo, 0.5)]));
    assertWellFormed(graph);
    assert.match(defining(graph, 'pic0'), /^anullsrc=r=48000:cl=stereo,atrim=end_sample=48000,aformat=/);
    assert.match(defining(graph, 'pic1'), /^\[1:a:0\]/);
    assert.match(defining(graph, 'pic2'), /^anullsrc=r=48000:cl=stereo,atrim=end_sample=24000,aformat=/);
    assert.doesNotMatch(graph, /\[0:a|\[2:a/, 'inputs without audio are never referenced');
    assert.equal(defining(graph, 'picture'), '[pic0][pic1][pic2]concat=n=3:v=0:a=1[picture]');
  });

  it('rounds segment ends, not durations, so positions never drift', () => {
    const third = 1 / 3;
    const graph = soundGraph(
      plan([clip(videoWithAudio, third), clip(videoWithAudio, third), clip(videoWithAudio, third)]),
    );
    const lengths = [0, 1, 2].map((i) => Number(/whole_len=(\d+)\[/.exec(defining(graph, `pic${i}`))![1]));
    assert.equal(
      lengths.reduce((a, b) => a + b),
      48_000,
    );
  });

  it('delays, trims and pads voice and music, and ducks music under the voice bus', () => {
    const graph = soundGraph(
      plan([clip(videoWithAudio, 10)], [sound('voice', 1.5, 2, 1.2), sound('music', 0, 20, 0.3)]),
    );
    assertWellFormed(graph);
    const voice = defining(graph, 'voice0');
    assert.ok(voice.startsWith('[1:a:0]aresample=48000:async=1:first_pts=0,'));
    assert.match(
      voice,
      /volume=1\.2,atrim=end_sample=96000,apad=whole_len=96000,adelay=delays=72000S\|72000S,apad=whole_len=480000\[voice0\]$/,
    );
    // Music is longer than the picture: cut at the end, no delay.
    const music = defining(graph, 'music1');
    assert.ok(music.startsWith('[2:a:0]'));
    assert.match(music, /volume=0\.3,atrim=end_sample=480000,apad=whole_len=480000\[music1\]$/);
    assert.doesNotMatch(music, /adelay/);
    assert.ok(chains(graph).includes('[voice0]asplit=2[voice_out][voice_key]'));
    assert.match(defining(graph, 'music_ducked'), /^\[music1\]\[voice_key\]sidechaincompress=threshold=/);
    // amix divides by N on every build; volume=N undoes it (no `normalize=0` in the 2018 build).
    assert.equal(defining(graph, 'mix'), '[pic0][voice_out][music_ducked]amix=inputs=3,volume=3[mix]');
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
    assert.equal(defining(graph, 'mix'), '[voice0][music1]amix=inputs=2,volume=2[mix]');
  });

  it('mixes several clips of a track into one bus, sfx straight into the mix', () => {
    const graph = soundGraph(
      plan(
        [clip(image, 10)],
        [sound('voice', 0, 2), sound('sfx', 3, 1), sound('voice', 5, 2), sound('music', 0, 10)],
      ),
    );
    assertWellFormed(graph);
    assert.equal(defining(graph, 'voice'), '[voice0][voice2]amix=inputs=2,volume=2[voice]');
    assert.ok(chains(graph).includes('[voice]asplit=2[voice_out][voice_key]'));
    assert.equal(defining(graph, 'mix'), '[voice_out][sfx1][music_ducked]amix=inputs=3,volume=3[mix]');
  });

  it('skips sound clips that start after the picture ends or have no audio', () => {
    const mute: SoundClip = { ...sound('sfx', 1, 1), source: { ...song, audio: undefined } };
    const graph = soundGraph(plan([clip(videoWithAudio, 5)], [sound('sfx', 5, 2), mute]));
    assertWellFormed(graph);
    assert.doesNotMatch(graph, /\[1:a|\[2:a|amix/);
  });

  it('limits instead of normalising when loudnorm is missing', () => {
    const graph = soundGraph(
      plan([clip(videoWithAudio, 2)], [], { loudnorm: false, sidechaincompress: false }),
    );
    assertWellFormed(graph);
    assert.doesNotMatch(graph, /loudnorm/);
    assert.match(
      defining(graph, 'aout'),
      /atrim=end_sample=96000,alimiter=limit=0\.84:attack=1:release=50:level=0,aformat=/,
    );
  });

  it('gives silence of the whole duration when there is no audio at all', () => {
    const graph = soundGraph(
      plan([clip(image, 2), clip(silentVideo, 1.5)], [{ ...sound('music', 0, 3), source: image }]),
    );
    assert.equal(
      graph,
      'anullsrc=r=48000:cl=stereo,atrim=end_sample=168000,aformat=sample_fmts=fltp:sample_rates=48000:channel_layouts=stereo[aout]',
    );
  });

  it('refuses a timeline without picture', () => {
    assert.throws(() => soundGraph(plan([], [sound('music', 0, 3)])), RangeError);
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
