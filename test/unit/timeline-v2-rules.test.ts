// The timeline's second edition, its pure rules (docs/editor.md, Text, transitions, motion, speed, fades): the
// request checks of POST and PATCH .../clips with every message word for word and in field order, which field
// applies to which clip, transitions against both clips they join, the timeline's length with overlaps, speed
// and text clips, and what a clip reads back.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AddClipBody, PatchClipBody } from '../../schemas/editor.ts';
import {
  addClipFieldRules,
  addClipRules,
  patchClipFieldRules,
  patchClipRules,
  type ClipTarget,
} from '../../schemas/clip-rules.ts';
import {
  APPLICABLE_FIELDS,
  clipFieldsProblem,
  fieldApplies,
  type ApplicableField,
  type ClipKind,
} from '../../schemas/clip-applies.ts';
import {
  CLIP_DURATION_MAX_SEC,
  clipNumberProblem,
  overlongTransitions,
  playedSec,
  timelineEndSec,
  type ClipSource,
  type TimelineClip,
} from '../../schemas/clip-bounds.ts';
import { TRACKS, type AssetKind, type Track } from '../../schemas/editor-terms.ts';
import { TEXT_STYLE_DEFAULTS } from '../../schemas/timeline-terms.ts';
import { createChecker } from '../../schemas/validate.ts';
import { toClipView, toClipViews } from '../../actors/project-views.ts';
import type { ClipRecord } from '../../actors/ports/projects-repository.ts';

const addChecker = createChecker(AddClipBody, { rules: [...addClipRules(), ...addClipFieldRules()] });
const patchChecker = createChecker(PatchClipBody, {
  rules: [...patchClipRules(), ...patchClipFieldRules()],
});

/** The message POST .../clips answers for `body` (its asset of `kind`), or 'ok'. */
function add(body: Record<string, unknown>, kind?: AssetKind): string {
  const checked = addChecker.check(body, { track: undefined, kind });
  return checked.ok ? 'ok' : checked.message;
}

/** The message PATCH .../clips/<id> answers for `body` on a clip of `track` and `kind`, or 'ok'. */
function patch(body: Record<string, unknown>, track: Track, kind?: AssetKind): string {
  const checked = patchChecker.check(body, { track, kind } satisfies ClipTarget);
  return checked.ok ? 'ok' : checked.message;
}

const image = { track: 'video', asset_id: 'va_image' };
const video = { track: 'video', asset_id: 'va_video' };
const music = { track: 'music', asset_id: 'va_sound' };
const title = { track: 'text', text: 'Hello' };

