import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { exportPlan } from '../../src/export/export-plan.ts';
import type { ExportSource, FilterSupport, OutputSpec } from '../../workers/export/work-order.ts';
import type { ClipRecord, ProjectRecord } from '../../actors/ports/projects-repository.ts';
import { IMAGE_CLIP_DEFAULT_SEC } from '../../schemas/editor-terms.ts';

const output: OutputSpec = { width: 720, height: 1280, fps: 30, fit: 'fit', path: '/tmp/out.mp4' };
const filters: FilterSupport = { loudnorm: true, sidechaincompress: true };

const image: ExportSource = { path: '/tmp/a.png', demuxer: 'png_pipe', kind: 'image', durationSec: null };
const video: ExportSource = {
  path: '/tmp/v.mp4',
  demuxer: 'mov',
  kind: 'video',
  durationSec: 10,
  video: { codec: 'h264', width: 720, height: 1280, fps: 30, pixFmt: 'yuv420p' },
  audio: { codec: 'aac', sampleRate: 48000, channels: 2 },
};
const silentVideo: ExportSource = { ...video, path: '/tmp/silent.mp4', audio: undefined };
const sound: ExportSource = {
  path: '/tmp/s.mp3',
  demuxer: 'mp3',
  kind: 'audio',
  durationSec: 4,
  audio: { codec: 'mp3', sampleRate: 44100, channels: 2 },
};

const sources = new Map<string, ExportSource>([
  ['img', image],
  ['vid', video],
  ['silent', silentVideo],
  ['snd', sound],
]);

let nextId = 0;
function clip(fields: Partial<ClipRecord> & Pick<ClipRecord, 'track' | 'idx' | 'asset_id'>): ClipRecord {
  return {
    id: `c${nextId++}`,
    video_id: 'v1',
    start_sec: null,
    trim_start_sec: 0,
    duration_sec: null,
    volume: 1,
    created_at: new Date(0),
    ...fields,
  };
}

function project(clips: ClipRecord[]): ProjectRecord {
  return {
    id: 'p1',
    user_id: 'u1',
    name: 'P',
    description: '',
    aspect_ratio: '9:16',
    context_md: '',
    videos: [
      { id: 'v1', name: 'Main', aspect_ratio: '9:16', created_at: new Date(0) },
      { id: 'v2', name: 'Other', aspect_ratio: '9:16', created_at: new Date(0) },
    ],
    clips,
    revision: 0,
    seq: 0,
    version: 0,
    turn: null,
    queue: [],
    applied_ops: [],
    created_at: new Date(0),
    updated_at: new Date(0),
  };
}

function plan(clips: ClipRecord[], videoId = 'v1') {
  const result = exportPlan({ project: project(clips), videoId, sources, output, filters });
  assert.ok(!('error' in result), 'expected a plan');
  return result;
}

