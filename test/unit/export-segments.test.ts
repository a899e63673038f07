import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { droppableSec, pictureDurationSec } from '../../workers/export/picture-graph.ts';
import {
  encoderThreads,
  joinCommand,
  segmentCommand,
  segmentConcatList,
  segmentGraph,
  segmentedCommands,
  soundKey,
} from '../../workers/export/segment-command.ts';
import {
  canSegment,
  canonicalJson,
  planSegments,
  segmentBlockers,
  type PictureSegment,
} from '../../workers/export/segments.ts';
import type { ExportPlan, ExportSource, PictureClip, TextOverlay } from '../../workers/export/work-order.ts';
import { optionOf } from '../helpers/ffmpeg-run.ts';

const video: ExportSource = {
  path: '/staged/a/clip.mp4',
  contentId: 'media-clip',
  demuxer: 'mov',
  kind: 'video',
  durationSec: 20,
  video: { codec: 'h264', width: 1920, height: 1080, fps: 25, pixFmt: 'yuv420p' },
  audio: { codec: 'aac', sampleRate: 44_100, channels: 2 },
};
const image: ExportSource = {
  path: '/staged/a/still.png',
  contentId: 'media-still',
  demuxer: 'png_pipe',
  kind: 'image',
  durationSec: null,
};

const clip = (source: ExportSource, durationSec: number, more: Partial<PictureClip> = {}): PictureClip => ({
  source,
  trimStartSec: 0,
  durationSec,
  volume: 1,
  ...more,
});

const text = (startSec: number, durationSec: number, words = 'HELLO'): TextOverlay => ({
  text: words,
  style: 'title',
  position: 'center',
  color: '#FFFFFF',
  background: 'none',
  startSec,
  durationSec,
  fadeInSec: 0.2,
  fadeOutSec: 0.2,
});

function plan(picture: PictureClip[], more: Partial<ExportPlan> = {}): ExportPlan {
  return {
    picture,
    sounds: [],
    output: { width: 1280, height: 720, fps: 30, fit: 'fit', path: '/out/export.mp4' },
    filters: { loudnorm: true, sidechaincompress: true },
    ...more,
  };
}

/** Each segment as `kind start-end clip:from-to…` for compact comparison. */
const shape = (segments: PictureSegment[]): string[] =>
  segments.map(
    (s) =>
      `${s.kind} ${s.startFrame}-${s.endFrame} ${s.parts.map((p) => `${p.clip}:${p.fromFrame}-${p.toFrame}`).join(' ')}`,
  );

/** Frames of the whole render (its exact duration on the frame grid). */
const wholeFrames = (p: ExportPlan): number => Math.round(pictureDurationSec(p) * p.output.fps);
const summed = (segments: PictureSegment[]): number =>
  segments.reduce((sum, s) => sum + s.endFrame - s.startFrame, 0);

/** Four clips: a still, a video at speed 2 that comes in by a fade, a moving still by a cut, a video by a wipe. */
const fourClips = (): PictureClip[] => [
  clip(image, 2),
  clip(video, 2, { speed: 2, trimStartSec: 1, transitionIn: { type: 'fade', durationSec: 0.5 } }),
  clip(image, 2, { motion: 'zoom_in' }),
  clip(video, 2, { trimStartSec: 5, transitionIn: { type: 'wipeleft', durationSec: 1 } }),
];

