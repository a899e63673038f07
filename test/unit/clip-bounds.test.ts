// The bounds on clip numbers and on a timeline's length (docs/editor.md#bounds): the pure computation, the
// request checks built on it (with JSON's 1e400 as Infinity), and agreement with what the export plays.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  CLIP_DURATION_MAX_SEC,
  clipNumberProblem,
  timelineChangeAllowed,
  timelineEndSec,
  timelinePlacements,
  timelineTooLongMessage,
  type ClipSource,
  type TimelineClip,
} from '../../schemas/clip-bounds.ts';
import { TRACKS, type Track } from '../../schemas/editor-terms.ts';
import { addClipRules, patchClipRules } from '../../schemas/clip-rules.ts';
import { AddClipBody, PatchClipBody } from '../../schemas/editor.ts';
import { AGENT_TOOLS } from '../../schemas/agent-tools.ts';
import { createChecker } from '../../schemas/validate.ts';
import { exportPlan } from '../../src/export/export-plan.ts';
import type { ExportSource } from '../../workers/export/work-order.ts';
import type { ClipRecord, ProjectRecord } from '../../actors/ports/projects-repository.ts';
import { seededRandom } from '../helpers/random.ts';

const sources = new Map<string, ClipSource>([
  ['img', { kind: 'image', durationSec: null }],
  ['vid10', { kind: 'video', durationSec: 10 }],
  ['snd4', { kind: 'audio', durationSec: 4 }],
  ['unknown', { kind: 'video', durationSec: null }],
]);
const sourceOf = (id: string) => sources.get(id);

let nextIdx = 0;
function clip(track: Track, asset_id: string, fields: Partial<TimelineClip> = {}): TimelineClip {
  return {
    track,
    idx: nextIdx++,
    asset_id,
    start_sec: null,
    trim_start_sec: 0,
    duration_sec: null,
    ...fields,
  };
}

describe('clip numbers', () => {
  it('bounds duration_sec by track: 600 on video, 3600 on voice, sfx and music, 60 on text', () => {
    assert.deepEqual(CLIP_DURATION_MAX_SEC, { video: 600, voice: 3600, sfx: 3600, music: 3600, text: 60 });
    for (const track of TRACKS) {
      const max: number = CLIP_DURATION_MAX_SEC[track];
      assert.equal(clipNumberProblem(track, { duration_sec: max }), null, `${track} at its bound`);
      for (const over of [max + 0.001, 1e30, Infinity]) {
        assert.equal(clipNumberProblem(track, { duration_sec: over }), `duration_sec must be at most ${max}`);
      }
    }
  });

  it('bounds start_sec and trim_start_sec at 86400 on every track, in field order', () => {
    for (const track of TRACKS) {
      assert.equal(clipNumberProblem(track, { start_sec: 86_400, trim_start_sec: 86_400 }), null);
      assert.equal(clipNumberProblem(track, { start_sec: 86_400.5 }), 'start_sec must be at most 86400');
      assert.equal(
        clipNumberProblem(track, { trim_start_sec: Infinity }),
        'trim_start_sec must be at most 86400',
      );
    }
    assert.equal(
      clipNumberProblem('music', { start_sec: 1e30, trim_start_sec: 1e30, duration_sec: 1e30 }),
      'start_sec must be at most 86400',
      'the first field answers',
    );
  });

  it('refuses NaN and numbers below their range with the schemas’ messages; absent or null fields pass', () => {
    assert.equal(clipNumberProblem('voice', { start_sec: NaN }), 'start_sec must be a number >= 0');
    assert.equal(
      clipNumberProblem('voice', { trim_start_sec: -Infinity }),
      'trim_start_sec must be a number >= 0',
    );
    assert.equal(clipNumberProblem('video', { duration_sec: 0 }), 'duration_sec must be a number > 0');
    assert.equal(clipNumberProblem('video', { duration_sec: NaN }), 'duration_sec must be a number > 0');
    assert.equal(clipNumberProblem('video', { start_sec: null, duration_sec: null }), null);
    assert.equal(clipNumberProblem('video', {}), null);
  });
});