describe('request checks: every message of the second edition, word for word', () => {
  it('names the five tracks', () => {
    assert.deepEqual(TRACKS, ['video', 'voice', 'sfx', 'music', 'text']);
    assert.equal(add({ track: 'titles', text: 'x' }), 'track must be one of video, voice, sfx, music, text');
    assert.equal(add({ asset_id: 'va_x' }), 'track must be one of video, voice, sfx, music, text');
  });

  it('checks a text clip’s fields', () => {
    assert.equal(add(title), 'ok');
    assert.equal(add({ track: 'text' }), 'text must be 1 to 500 characters', 'text is required');
    for (const text of ['', 'x'.repeat(501), 42, null]) {
      assert.equal(add({ track: 'text', text }), 'text must be 1 to 500 characters', JSON.stringify(text));
    }
    assert.equal(add({ track: 'text', text: 'é'.repeat(500) }), 'ok', '500 characters');
    assert.equal(add({ track: 'text', text: '😀'.repeat(500) }), 'ok', 'characters, not UTF-16 units');
    assert.equal(add({ track: 'text', text: 'two\nlines' }), 'ok');
    assert.equal(add({ ...title, style: 'banner' }), 'style must be one of title, lower_third, caption');
    assert.equal(add({ ...title, position: 'left' }), 'position must be one of top, center, bottom');
    assert.equal(add({ ...title, position: null }), 'ok', "null: the style's");
    for (const color of ['#FFF', 'red', '#GG0000', '#FF000000', 16777215]) {
      assert.equal(add({ ...title, color }), 'color must be a #RRGGBB colour', String(color));
    }
    assert.equal(add({ ...title, color: '#00ff7F' }), 'ok');
    assert.equal(add({ ...title, background: 'blur' }), 'background must be one of none, box');
    assert.equal(add({ ...title, duration_sec: 60 }), 'ok');
    assert.equal(add({ ...title, duration_sec: 60.5 }), 'duration_sec must be at most 60');
    assert.equal(add({ ...title, duration_sec: 0.5 }), 'ok');
    assert.equal(add({ ...title, duration_sec: 0.4 }), 'duration_sec must be at least 0.5');
    assert.equal(add({ ...title, duration_sec: 0 }), 'duration_sec must be a number > 0');
    assert.equal(add({ ...title, start_sec: 12 }), 'ok');
  });

  it('checks transitions: the object, its type, its length', () => {
    assert.equal(add({ ...video, transition_in: { type: 'fade', duration_sec: 1 } }, 'video'), 'ok');
    assert.equal(add({ ...video, transition_in: null }, 'video'), 'ok');
    const typeMessage =
      'transition_in.type must be one of fade, fadeblack, fadewhite, wipeleft, wiperight, slideleft, slideright, circleopen';
    const durationMessage = 'transition_in.duration_sec must be a number from 0.1 to 2';
    assert.equal(add({ ...video, transition_in: { type: 'spin', duration_sec: 1 } }, 'video'), typeMessage);
    assert.equal(add({ ...video, transition_in: { duration_sec: 1 } }, 'video'), typeMessage);
    assert.equal(add({ ...video, transition_in: {} }, 'video'), typeMessage, 'the type first');
    assert.equal(add({ ...video, transition_in: { type: 'spin', duration_sec: 9 } }, 'video'), typeMessage);
    for (const duration_sec of [0.05, 2.01, '1', null, undefined]) {
      assert.equal(
        add({ ...video, transition_in: { type: 'wipeleft', duration_sec } }, 'video'),
        durationMessage,
        String(duration_sec),
      );
    }
    for (const duration_sec of [0.1, 2]) {
      assert.equal(add({ ...video, transition_in: { type: 'circleopen', duration_sec } }, 'video'), 'ok');
    }
    for (const value of ['fade', 1, true, [], ['fade', 1]]) {
      assert.equal(
        add({ ...video, transition_in: value }, 'video'),
        'transition_in must be an object { type, duration_sec } or null',
      );
    }
  });

  it('checks motion, speed and fades', () => {
    assert.equal(
      add({ ...image, motion: 'spin' }, 'image'),
      'motion must be one of none, zoom_in, zoom_out, pan_left, pan_right',
    );
    assert.equal(add({ ...image, motion: 'pan_left' }, 'image'), 'ok');
    for (const speed of [0.2, 4.5, '2', null]) {
      assert.equal(add({ ...video, speed }, 'video'), 'speed must be a number from 0.25 to 4', String(speed));
    }
    assert.equal(add({ ...video, speed: 0.25 }, 'video'), 'ok');
    assert.equal(add({ ...video, speed: 4 }, 'video'), 'ok');
    for (const field of ['fade_in_sec', 'fade_out_sec']) {
      for (const value of [-0.1, 10.5, 'x']) {
        assert.equal(add({ ...music, [field]: value }, 'audio'), `${field} must be a number from 0 to 10`);
      }
      assert.equal(add({ ...music, [field]: 10 }, 'audio'), 'ok');
      assert.equal(patch({ [field]: 11 }, 'music', 'audio'), `${field} must be a number from 0 to 10`);
    }
  });

  it('keeps the first edition’s fields and messages as they were', () => {
    assert.equal(add({ track: 'video' }), 'asset_id is required');
    assert.equal(add({ track: 'video', asset_id: '' }), 'asset_id is required');
    assert.equal(add({ track: 'music', asset_id: null }), 'asset_id is required');
    assert.equal(add({ ...image, idx: -1 }), 'idx must be an integer >= 0');
    assert.equal(add({ ...image, duration_sec: 601 }), 'duration_sec must be at most 600');
    assert.equal(add({ ...music, duration_sec: 3601 }), 'duration_sec must be at most 3600');
    assert.equal(add({ ...music, volume: 3 }), 'volume must be a number from 0 to 2');
    assert.equal(add({ ...music, start_sec: 86_401 }), 'start_sec must be at most 86400');
    assert.equal(patch({ duration_sec: 61 }, 'text'), 'duration_sec must be at most 60', 'the clip’s track');
    assert.equal(patch({ duration_sec: 0.2 }, 'text'), 'duration_sec must be at least 0.5');
    assert.equal(patch({ duration_sec: 0.2 }, 'video', 'image'), 'ok');
    assert.equal(patch({ volume: 0.5, trim_start_sec: 1 }, 'video', 'image'), 'ok', 'as before');
  });

  it('answers the first failing field in the order of the request table', () => {
    // Old fields first, then a text clip's, then transition_in, motion, speed, fades.
    assert.equal(
      add({ ...video, volume: 9, speed: 9, transition_in: { type: 'x' } }, 'video'),
      'volume must be a number from 0 to 2',
    );
    assert.equal(
      add({ ...video, speed: 9, transition_in: { type: 'x' } }, 'video'),
      'transition_in.type must be one of fade, fadeblack, fadewhite, wipeleft, wiperight, slideleft, slideright, circleopen',
    );
    assert.equal(
      add({ ...video, speed: 9, fade_in_sec: 20 }, 'video'),
      'speed must be a number from 0.25 to 4',
    );
    assert.equal(
      add({ ...title, style: 'x', color: 'x' }),
      'style must be one of title, lower_third, caption',
    );
    // A field that does not apply answers at its own place: before a later field's bad value.
    assert.equal(
      add({ ...image, motion: 'zoom_in', speed: 9 }, 'image'),
      'speed must be a number from 0.25 to 4',
    );
    assert.equal(
      add({ ...image, speed: 2, fade_in_sec: 99 }, 'image'),
      'speed does not apply to image clips',
    );
    assert.equal(add({ ...title, volume: 1, motion: 'x' }), 'volume does not apply to text clips');
    assert.equal(
      add({ track: 'text', asset_id: 'va_image', text: 'x' }),
      'asset_id does not apply to text clips',
    );
    assert.equal(add({ track: 'text', asset_id: null, text: 'x' }), 'ok', 'null says "no asset"');
  });
});