describe('exportPlan', () => {
  it('answers no_video_clips when the video track is empty', () => {
    const result = exportPlan({
      project: project([clip({ track: 'music', idx: 0, asset_id: 'snd' })]),
      videoId: 'v1',
      sources,
      output,
      filters,
    });
    assert.deepEqual(result, { error: 'no_video_clips' });
  });

  it('orders the video track by idx, not by stored order, and passes output and filters through', () => {
    const result = plan([
      clip({ track: 'video', idx: 1, asset_id: 'vid' }),
      clip({ track: 'video', idx: 0, asset_id: 'img', volume: 0.5 }),
    ]);
    assert.deepEqual(
      result.plan.picture.map((p) => p.source.path),
      ['/tmp/a.png', '/tmp/v.mp4'],
    );
    assert.equal(result.plan.picture[0]!.volume, 0.5);
    assert.equal(result.plan.output, output);
    assert.equal(result.plan.filters, filters);
  });

  it('shows an image for the default time, or its duration_sec', () => {
    const result = plan([
      clip({ track: 'video', idx: 0, asset_id: 'img' }),
      clip({ track: 'video', idx: 1, asset_id: 'img', duration_sec: 2.5 }),
    ]);
    assert.deepEqual(
      result.plan.picture.map((p) => [p.trimStartSec, p.durationSec]),
      [
        [0, IMAGE_CLIP_DEFAULT_SEC],
        [0, 2.5],
      ],
    );
  });

  it('plays a video to its end by default, from its trim, and never past its end', () => {
    const result = plan([
      clip({ track: 'video', idx: 0, asset_id: 'vid' }),
      clip({ track: 'video', idx: 1, asset_id: 'vid', trim_start_sec: 3 }),
      clip({ track: 'video', idx: 2, asset_id: 'vid', trim_start_sec: 2, duration_sec: 4 }),
      clip({ track: 'video', idx: 3, asset_id: 'vid', trim_start_sec: 8, duration_sec: 5 }),
    ]);
    assert.deepEqual(
      result.plan.picture.map((p) => [p.trimStartSec, p.durationSec]),
      [
        [0, 10],
        [3, 7],
        [2, 4],
        [8, 2],
      ],
    );
  });

  it('leaves out a video clip trimmed at or past its end, and does not count it', () => {
    const result = plan([
      clip({ track: 'video', idx: 0, asset_id: 'vid', trim_start_sec: 10 }),
      clip({ track: 'video', idx: 1, asset_id: 'vid', trim_start_sec: 12, duration_sec: 1 }),
      clip({ track: 'video', idx: 2, asset_id: 'img' }),
    ]);
    assert.equal(result.plan.picture.length, 1);
    assert.equal(result.videoClipCount, 1);
  });

  it('places audio clips without start_sec one after another, and a given start_sec as given', () => {
    const result = plan([
      clip({ track: 'video', idx: 0, asset_id: 'img' }),
      clip({ track: 'voice', idx: 2, asset_id: 'snd' }),
      clip({ track: 'voice', idx: 0, asset_id: 'snd', duration_sec: 1.5 }),
      clip({ track: 'voice', idx: 1, asset_id: 'snd', trim_start_sec: 1 }),
      clip({ track: 'sfx', idx: 0, asset_id: 'snd', start_sec: 7, duration_sec: 9 }),
      clip({ track: 'sfx', idx: 1, asset_id: 'snd' }),
    ]);
    assert.deepEqual(
      result.plan.sounds.map((s) => [s.track, s.startSec, s.trimStartSec, s.durationSec]),
      [
        ['voice', 0, 0, 1.5],
        ['voice', 1.5, 1, 3],
        ['voice', 4.5, 0, 4],
        ['sfx', 7, 0, 4],
        ['sfx', 11, 0, 4],
      ],
    );
  });

  it('takes the audio of a video asset on the music track', () => {
    const result = plan([
      clip({ track: 'video', idx: 0, asset_id: 'img' }),
      clip({ track: 'music', idx: 0, asset_id: 'vid', trim_start_sec: 4, volume: 0.3 }),
    ]);
    assert.deepEqual(result.plan.sounds, [
      { source: video, track: 'music', startSec: 0, trimStartSec: 4, durationSec: 6, volume: 0.3 },
    ]);
  });

  it('skips a silent video on the voice track, the next clip still following its end', () => {
    const result = plan([
      clip({ track: 'video', idx: 0, asset_id: 'img' }),
      clip({ track: 'voice', idx: 0, asset_id: 'silent' }),
      clip({ track: 'voice', idx: 1, asset_id: 'snd' }),
    ]);
    assert.deepEqual(
      result.plan.sounds.map((s) => [s.source.path, s.startSec]),
      [['/tmp/s.mp3', 10]],
    );
    assert.equal(result.audioOverlayCount, 1);
  });

  it('counts what was placed', () => {
    const result = plan([
      clip({ track: 'video', idx: 0, asset_id: 'img' }),
      clip({ track: 'video', idx: 1, asset_id: 'vid' }),
      clip({ track: 'video', idx: 2, asset_id: 'missing' }),
      clip({ track: 'voice', idx: 0, asset_id: 'snd' }),
      clip({ track: 'sfx', idx: 0, asset_id: 'snd', trim_start_sec: 4 }),
      clip({ track: 'music', idx: 0, asset_id: 'vid' }),
    ]);
    assert.equal(result.videoClipCount, 2);
    assert.equal(result.audioOverlayCount, 2);
  });

  it('ignores the clips of other videos', () => {
    const clips = [
      clip({ track: 'video', idx: 0, asset_id: 'img' }),
      clip({ track: 'video', idx: 1, asset_id: 'vid', video_id: 'v2' }),
      clip({ track: 'voice', idx: 0, asset_id: 'snd', video_id: 'v2' }),
    ];
    const result = plan(clips);
    assert.equal(result.videoClipCount, 1);
    assert.equal(result.audioOverlayCount, 0);
    const other = exportPlan({
      project: project([
        clip({ track: 'voice', idx: 0, asset_id: 'snd', video_id: 'v2' }),
        ...clips.slice(0, 1),
      ]),
      videoId: 'v2',
      sources,
      output,
      filters,
    });
    assert.deepEqual(other, { error: 'no_video_clips' });
  });

  it('maps speed, motion, transitions and fades onto the picture, at speed s reading s× the source', () => {
    const result = plan([
      clip({ track: 'video', idx: 0, asset_id: 'img', duration_sec: 4, motion: 'zoom_in' }),
      clip({
        track: 'video',
        idx: 1,
        asset_id: 'vid',
        trim_start_sec: 2,
        speed: 2,
        transition_in: { type: 'fadeblack', duration_sec: 1 },
        fade_in_sec: 0.5,
      }),
      clip({ track: 'video', idx: 2, asset_id: 'vid', duration_sec: 3, speed: 0.5, motion: 'none' }),
      clip({ track: 'music', idx: 0, asset_id: 'snd', fade_out_sec: 1.5 }),
    ]);
    const [still, fast, slow] = result.plan.picture;
    assert.deepEqual(
      { motion: still!.motion, speed: still!.speed, transition: still!.transitionIn },
      { motion: 'zoom_in', speed: undefined, transition: undefined },
    );
    // 8 s of source left after the trim, at speed 2: 4 s of timeline.
    assert.deepEqual([fast!.trimStartSec, fast!.durationSec, fast!.speed], [2, 4, 2]);
    assert.deepEqual(fast!.transitionIn, { type: 'fadeblack', durationSec: 1 });
    assert.equal(fast!.fadeInSec, 0.5);
    assert.equal(fast!.motion, undefined, 'motion is for images');
    assert.deepEqual([slow!.durationSec, slow!.speed], [3, 0.5]);
    assert.equal(result.plan.sounds[0]!.fadeOutSec, 1.5);
    assert.equal(result.plan.texts, undefined);
  });

  it('keeps a transition within half of each clip it joins once a clip between them is left out', () => {
    const result = plan([
      clip({ track: 'video', idx: 0, asset_id: 'img', duration_sec: 1 }),
      clip({ track: 'video', idx: 1, asset_id: 'missing', duration_sec: 6 }),
      clip({
        track: 'video',
        idx: 2,
        asset_id: 'img',
        duration_sec: 6,
        transition_in: { type: 'fade', duration_sec: 2 },
      }),
    ]);
    assert.deepEqual(result.plan.picture[1]!.transitionIn, { type: 'fade', durationSec: 0.5 });
  });

  it('resolves text clips: style defaults, white, 3 s, after the previous text clip, fades cut to half', () => {
    // A text clip as the text track stores it: no asset (the record type here predates the track).
    const text = (fields: Record<string, unknown>) =>
      ({
        ...clip({ track: 'video', idx: 0, asset_id: 'x' }),
        track: 'text',
        asset_id: null,
        ...fields,
      }) as unknown as ClipRecord;
    const result = plan([
      clip({ track: 'video', idx: 0, asset_id: 'vid' }),
      text({ idx: 1, text: 'Second', style: 'lower_third', start_sec: null, duration_sec: 0.5 }),
      text({ idx: 0, text: 'Title', style: 'title', start_sec: 1, position: null, background: null }),
      text({
        idx: 2,
        text: 'Third',
        style: 'caption',
        position: 'top',
        color: '#00FF00',
        fade_in_sec: 0,
        fade_out_sec: 1,
      }),
      text({ idx: 3, text: '   ', style: 'caption' }),
    ]);
    assert.deepEqual(result.plan.texts, [
      {
        text: 'Title',
        style: 'title',
        position: 'center',
        color: '#FFFFFF',
        background: 'none',
        startSec: 1,
        durationSec: 3,
        fadeInSec: 0.3,
        fadeOutSec: 0.3,
      },
      {
        text: 'Second',
        style: 'lower_third',
        position: 'bottom',
        color: '#FFFFFF',
        background: 'box',
        startSec: 4,
        durationSec: 0.5,
        fadeInSec: 0.25,
        fadeOutSec: 0.25,
      },
      {
        text: 'Third',
        style: 'caption',
        position: 'top',
        color: '#00FF00',
        background: 'box',
        startSec: 4.5,
        durationSec: 3,
        fadeInSec: 0,
        fadeOutSec: 1,
      },
    ]);
    assert.equal(result.videoClipCount, 1);
    assert.equal(result.audioOverlayCount, 0, 'text clips are not sound');
  });
});