describe('request checks of clip numbers', () => {
  const add = createChecker(AddClipBody, { rules: addClipRules() });
  const patch = createChecker(PatchClipBody, { rules: patchClipRules() });
  const message = (checked: { ok: true } | { ok: false; message: string }) =>
    checked.ok ? 'ok' : checked.message;
  // What the HTTP body parser gives for these literals.
  const parsed = (json: string) => JSON.parse(json) as Record<string, unknown>;

  it('answers a POST by its track, for finite numbers and for 1e400', () => {
    const cases: [Track, number][] = [
      ['video', 600],
      ['voice', 3600],
      ['sfx', 3600],
      ['music', 3600],
    ];
    for (const [track, max] of cases) {
      for (const literal of ['1e30', '1e400', String(max + 1)]) {
        const body = parsed(`{"track":"${track}","asset_id":"va_1","duration_sec":${literal}}`);
        assert.equal(message(add.check(body)), `duration_sec must be at most ${max}`, `${track} ${literal}`);
      }
      const atBound = parsed(`{"track":"${track}","asset_id":"va_1","duration_sec":${max}}`);
      assert.equal(message(add.check(atBound)), 'ok');
    }
    for (const field of ['start_sec', 'trim_start_sec']) {
      for (const literal of ['1e30', '1e400', '86400.001']) {
        const body = parsed(`{"track":"voice","asset_id":"va_1","${field}":${literal}}`);
        assert.equal(message(add.check(body)), `${field} must be at most 86400`, `${field} ${literal}`);
      }
    }
  });

  it('keeps field order and the existing messages around the new ones', () => {
    const body = parsed('{"track":"video","asset_id":"va_1","idx":-1,"duration_sec":1e400}');
    assert.equal(message(add.check(body)), 'idx must be an integer >= 0', 'an earlier field answers first');
    const later = parsed('{"track":"video","asset_id":"va_1","duration_sec":1e400,"volume":9}');
    assert.equal(message(add.check(later)), 'duration_sec must be at most 600', 'a later field waits');
    assert.equal(
      message(add.check(parsed('{"track":"video","asset_id":"va_1","duration_sec":-1e400}'))),
      'duration_sec must be a number > 0',
    );
    assert.equal(
      message(add.check(parsed('{"track":"video","asset_id":"va_1","duration_sec":"long"}'))),
      'duration_sec must be a number > 0',
    );
    assert.equal(
      message(add.check(parsed('{"track":"video","asset_id":"va_1","start_sec":-1}'))),
      'start_sec must be a number >= 0',
    );
  });

  it('answers a PATCH by the track of the clip it changes (the largest bound when that is unknown)', () => {
    const body = parsed('{"duration_sec":1e400}');
    assert.equal(message(patch.check(body, { track: 'video' })), 'duration_sec must be at most 600');
    assert.equal(message(patch.check(body, { track: 'sfx' })), 'duration_sec must be at most 3600');
    assert.equal(message(patch.check(body, { track: undefined })), 'duration_sec must be at most 3600');
    assert.equal(message(patch.check(parsed('{"duration_sec":601}'), { track: 'music' })), 'ok');
    assert.equal(
      message(patch.check(parsed('{"trim_start_sec":1e400}'), { track: 'video' })),
      'trim_start_sec must be at most 86400',
    );
  });

  it('offers the agents the bounds in the clip tools’ descriptions', () => {
    const schema = JSON.stringify(AGENT_TOOLS.add_clip);
    assert.match(schema, /at most 600 on the video track, 3600 on audio tracks/);
    assert.match(schema, /at most 86400/);
  });
});