describe('which field applies to which clip', () => {
  /** A request's message for `field` (a valid value of it) on a clip of `track` and `kind`. */
  const value: Record<ApplicableField, unknown> = {
    asset_id: 'va_x',
    trim_start_sec: 1,
    volume: 0.5,
    text: 'Hi',
    style: 'caption',
    position: 'top',
    color: '#112233',
    background: 'box',
    transition_in: { type: 'fade', duration_sec: 0.5 },
    motion: 'zoom_in',
    speed: 2,
    fade_in_sec: 1,
    fade_out_sec: 1,
  };
  const expected: Record<string, readonly ApplicableField[]> = {
    'video image': ['asset_id', 'trim_start_sec', 'volume', 'transition_in', 'motion'],
    'video video': [
      'asset_id',
      'trim_start_sec',
      'volume',
      'transition_in',
      'speed',
      'fade_in_sec',
      'fade_out_sec',
    ],
    'voice audio': ['asset_id', 'trim_start_sec', 'volume', 'fade_in_sec', 'fade_out_sec'],
    'music video': ['asset_id', 'trim_start_sec', 'volume', 'fade_in_sec', 'fade_out_sec'],
    'sfx audio': ['asset_id', 'trim_start_sec', 'volume', 'fade_in_sec', 'fade_out_sec'],
    'text text': ['text', 'style', 'position', 'color', 'background', 'fade_in_sec', 'fade_out_sec'],
  };

  it('follows the table of docs/editor.md for every kind of clip', () => {
    for (const [key, fields] of Object.entries(expected)) {
      const [track, kind] = key.split(' ') as [Track, ClipKind];
      for (const field of APPLICABLE_FIELDS) {
        assert.equal(fieldApplies(field, track, kind), fields.includes(field), `${field} on ${key}`);
      }
    }
  });

  it('refuses each field off its clips with `<field> does not apply to <kind> clips`, on POST and PATCH', () => {
    for (const [key, fields] of Object.entries(expected)) {
      const [track, kind] = key.split(' ') as [Track, ClipKind];
      const assetKind = kind === 'text' ? undefined : kind;
      const base = track === 'text' ? { track, text: 'x' } : { track, asset_id: 'va_x' };
      for (const field of APPLICABLE_FIELDS) {
        if (field === 'asset_id') continue;
        const answer = add({ ...base, [field]: value[field] }, assetKind);
        const patched = patch({ [field]: value[field] }, track, assetKind);
        const refusal = `${field} does not apply to ${kind} clips`;
        assert.equal(answer, fields.includes(field) ? 'ok' : refusal, `POST ${field} on ${key}`);
        assert.equal(patched, fields.includes(field) ? 'ok' : refusal, `PATCH ${field} on ${key}`);
      }
    }
  });

  it('reads `null` as "none" (no asset, no transition): never refused', () => {
    assert.equal(clipFieldsProblem({ transition_in: null, position: null }, 'music', 'audio', false), null);
    assert.equal(add({ ...music, transition_in: null }, 'audio'), 'ok');
  });

  it('judges only what the track decides while the asset’s kind is unknown (the actor judges the rest)', () => {
    assert.equal(add({ ...video, motion: 'zoom_in' }), 'ok');
    assert.equal(add({ ...video, text: 'x' }), 'ok');
    assert.equal(add({ ...title, motion: 'zoom_in' }), 'motion does not apply to text clips');
    assert.equal(
      clipFieldsProblem({ motion: 'zoom_in' }, 'video', 'video', false),
      'motion does not apply to video clips',
    );
  });
});

