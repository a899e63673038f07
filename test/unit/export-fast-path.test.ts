import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  concatList,
  concatQuote,
  fastPathBlockers,
  fastPathCommands,
  fastPathEligible,
} from '../../workers/export/fast-path.ts';
import { mixdownCommand, soundFromMixdownCommand } from '../../workers/export/mixdown.ts';
import { mixdownGraph } from '../../workers/export/sound-graph.ts';
import {
  type ExportPlan,
  type ExportSource,
  type PictureClip,
  type SoundClip,
} from '../../workers/export/work-order.ts';
import { inputsOf, optionOf } from '../helpers/ffmpeg-run.ts';

const source = (path: string, overrides: Partial<ExportSource> = {}): ExportSource => ({
  path,
  demuxer: 'mov',
  kind: 'video',
  durationSec: 2,
  video: { codec: 'h264', width: 1280, height: 720, fps: 30, pixFmt: 'yuv420p' },
  audio: { codec: 'aac', sampleRate: 48_000, channels: 2 },
  ...overrides,
});

const whole = (src: ExportSource): PictureClip => ({
  source: src,
  trimStartSec: 0,
  durationSec: src.durationSec ?? 2,
  volume: 1,
});

function plan(picture: PictureClip[], sounds: SoundClip[] = []): ExportPlan {
  return {
    picture,
    sounds,
    output: { width: 1280, height: 720, fps: 30, fit: 'fit', path: '/out/export.mp4' },
    filters: { loudnorm: true, sidechaincompress: true },
  };
}

const eligible = () => plan([whole(source('/staged/a.mp4')), whole(source('/staged/b.mp4'))]);

/** The plan with clip 1 changed by `change`. */
function withSecond(change: (clip: PictureClip) => PictureClip): ExportPlan {
  const p = eligible();
  return { ...p, picture: [p.picture[0]!, change(p.picture[1]!)] };
}

const video = (clip: PictureClip, v: Partial<NonNullable<ExportSource['video']>>): PictureClip => ({
  ...clip,
  source: { ...clip.source, video: { ...clip.source.video!, ...v } },
});