describe('timeline length', () => {
  it('sums the video track: images for their duration (default 5), videos for what they play', () => {
    const clips = [
      clip('video', 'img'),
      clip('video', 'img', { duration_sec: 2.5 }),
      clip('video', 'vid10', { trim_start_sec: 3 }),
      clip('video', 'vid10', { duration_sec: 4 }),
      clip('video', 'vid10', { trim_start_sec: 8, duration_sec: 600 }),
    ];
    assert.equal(timelineEndSec(clips, sourceOf), 5 + 2.5 + 7 + 4 + 2);
  });

  it('places audio clips at start_sec or after the previous clip of their track; the latest end wins', () => {
    const clips = [
      clip('video', 'img'),
      clip('music', 'snd4'),
      clip('music', 'snd4'),
      clip('voice', 'snd4', { start_sec: 30, trim_start_sec: 1 }),
      clip('voice', 'snd4', { duration_sec: 2 }),
    ];
    assert.equal(timelineEndSec(clips, sourceOf), 35, 'voice: 30 + 3, then 2 more');
    assert.equal(timelineEndSec(clips.slice(0, 3), sourceOf), 8, 'music: two clips of 4 s');
  });

  it('counts a clip past its source at its start, and unknown lengths as what the clip says', () => {
    assert.equal(timelineEndSec([clip('sfx', 'snd4', { start_sec: 100, trim_start_sec: 9 })], sourceOf), 100);
    assert.equal(timelineEndSec([clip('video', 'unknown', { duration_sec: 12 })], sourceOf), 12);
    assert.equal(timelineEndSec([clip('video', 'unknown')], sourceOf), 0);
    assert.equal(timelineEndSec([clip('video', 'missing', { duration_sec: 12 })], sourceOf), 0);
    assert.equal(timelineEndSec([], sourceOf), 0);
  });

  it('places each clip: the video track overlapped by its transitions, audio and text at their starts', () => {
    const first = clip('video', 'img', { duration_sec: 4, transition_in: { type: 'fade', duration_sec: 1 } });
    const second = clip('video', 'vid10', { transition_in: { type: 'wipeleft', duration_sec: 1.5 } });
    const third = clip('video', 'img', { duration_sec: 2 });
    const voice = clip('voice', 'snd4', { start_sec: 3 });
    const voiceAfter = clip('voice', 'snd4', { duration_sec: 1 });
    const title = { ...clip('text', 'img'), asset_id: null, duration_sec: 2.5 };
    const caption = { ...clip('text', 'img'), asset_id: null };
    const silentPicture = clip('music', 'img');
    const placed = timelinePlacements(
      [first, second, third, voice, voiceAfter, title, caption, silentPicture],
      sourceOf,
    );
    const at = (one: TimelineClip) => {
      const found = placed.find((p) => p.clip === one);
      return found && [found.startSec, found.sec, found.overlapSec];
    };
    assert.deepEqual(at(first), [0, 4, 0], 'the first clip fades in from black and overlaps nothing');
    assert.deepEqual(at(second), [2.5, 10, 1.5]);
    assert.deepEqual(at(third), [12.5, 2, 0]);
    assert.deepEqual(at(voice), [3, 4, 0]);
    assert.deepEqual(at(voiceAfter), [7, 1, 0]);
    assert.deepEqual(at(title), [0, 2.5, 0]);
    assert.deepEqual(at(caption), [2.5, 3, 0], 'after the previous text clip, 3 s by default');
    assert.equal(at(silentPicture), undefined, 'a picture on an audio track plays nothing');
    assert.equal(timelineEndSec([first, second, third, voice, voiceAfter, title, caption], sourceOf), 14.5);
  });

  it('allows any change up to the bound, and a timeline past it only to shrink or stay', () => {
    assert.equal(timelineChangeAllowed(0, 60, 60), true);
    assert.equal(timelineChangeAllowed(0, 0.1 + 0.2 + 59.7, 60), true, 'rounding noise is not a second');
    assert.equal(timelineChangeAllowed(59, 60.01, 60), false);
    assert.equal(timelineChangeAllowed(100, 90, 60), true, 'shorter, still past');
    assert.equal(timelineChangeAllowed(100, 100, 60), true, 'as long');
    assert.equal(timelineChangeAllowed(100, 101, 60), false, 'longer');
    assert.equal(timelineTooLongMessage(1800), 'timeline would be longer than 1800 seconds');
  });

  it('agrees with the export plan on where every clip ends (seeded random timelines)', () => {
    const random = seededRandom(24);
    const exportSources = new Map<string, ExportSource>([
      ['img', { path: '/i.png', demuxer: 'png_pipe', kind: 'image', durationSec: null }],
      [
        'vid10',
        {
          path: '/v.mp4',
          demuxer: 'mov',
          kind: 'video',
          durationSec: 10,
          video: { codec: 'h264', width: 64, height: 64, fps: 30, pixFmt: 'yuv420p' },
          audio: { codec: 'aac', sampleRate: 48000, channels: 2 },
        },
      ],
      [
        'snd4',
        {
          path: '/s.wav',
          demuxer: 'wav',
          kind: 'audio',
          durationSec: 4,
          audio: { codec: 'pcm_s16le', sampleRate: 48000, channels: 2 },
        },
      ],
    ]);
    const pick = <T>(values: readonly T[]) => values[Math.floor(random() * values.length)]!;
    const maybe = (value: number) => (random() < 0.5 ? null : value);
    for (let run = 0; run < 200; run++) {
      const clips: ClipRecord[] = [];
      const count = 1 + Math.floor(random() * 8);
      for (let i = 0; i < count; i++) {
        // Text clips are drawn, not played: the plan's pictures and sounds do not hold them.
        const track = i === 0 ? 'video' : pick(TRACKS.filter((one) => one !== 'text'));
        const asset = track === 'video' ? pick(['img', 'vid10']) : pick(['vid10', 'snd4']);
        const length = asset === 'snd4' ? 4 : 10;
        clips.push({
          id: `c${i}`,
          video_id: 'v1',
          track,
          idx: clips.filter((one) => one.track === track).length,
          asset_id: asset,
          start_sec: track === 'video' ? null : maybe(Math.round(random() * 400) / 10),
          trim_start_sec: Math.floor(random() * (length - 1)),
          duration_sec: maybe(0.5 + Math.round(random() * 200) / 10),
          volume: 1,
          created_at: new Date(0),
        });
      }
      const planned = exportPlan({
        project: { clips, videos: [{ id: 'v1' }] } as unknown as ProjectRecord,
        videoId: 'v1',
        sources: exportSources,
        output: { width: 64, height: 64, fps: 30, fit: 'fit', path: '/o.mp4' },
        filters: { loudnorm: true, sidechaincompress: true },
      });
      assert.ok(!('error' in planned));
      const pictureSec = planned.plan.picture.reduce((sum, one) => sum + one.durationSec, 0);
      const soundEnds = planned.plan.sounds.map((one) => one.startSec + one.durationSec);
      const expected = Math.max(pictureSec, ...soundEnds);
      const sourceOfExport = (id: string) => {
        const source = exportSources.get(id);
        return source && { kind: source.kind, durationSec: source.durationSec };
      };
      const actual = timelineEndSec(clips, sourceOfExport);
      assert.ok(
        Math.abs(actual - expected) < 1e-9,
        `run ${run}: ${actual} vs ${expected} ${JSON.stringify(clips)}`,
      );
    }
  });
});