const sources = new Map<string, ClipSource>([
  ['img', { kind: 'image', durationSec: null }],
  ['vid10', { kind: 'video', durationSec: 10 }],
  ['vid4', { kind: 'video', durationSec: 4 }],
  ['snd20', { kind: 'audio', durationSec: 20 }],
]);
const sourceOf = (id: string) => sources.get(id);

let nextId = 0;
type Clip = TimelineClip & { id: string };
const onTrack = (track: Track, clips: Partial<Clip>[]): Clip[] =>
  clips.map((fields, idx) => ({
    id: `c${nextId++}`,
    track,
    idx,
    asset_id: 'img',
    start_sec: null,
    trim_start_sec: 0,
    duration_sec: null,
    ...fields,
  }));
const fade = (duration_sec: number) => ({ type: 'fade' as const, duration_sec });

describe('transitions against the clips they join', () => {
  it('allows up to half of each clip, refuses more, on the clip itself and the one before', () => {
    const clips = onTrack('video', [
      { duration_sec: 4 },
      { duration_sec: 2, transition_in: fade(1) },
      { duration_sec: 6, transition_in: fade(1) },
    ]);
    assert.deepEqual([...overlongTransitions(clips, sourceOf)], []);
    // 1.5 s is more than half of the 2 s clip before it, and of itself below.
    const longer = clips.map((clip, i) => (i === 2 ? { ...clip, transition_in: fade(1.5) } : clip));
    assert.deepEqual([...overlongTransitions(longer, sourceOf)], [longer[2]!.id]);
    const itself = onTrack('video', [{ duration_sec: 10 }, { duration_sec: 2, transition_in: fade(1.2) }]);
    assert.deepEqual([...overlongTransitions(itself, sourceOf)], [itself[1]!.id]);
  });

  it('holds the first clip’s transition (a fade in from black) to half of itself only', () => {
    const first = onTrack('video', [{ duration_sec: 3, transition_in: fade(1.5) }, { duration_sec: 1 }]);
    assert.deepEqual([...overlongTransitions(first, sourceOf)], []);
    first[0]!.transition_in = fade(1.6);
    assert.deepEqual([...overlongTransitions(first, sourceOf)], [first[0]!.id]);
  });

  it('measures a clip as it plays: trims, the source’s end and speed count', () => {
    // vid4 trimmed by 3 plays 1 s: a 0.6 s transition into the next clip is more than half of it.
    const clips = onTrack('video', [
      { asset_id: 'vid4', trim_start_sec: 3 },
      { duration_sec: 5, transition_in: fade(0.6) },
    ]);
    assert.deepEqual([...overlongTransitions(clips, sourceOf)], [clips[1]!.id]);
    // At speed 4, vid10 lasts 2.5 s: a 1.3 s transition on it is too long, 1.25 s fits.
    const fast = onTrack('video', [
      { duration_sec: 5 },
      { asset_id: 'vid10', speed: 4, transition_in: fade(1.3) },
    ]);
    assert.deepEqual([...overlongTransitions(fast, sourceOf)], [fast[1]!.id]);
    fast[1]!.transition_in = fade(1.25);
    assert.deepEqual([...overlongTransitions(fast, sourceOf)], []);
  });

  it('gives a transition its new neighbour when the clip between goes or plays nothing', () => {
    const [a, b, c] = onTrack('video', [
      { duration_sec: 2 },
      { duration_sec: 6 },
      { duration_sec: 6, transition_in: fade(1.5) },
    ]);
    assert.deepEqual([...overlongTransitions([a!, b!, c!], sourceOf)], []);
    const withoutB = [a!, { ...c!, idx: 1 }];
    assert.deepEqual([...overlongTransitions(withoutB, sourceOf)], [c!.id], 'now it joins the 2 s clip');
    const bPlaysNothing = [a!, { ...b!, asset_id: 'vid4', duration_sec: null, trim_start_sec: 5 }, c!];
    assert.deepEqual([...overlongTransitions(bPlaysNothing, sourceOf)], [c!.id]);
  });
});