describe('export segments', () => {
  it('splits a timeline of cuts at each cut, on the rounded frame grid, summing to the whole', () => {
    const p = plan([clip(image, 1.01), clip(image, 1.01), clip(image, 1.01)]);
    const segments = planSegments(p);
    assert.deepEqual(shape(segments), ['body 0-30 0:0-30', 'body 30-61 1:0-31', 'body 61-91 2:0-30']);
    assert.equal(summed(segments), wholeFrames(p));
    assert.equal(summed(segments), 91);
  });

  it('makes each transition a segment of the tail of one clip and the head of the next', () => {
    const p = plan(fourClips());
    const segments = planSegments(p);
    assert.deepEqual(shape(segments), [
      'body 0-45 0:0-45',
      'transition 45-60 0:45-60 1:0-15',
      'body 60-105 1:15-60',
      'body 105-135 2:0-30',
      'transition 135-165 2:30-60 3:0-30',
      'body 165-195 3:30-60',
    ]);
    assert.equal(summed(segments), wholeFrames(p));
    assert.equal(summed(segments), 240 - 15 - 30);
    // Contiguous, in order.
    segments.slice(1).forEach((s, i) => assert.equal(s.startFrame, segments[i]!.endFrame));
  });

  it('keeps the first clip’s fade from black inside its body (it does not shorten the video)', () => {
    const p = plan([clip(image, 2, { transitionIn: { type: 'fade', durationSec: 0.5 } }), clip(image, 1)]);
    assert.deepEqual(shape(planSegments(p)), ['body 0-60 0:0-60', 'body 60-90 1:0-30']);
  });

  it('lists a text that spans a cut on both segments, and only on those', () => {
    const p = plan([clip(image, 1), clip(image, 1), clip(image, 1)], { texts: [text(0.8, 0.7)] });
    assert.deepEqual(
      planSegments(p).map((s) => s.texts),
      [[0], [0], []],
    );
    // A text ending exactly on a cut's first frame is drawn on it (`between` is inclusive).
    const edge = plan([clip(image, 1), clip(image, 1)], { texts: [text(0.5, 0.5)] });
    assert.deepEqual(
      planSegments(edge).map((s) => s.texts),
      [[0], [0]],
    );
    const before = plan([clip(image, 1), clip(image, 1)], { texts: [text(0.2, 0.7)] });
    assert.deepEqual(
      planSegments(before).map((s) => s.texts),
      [[0], []],
    );
  });

  it('places speed and motion clips by their time on the timeline, and keys them by it', () => {
    const p = plan([clip(video, 1.5, { speed: 2 }), clip(image, 1.5, { motion: 'pan_left' })]);
    assert.deepEqual(shape(planSegments(p)), ['body 0-45 0:0-45', 'body 45-90 1:0-45']);
    const base = planSegments(p).map((s) => s.key);
    const faster = planSegments(plan([clip(video, 1.5, { speed: 3 }), p.picture[1]!])).map((s) => s.key);
    assert.notEqual(faster[0], base[0]);
    assert.equal(faster[1], base[1]);
    const zoom = planSegments(plan([p.picture[0]!, clip(image, 1.5, { motion: 'zoom_out' })])).map(
      (s) => s.key,
    );
    assert.equal(zoom[0], base[0]);
    assert.notEqual(zoom[1], base[1]);
  });

  it('changes only the keys of the segments touching a clip whose trim changes', () => {
    const base = planSegments(plan(fourClips()));
    const clips = fourClips();
    clips[3] = { ...clips[3]!, trimStartSec: 6 };
    const trimmed = planSegments(plan(clips));
    const touches = (s: PictureSegment) => s.parts.some((part) => part.clip === 3);
    base.forEach((s, i) => {
      if (touches(s)) assert.notEqual(trimmed[i]!.key, s.key, `segment ${i} touches clip 3`);
      else assert.equal(trimmed[i]!.key, s.key, `segment ${i} does not touch clip 3`);
    });
    assert.equal(base.filter(touches).length, 2);
    // Clip 1's trim: its transition in, its body; not the segments of clips 0, 2, 3.
    const other = fourClips();
    other[1] = { ...other[1]!, trimStartSec: 2 };
    const changed = planSegments(plan(other)).map((s, i) => s.key !== base[i]!.key);
    assert.deepEqual(changed, [false, true, true, false, false, false]);
  });

  it('keeps every key when nothing that decides pixels changes', () => {
    const base = planSegments(plan(fourClips())).map((s) => s.key);
    const same = (p: ExportPlan, why: string) =>
      assert.deepEqual(
        planSegments(p).map((s) => s.key),
        base,
        why,
      );
    // Staged elsewhere (another export's folder), same content.
    const restaged = fourClips().map((c) => ({
      ...c,
      source: { ...c.source, path: `/other${c.source.path}` },
    }));
    same(plan(restaged), 'a new staging path with the same content id');
    same(plan(fourClips().map((c) => ({ ...c, volume: 0.3, fadeInSec: 1, fadeOutSec: 1 }))), 'sound only');
    same(plan(fourClips(), { output: { ...plan([]).output, path: '/elsewhere/out.mp4' } }), 'output path');
    same(
      plan(fourClips(), {
        measuredLoudness: {
          integratedLufs: -20,
          truePeakDbtp: -3,
          rangeLu: 5,
          thresholdLufs: -30,
          offsetLu: 0,
        },
      }),
      'loudness',
    );
    // An image's trim and speed are not read.
    const stills = fourClips();
    stills[0] = { ...stills[0]!, trimStartSec: 3, speed: 2 };
    same(plan(stills), "an image's trim and speed");
  });

  it('keeps the keys of text-free segments that only move on the timeline', () => {
    const base = planSegments(plan(fourClips()));
    const longer = fourClips();
    longer[0] = { ...longer[0]!, durationSec: 3 };
    const moved = planSegments(plan(longer));
    assert.equal(moved[2]!.startFrame, base[2]!.startFrame + 30);
    assert.deepEqual(
      moved.map((s, i) => s.key === base[i]!.key),
      [false, false, true, true, true, true],
    );
  });

  it('changes the keys of the segments under a text whose words change, and only those', () => {
    const clips = [clip(image, 1), clip(image, 1), clip(image, 1)];
    const base = planSegments(plan(clips, { texts: [text(0.5, 1)] })).map((s) => s.key);
    const other = planSegments(plan(clips, { texts: [text(0.5, 1, 'WORLD')] })).map((s) => s.key);
    assert.deepEqual(
      other.map((key, i) => key !== base[i]),
      [true, true, false],
    );
  });

  it('changes every key with the output’s size, rate, fit, quality or a source’s content', () => {
    const base = planSegments(plan(fourClips())).map((s) => s.key);
    const output = plan([]).output;
    const variants: [string, ExportPlan][] = [
      ['size', plan(fourClips(), { output: { ...output, width: 720, height: 720 } })],
      ['rate', plan(fourClips(), { output: { ...output, fps: 25 } })],
      ['fit', plan(fourClips(), { output: { ...output, fit: 'fill' } })],
      ['quality', plan(fourClips(), { output: { ...output, quality: 'preview' } })],
    ];
    for (const [why, p] of variants) {
      const keys = planSegments(p).map((s) => s.key);
      assert.ok(
        keys.every((key) => !base.includes(key)),
        why,
      );
    }
    const content = fourClips().map((c) => ({
      ...c,
      source: { ...c.source, contentId: 'x' + c.source.contentId },
    }));
    assert.ok(planSegments(plan(content)).every((s, i) => s.key !== base[i]));
    // Without a content id, the path names the source.
    const byPath = fourClips().map((c) => ({ ...c, source: { ...c.source, contentId: undefined } }));
    const moved = byPath.map((c) => ({ ...c, source: { ...c.source, path: `/other${c.source.path}` } }));
    assert.ok(planSegments(plan(moved)).every((s, i) => s.key !== planSegments(plan(byPath))[i]!.key));
  });

  it('keys the ffmpeg that renders when told it', () => {
    const base = planSegments(plan(fourClips())).map((s) => s.key);
    const v5 = planSegments(plan(fourClips()), { toolVersion: 'ffmpeg version 5.1.9' }).map((s) => s.key);
    const v7 = planSegments(plan(fourClips()), { toolVersion: 'ffmpeg version 7.1' }).map((s) => s.key);
    assert.ok(v5.every((key, i) => key !== base[i] && key !== v7[i]));
    assert.deepEqual(
      planSegments(plan(fourClips()), { toolVersion: 'ffmpeg version 5.1.9' }).map((s) => s.key),
      v5,
    );
  });

  it('cuts any timeline into contiguous segments whose frames add up to the whole render’s', () => {
    // A small deterministic generator: durations on and off the frame grid, transitions within half a clip.
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const types = ['fade', 'wipeleft', 'circleopen'] as const;
    for (let run = 0; run < 200; run += 1) {
      const picture = Array.from({ length: 1 + Math.floor(random() * 6) }, (_, i) => {
        const durationSec = 0.5 + Math.round(random() * 300) / 100;
        const source = random() < 0.5 ? image : video;
        const transition =
          random() < 0.5
            ? {
                transitionIn: {
                  type: types[i % 3]!,
                  durationSec: Math.max(0.1, random() * 0.4 * durationSec),
                },
              }
            : {};
        return clip(source, durationSec, { ...transition, speed: source === video ? 0.5 + random() : 1 });
      });
      const fps = [24, 25, 30, 60][run % 4]!;
      const p = plan(picture, { output: { ...plan([]).output, fps } });
      if (!canSegment(p)) continue;
      const segments = planSegments(p);
      assert.equal(summed(segments), wholeFrames(p), JSON.stringify(picture.map((c) => c.durationSec)));
      assert.equal(segments[0]!.startFrame, 0);
      segments.slice(1).forEach((s, i) => assert.equal(s.startFrame, segments[i]!.endFrame));
      for (const s of segments) {
        assert.ok(s.endFrame > s.startFrame);
        for (const part of s.parts) assert.equal(part.toFrame - part.fromFrame, s.endFrame - s.startFrame);
      }
    }
  });

  it('writes canonical JSON whatever the order of the members', () => {
    assert.equal(
      canonicalJson({ b: 1, a: [{ d: 2, c: undefined, e: null }] }),
      '{"a":[{"d":2,"e":null}],"b":1}',
    );
  });

  it('says why a plan cannot be segmented: the fast path, a clip without a frame, overlapping transitions, 29.97 fps', () => {
    const whole: ExportSource = {
      ...video,
      durationSec: 2,
      video: { codec: 'h264', width: 1280, height: 720, fps: 30, pixFmt: 'yuv420p' },
    };
    assert.deepEqual(segmentBlockers(plan([clip(whole, 2), clip(whole, 2)])), [
      'the fast path copies every clip: there is nothing to encode',
    ]);
    assert.deepEqual(segmentBlockers(plan([clip(image, 1), clip(image, 0.01), clip(image, 1)])), [
      'clip 1: shorter than a frame',
    ]);
    const crowded = plan([
      clip(image, 1),
      clip(image, 1, { transitionIn: { type: 'fade', durationSec: 0.6 } }),
      clip(image, 1, { transitionIn: { type: 'fade', durationSec: 0.6 } }),
    ]);
    assert.deepEqual(segmentBlockers(crowded), ['clip 1: its transitions in and out overlap']);
    assert.throws(() => planSegments(crowded), /cannot render in segments/);
    const ntsc = plan([clip(image, 1)], { output: { ...plan([]).output, fps: 29.97 } });
    assert.deepEqual(segmentBlockers(ntsc), ['frame rate 29.97 is not a whole number of 90 kHz ticks']);
    assert.equal(canSegment(plan(fourClips())), true);
  });

  it('encodes a segment to the fixed codec parameters, exactly its frames, without sound', () => {
    const p = plan(fourClips(), { texts: [text(1.2, 1)] });
    const transition = planSegments(p)[1]!;
    const args = segmentCommand(p, transition, '/cache/t.mp4');
    assert.equal(optionOf(args, '-frames:v'), '15');
    assert.equal(optionOf(args, '-c:v'), 'libx264');
    assert.equal(optionOf(args, '-profile:v'), 'high');
    assert.equal(optionOf(args, '-level:v'), '4.0');
    assert.equal(optionOf(args, '-bf'), '3');
    assert.equal(optionOf(args, '-flags'), '+cgop');
    assert.equal(optionOf(args, '-force_key_frames'), 'expr:eq(n,0)');
    assert.equal(optionOf(args, '-crf'), '20');
    assert.ok(args.includes('-an'));
    // The two clips' inputs only, no sound input.
    assert.equal(args.filter((a) => a === '-i').length, 2);
    const graph = segmentGraph(p, transition, '/cache/t.mp4');
    assert.match(graph, /trim=start_frame=45:end_frame=60/);
    assert.match(graph, /trim=start_frame=0:end_frame=15/);
    assert.match(graph, /xfade=transition=fade:duration=0\.5:offset=0\[joined\]/);
    // Text over it, on the whole timeline's clock.
    assert.match(graph, /settb=1\/30,setpts=PTS-STARTPTS\+45,drawtext=/);
    // A timeline with a transition has every frame through xfade's 4:4:4: a body makes the same round trip.
    assert.match(
      segmentGraph(plan(fourClips()), planSegments(plan(fourClips()))[2]!, '/cache/b.mp4'),
      /\[part0\]format=yuv444p,null\[seg\]$/,
    );
    // Cuts only: no round trip, and text on the concat's microsecond clock.
    const cuts = plan([clip(image, 1), clip(image, 1)], { texts: [text(0.5, 1)] });
    const cutGraph = segmentGraph(cuts, planSegments(cuts)[1]!, '/cache/c.mp4');
    assert.doesNotMatch(cutGraph, /yuv444p/);
    assert.match(cutGraph, /settb=1\/30,setpts=PTS-STARTPTS\+30,settb=AVTB,drawtext=/);
    const preview = plan(fourClips(), { output: { ...p.output, quality: 'preview' } });
    const previewArgs = segmentCommand(preview, planSegments(preview)[0]!, '/cache/b.mp4');
    assert.equal(optionOf(previewArgs, '-profile:v'), 'baseline');
    assert.equal(optionOf(previewArgs, '-bf'), '0');
    assert.equal(optionOf(previewArgs, '-preset'), 'ultrafast');
  });

  it('joins the segments by copy with the sound encoded once, +faststart', () => {
    const p = plan(fourClips());
    const commands = segmentedCommands(p, {
      segmentPath: (s) => `/cache/${s.key}.mp4`,
      listPath: '/work/list.ffconcat',
      soundPath: '/work/sound.mp4',
    });
    assert.equal(commands.encodes.length, 6);
    assert.match(
      commands.concatList,
      /^ffconcat version 1\.0\nfile 'file:\/cache\/[0-9a-f]{64}\.mp4'\ninpoint 0\nduration 1\.5\n/,
    );
    assert.equal(optionOf(commands.join, '-c'), 'copy');
    assert.equal(optionOf(commands.join, '-movflags'), '+faststart');
    assert.equal(commands.join.at(-1), 'file:/out/export.mp4');
    assert.ok(commands.sound.includes('-vn'));
    assert.equal(optionOf(commands.sound, '-c:a'), 'aac');
    assert.deepEqual(
      joinCommand(p, { listPath: '/l', soundPath: '/s' }).filter((a) => a.startsWith('file:')),
      ['file:/l', 'file:/s', 'file:/out/export.mp4'],
    );
    // Two segments with the same key are encoded once and listed twice.
    const twice = plan([clip(image, 1), clip(image, 1)]);
    const shared = segmentedCommands(twice, {
      segmentPath: (s) => `/cache/${s.key}.mp4`,
      listPath: '/l',
      soundPath: '/s',
    });
    assert.equal(shared.encodes.length, 1);
    assert.equal(shared.concatList.split('file ').length - 1, 2);
    assert.match(segmentConcatList(twice, []), /^ffconcat version 1\.0\n$/);
  });

  it("keys the sound by what decides it: a change to the picture alone keeps the sound's key", () => {
    const p = plan(fourClips(), { texts: [text(1.2, 1)] });
    const key = soundKey(p);
    assert.match(key, /^[0-9a-f]{64}$/);
    // Where the files lie does not matter, only their content.
    const moved = {
      ...p,
      picture: p.picture.map((c) => ({ ...c, source: { ...c.source, path: `/elsewhere${c.source.path}` } })),
    };
    assert.equal(soundKey(moved), key);
    // The picture alone: the words, the size, an image's motion.
    assert.equal(soundKey({ ...p, texts: [{ ...p.texts![0]!, text: 'Other words' }] }), key);
    assert.equal(soundKey({ ...p, output: { ...p.output, width: 640, height: 360, fit: 'fill' } }), key);
    assert.equal(
      soundKey({
        ...p,
        picture: p.picture.map((c, i) => (i === 0 ? { ...c, motion: 'zoom_in' as const } : c)),
      }),
      key,
    );
    // What the sound is made of: a clip's length, its volume, its content; the measurement is not part of it.
    const changed = (i: number, change: Partial<PictureClip>) => ({
      ...p,
      picture: p.picture.map((c, j) => (j === i ? { ...c, ...change } : c)),
    });
    assert.notEqual(soundKey(changed(3, { durationSec: 0.8 })), key);
    assert.notEqual(soundKey(changed(1, { volume: 0.5 })), key);
    const other = { ...video, path: '/staged/a/other.mp4', contentId: 'media-other' };
    assert.notEqual(soundKey(changed(1, { source: other })), key);
    const measured = { integratedLufs: -20, truePeakDbtp: -3, rangeLu: 5, thresholdLufs: -30, offsetLu: 0 };
    assert.equal(soundKey({ ...p, measuredLoudness: measured }), key);
  });

  it('drops a video’s frames well before a part before scaling them, never a still’s', () => {
    assert.equal(droppableSec(clip(image, 2), 60, 30), 0);
    assert.equal(droppableSec(clip(video, 2), 0, 30), 0);
    // Two output frames and three source frames (25 fps at speed 2: 0.06 s) before frame 60.
    assert.equal(droppableSec(clip(video, 2, { speed: 2 }), 60, 30), Number((58 / 30 - 0.06).toFixed(6)));
    // Too close to the start to drop anything.
    assert.equal(droppableSec(clip(video, 2), 3, 30), 0);
    const p = plan(fourClips());
    const segments = planSegments(p);
    assert.doesNotMatch(segmentGraph(p, segments[0]!, '/c/a.mp4'), /trim=start=/);
    // The sped-up video's body, after the cross-fade that brings it in: its first frames dropped, `fps`
    // padding the start back so that frame numbers hold.
    const body = segments.find((one) => one.kind === 'body' && one.parts[0]!.clip === 1)!;
    assert.match(
      segmentGraph(p, body, '/c/b.mp4'),
      /setpts=\(PTS-STARTPTS\)\/2,trim=start=[0-9.]+,.*fps=30:start_time=0/,
    );
  });

  it('shares the cores between the encoders that run at once, without changing a key', () => {
    assert.equal(encoderThreads(2, 3), 1);
    assert.equal(encoderThreads(2, 2), 1);
    assert.equal(encoderThreads(2, 1), 2);
    assert.equal(encoderThreads(16, 3), 5);
    assert.equal(encoderThreads(1, 0), 1);
    const p = plan(fourClips());
    const files = {
      segmentPath: (s: { key: string }) => `/cache/${s.key}.mp4`,
      listPath: '/l',
      soundPath: '/s',
    };
    const own = segmentedCommands(p, files);
    const one = segmentedCommands(p, files, { encoderThreads: 1 });
    assert.equal(optionOf(one.encodes[0]!.args, '-threads'), '1');
    assert.equal(optionOf(own.encodes[0]!.args, '-threads'), undefined);
    assert.deepEqual(
      one.encodes.map((encode) => encode.path),
      own.encodes.map((encode) => encode.path),
    );
  });
});