describe('export fast path', () => {
  it('takes whole h264 yuv420p clips of the output size and rate that have their own audio', () => {
    assert.deepEqual(fastPathBlockers(eligible()), []);
    assert.equal(fastPathEligible(eligible()), true);
    // Within tolerance: a frame rate 0.005 off, a duration a third of a frame short of the container's.
    const close = withSecond((clip) => ({ ...video(clip, { fps: 30.005 }), durationSec: 2 - 0.01 }));
    assert.deepEqual(fastPathBlockers(close), []);
  });

  it('names every reason a clip blocks the fast path', () => {
    const cases: Array<[string, ExportPlan, RegExp]> = [
      ['an image', withSecond((c) => ({ ...c, source: { ...c.source, kind: 'image' } })), /not a video/],
      ['a start trim', withSecond((c) => ({ ...c, trimStartSec: 0.5 })), /trimmed at the start/],
      ['an end trim', withSecond((c) => ({ ...c, durationSec: 1.9 })), /not the whole source/],
      [
        'no source duration',
        withSecond((c) => ({ ...c, source: { ...c.source, durationSec: null } })),
        /not the whole source \(2 s of \? s\)/,
      ],
      ['another codec', withSecond((c) => video(c, { codec: 'hevc' })), /codec hevc/],
      ['another width', withSecond((c) => video(c, { width: 1920 })), /size 1920x720/],
      ['another height', withSecond((c) => video(c, { height: 1080 })), /size 1280x1080/],
      ['29.97 fps', withSecond((c) => video(c, { fps: 29.97 })), /frame rate 29.97/],
      ['another pixel format', withSecond((c) => video(c, { pixFmt: 'yuv420p10le' })), /pixel format/],
      ['another demuxer', withSecond((c) => ({ ...c, source: { ...c.source, demuxer: 'mp3' } })), /demuxer/],
    ];
    for (const [name, p, reason] of cases) {
      const blockers = fastPathBlockers(p);
      assert.equal(blockers.length, 1, `${name}: ${blockers.join('; ')}`);
      assert.match(blockers[0]!, /^clip 1: /, name);
      assert.match(blockers[0]!, reason, name);
      assert.equal(fastPathEligible(p), false, name);
    }
    const { audio: _audio, ...silent } = source('/staged/silent.mp4');
    assert.deepEqual(fastPathBlockers(plan([whole(silent)])), ['clip 0: no audio of its own']);
    assert.deepEqual(fastPathBlockers(plan([])), ['no picture clips']);
    // Every reason of a clip, not only the first.
    assert.equal(
      fastPathBlockers(withSecond((c) => video({ ...c, trimStartSec: 1 }, { fps: 25 }))).length,
      2,
    );
  });

  it('quotes list paths so single quotes and colons stay part of the file name', () => {
    assert.equal(concatQuote('/staged/a.mp4'), "'file:/staged/a.mp4'");
    assert.equal(concatQuote("/staged/it's a:clip.mp4"), "'file:/staged/it'\\''s a:clip.mp4'");
    assert.equal(concatQuote("/a/''"), "'file:/a/'\\'''\\'''");
    assert.throws(() => concatQuote('/staged/a.mp4\nfile /etc/passwd'), RangeError);
    assert.throws(() => concatQuote('/staged/a.mp4\r'), RangeError);
    assert.throws(() => concatQuote('/staged/a\0.mp4'), RangeError);
  });

  it('lists every clip from its start for its frame-exact duration', () => {
    const p = plan([whole(source("/s/o'k.mp4")), whole(source('/s/b.mp4', { durationSec: 1.01 }))]);
    assert.equal(
      concatList(p),
      [
        'ffconcat version 1.0',
        "file 'file:/s/o'\\''k.mp4'",
        'inpoint 0',
        'duration 2',
        "file 'file:/s/b.mp4'",
        'inpoint 0',
        // 1.01 s at 30 fps on the timeline from 2 s: round(90.3) − 60 = 30 frames.
        'duration 1',
        '',
      ].join('\n'),
    );
  });

  it('copies the listed video to a file, then muxes it with the rendered sound', () => {
    const voice: SoundClip = {
      source: {
        path: '/staged/voice.mp3',
        demuxer: 'mp3',
        kind: 'audio',
        durationSec: 3,
        audio: { codec: 'mp3', sampleRate: 44_100, channels: 1 },
      },
      track: 'voice',
      startSec: 0.5,
      trimStartSec: 0,
      durationSec: 3,
      volume: 1,
    };
    const p = { ...eligible(), sounds: [voice] };
    const files = { concatListPath: '/tmp/x/list.ffconcat', videoOnlyPath: '/tmp/x/video.mp4' };
    const { concatList: list, copy } = fastPathCommands(p, files);
    assert.equal(list, concatList(p));

    // The copy: the list through the concat demuxer, its video copied to the working file, no progress.
    const [concat, ...more] = inputsOf(copy);
    assert.deepEqual(more, []);
    assert.deepEqual(
      [concat!, copy.slice(concat!.length)],
      [
        [
          ...['-hide_banner', '-nostdin', '-y', '-nostats', '-protocol_whitelist', 'file,pipe'],
          ...[
            '-safe',
            '0',
            '-format_whitelist',
            'concat,mov',
            '-f',
            'concat',
            '-i',
            'file:/tmp/x/list.ffconcat',
          ],
        ],
        [
          ...['-map', '0:v:0', '-c', 'copy', '-map_metadata', '-1', '-map_chapters', '-1'],
          ...['-f', 'mp4', 'file:/tmp/x/video.mp4'],
        ],
      ],
    );

    // The sound beside it: the re-encode path's inputs and numbering (two picture clips, one sound, the clips'
    // own sound) mixed down to PCM and measured, then encoded from the PCM as every export's sound.
    const mixdown = mixdownCommand(p, '/tmp/x/mix.wav', true);
    const all = inputsOf(mixdown);
    assert.deepEqual(
      all.map((input) => [optionOf(input, '-f'), optionOf(input, '-i')]),
      [
        ['mov', 'file:/staged/a.mp4'],
        ['mov', 'file:/staged/b.mp4'],
        ['mp3', 'file:/staged/voice.mp3'],
        ['mov', 'file:/staged/a.mp4'],
        ['mov', 'file:/staged/b.mp4'],
      ],
    );
    for (const input of all) assert.equal(optionOf(input, '-protocol_whitelist'), 'file,pipe');
    assert.equal(optionOf(mixdown, '-filter_complex'), mixdownGraph(p, true));
    const outputs = mixdown.slice(mixdown.lastIndexOf('-i') + 2);
    assert.deepEqual(outputs.slice(-8), [
      '-f',
      'wav',
      'file:/tmp/x/mix.wav',
      '-map',
      '[measured]',
      '-f',
      'null',
      '-',
    ]);
    assert.equal(optionOf(outputs, '-c:a'), 'pcm_f32le');
    const sound = soundFromMixdownCommand(p, '/tmp/x/mix.wav', '/tmp/x/sound.mp4');
    assert.deepEqual(
      inputsOf(sound).map((input) => [optionOf(input, '-f'), optionOf(input, '-i')]),
      [['wav', 'file:/tmp/x/mix.wav']],
    );
    for (const [flag, value] of [
      ['-c:a', 'aac'],
      ['-ar', '48000'],
      ['-ac', '2'],
      ['-b:a', '192k'],
      ['-movflags', '+faststart'],
      ['-map_metadata', '-1'],
      ['-t', '4'],
      ['-f', 'mp4'],
    ]) {
      assert.equal(optionOf(sound.slice(sound.lastIndexOf('-i') + 2), flag!), value, flag);
    }
    assert.equal(sound.at(-1), 'file:/tmp/x/sound.mp4');
    for (const args of [copy, mixdown, sound])
      assert.ok(!args.includes('libx264'), 'nothing re-encodes the video');
  });

  it('refuses a plan that is not eligible', () => {
    const trimmed = withSecond((c) => ({ ...c, trimStartSec: 1 }));
    assert.throws(
      () => fastPathCommands(trimmed, { concatListPath: '/l', videoOnlyPath: '/v' }),
      /clip 1: trimmed at the start/,
    );
  });
});