describe('the timeline’s length with overlaps, speed and text', () => {
  it('is Σ durations − Σ transitions on the video track; the first clip’s transition overlaps nothing', () => {
    const clips = onTrack('video', [
      { duration_sec: 4, transition_in: fade(1) },
      { duration_sec: 4, transition_in: fade(1) },
      { duration_sec: 4, transition_in: { type: 'fadeblack', duration_sec: 2 } },
    ]);
    assert.equal(timelineEndSec(clips, sourceOf), 12 - 1 - 2);
  });

  it('plays a video at speed s for (source − trim) / s, and duration_sec as timeline time', () => {
    const [atSpeed] = onTrack('video', [{ asset_id: 'vid10', speed: 2, trim_start_sec: 2 }]);
    assert.equal(playedSec(atSpeed!, sourceOf('vid10')), 4);
    const [timed] = onTrack('video', [{ asset_id: 'vid10', speed: 0.5, duration_sec: 12 }]);
    assert.equal(playedSec(timed!, sourceOf('vid10')), 12, '6 s of source at half speed');
    const [clamped] = onTrack('video', [{ asset_id: 'vid10', speed: 2, duration_sec: 8 }]);
    assert.equal(playedSec(clamped!, sourceOf('vid10')), 5, 'never past the source’s end');
    // Speed is the video track's: a video's sound on the music track plays at its own pace.
    const [sound] = onTrack('music', [{ asset_id: 'vid10', speed: 2 }]);
    assert.equal(playedSec(sound!, sourceOf('vid10')), 10);
  });

  it('places text clips after each other (3 s by default) or at their start_sec, and counts their end', () => {
    const texts = onTrack('text', [
      { asset_id: null, duration_sec: null },
      { asset_id: null, duration_sec: 2 },
      { asset_id: null, start_sec: 30, duration_sec: 4 },
      { asset_id: null, duration_sec: 1 },
    ]);
    assert.equal(timelineEndSec(texts.slice(0, 2), sourceOf), 5);
    assert.equal(timelineEndSec(texts, sourceOf), 35);
    const picture = onTrack('video', [{ duration_sec: 40 }]);
    assert.equal(timelineEndSec([...picture, ...texts], sourceOf), 40);
  });

  it('bounds a text clip’s duration_sec at 0.5 to 60', () => {
    assert.equal(CLIP_DURATION_MAX_SEC.text, 60);
    assert.equal(clipNumberProblem('text', { duration_sec: 60 }), null);
    assert.equal(clipNumberProblem('text', { duration_sec: 61 }), 'duration_sec must be at most 60');
    assert.equal(clipNumberProblem('text', { duration_sec: 0.49 }), 'duration_sec must be at least 0.5');
    assert.equal(clipNumberProblem('text', { duration_sec: -1 }), 'duration_sec must be a number > 0');
  });
});

describe('what a clip reads back', () => {
  const stored = (fields: Partial<ClipRecord>): ClipRecord => ({
    id: 'vc_1',
    video_id: 'vv_1',
    track: 'video',
    idx: 0,
    asset_id: 'va_1',
    start_sec: null,
    trim_start_sec: 0,
    duration_sec: null,
    volume: 1,
    created_at: new Date(0),
    ...fields,
  });
  const effects = (view: ReturnType<typeof toClipView>) => ({
    text: view.text,
    style: view.style,
    position: view.position,
    color: view.color,
    background: view.background,
    transition_in: view.transition_in,
    motion: view.motion,
    speed: view.speed,
    fade_in_sec: view.fade_in_sec,
    fade_out_sec: view.fade_out_sec,
  });
  const none = { text: null, style: null, position: null, color: null, background: null };

  it('gives a clip stored before the second edition its defaults where they apply, null elsewhere', () => {
    assert.deepEqual(effects(toClipView(stored({ duration_sec: 5 }), 'image')), {
      ...none,
      transition_in: null,
      motion: 'none',
      speed: null,
      fade_in_sec: null,
      fade_out_sec: null,
    });
    assert.deepEqual(effects(toClipView(stored({}), 'video')), {
      ...none,
      transition_in: null,
      motion: null,
      speed: 1,
      fade_in_sec: 0,
      fade_out_sec: 0,
    });
    const onMusic = toClipView(stored({ track: 'music', start_sec: 2 }), 'audio');
    assert.deepEqual(effects(onMusic), {
      ...none,
      transition_in: null,
      motion: null,
      speed: null,
      fade_in_sec: 0,
      fade_out_sec: 0,
    });
    // The first edition's fields read as they were.
    assert.equal(onMusic.start_sec, 2);
    assert.equal(onMusic.volume, 1);
    assert.equal(onMusic.trim_start_sec, 0);
    assert.equal(onMusic.asset_id, 'va_1');
  });

  it('reads back what was set', () => {
    const view = toClipView(
      stored({ transition_in: fade(0.8), speed: 1.5, fade_in_sec: 2, fade_out_sec: 0.5 }),
      'video',
    );
    assert.deepEqual(view.transition_in, fade(0.8));
    assert.equal(view.speed, 1.5);
    assert.equal(view.fade_in_sec, 2);
    assert.equal(view.fade_out_sec, 0.5);
  });

  it('gives a text clip its style’s look, white, and fades of 0.3 s cut to half its duration', () => {
    const base = { track: 'text' as const, asset_id: null, text: 'Hi', duration_sec: 3 };
    for (const style of ['title', 'lower_third', 'caption'] as const) {
      const view = toClipView(stored({ ...base, style, position: null, background: null }), undefined);
      assert.equal(view.position, TEXT_STYLE_DEFAULTS[style].position, style);
      assert.equal(view.background, TEXT_STYLE_DEFAULTS[style].background, style);
    }
    const view = toClipView(stored(base), undefined);
    assert.deepEqual(
      { ...effects(view), asset_id: view.asset_id, trim_start_sec: view.trim_start_sec, volume: view.volume },
      {
        text: 'Hi',
        style: 'title',
        position: 'center',
        color: '#FFFFFF',
        background: 'none',
        transition_in: null,
        motion: null,
        speed: null,
        fade_in_sec: 0.3,
        fade_out_sec: 0.3,
        asset_id: null,
        trim_start_sec: null,
        volume: null,
      },
    );
    const short = toClipView(stored({ ...base, duration_sec: 0.5 }), undefined);
    assert.equal(short.fade_in_sec, 0.25);
    assert.equal(short.fade_out_sec, 0.25);
    const set = toClipView(
      stored({ ...base, position: 'top', background: 'box', fade_in_sec: 1 }),
      undefined,
    );
    assert.equal(set.position, 'top');
    assert.equal(set.background, 'box');
    assert.equal(set.fade_in_sec, 1);
  });

  it('looks each clip’s asset up in the library', () => {
    const views = toClipViews(
      [stored({ id: 'a', asset_id: 'va_i' }), stored({ id: 'b', asset_id: 'va_v' })],
      [
        { id: 'va_i', kind: 'image' },
        { id: 'va_v', kind: 'video' },
      ],
    );
    assert.deepEqual(
      views.map((view) => [view.motion, view.speed]),
      [
        ['none', null],
        [null, 1],
      ],
    );
  });
});
