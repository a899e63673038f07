// The builtin director's phrases for the look of a video (docs/editor.md, The builtin director): titles and
// captions, transitions, motion, speed, sound fades and previews, as people type them, and the near-misses that
// must keep their old meaning (plain edits, storyboards, "continue").
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseDirectorIntent } from '../../src/editor/agents/director-intents.ts';

const text = (
  style: string,
  words: string,
  start_sec: number | null = null,
  duration_sec: number | null = null,
) => ({
  kind: 'add_text',
  style,
  text: words,
  start_sec,
  duration_sec,
});

describe('director phrases: titles and captions', () => {
  it('"add a title <text>" takes everything after it as the words', () => {
    const cases: [string, ReturnType<typeof text>][] = [
      ['add a title Lighthouse at Dawn', text('title', 'Lighthouse at Dawn')],
      ['Add a title "The End"', text('title', 'The End')],
      ['add a title: Harbour lights.', text('title', 'Harbour lights')],
      ['please add a title saying Welcome home!', text('title', 'Welcome home!')],
      ['add the title “Après la pluie”', text('title', 'Après la pluie')],
      ['put a big title that says Day One', text('title', 'Day One')],
      ['add a title card Chapter 1', text('title', 'Chapter 1')],
      ['add a title Remove clip 2', text('title', 'Remove clip 2')],
      ['add a title continue', text('title', 'continue')],
      ['add a lower third Anna Berg, keeper', text('lower_third', 'Anna Berg, keeper')],
      ['add a title', text('title', '')],
    ];
    for (const [phrase, intent] of cases) assert.deepEqual(parseDirectorIntent(phrase), intent, phrase);
  });

  it('"add a caption <text> at <n> seconds" reads the time before or after the words, and a duration', () => {
    const cases: [string, ReturnType<typeof text>][] = [
      ['add a caption Low tide at 5 seconds', text('caption', 'Low tide', 5)],
      ['add a caption "Low tide" at 5 seconds', text('caption', 'Low tide', 5)],
      ['Add a caption Low tide at 2.5s.', text('caption', 'Low tide', 2.5)],
      ['add a caption at 7 seconds saying The keeper wakes', text('caption', 'The keeper wakes', 7)],
      ['add a caption Gulls at 0:12', text('caption', 'Gulls', 12)],
      ['add a caption Gulls at ten seconds for 4 seconds', text('caption', 'Gulls', 10, 4)],
      ['add a caption Gulls for 4 seconds at 10 seconds', text('caption', 'Gulls', 10, 4)],
      ['add a subtitle Night falls at the start', text('caption', 'Night falls', 0)],
      ['add a caption Meet me at Dawn', text('caption', 'Meet me at Dawn')],
      ['add a title Lighthouse at 3 seconds', text('title', 'Lighthouse', 3)],
    ];
    for (const [phrase, intent] of cases) assert.deepEqual(parseDirectorIntent(phrase), intent, phrase);
  });
});

describe('director phrases: transitions', () => {
  const transition = (
    type: string,
    duration_sec: number | null = null,
    clip: number | 'last' | null = null,
  ) => ({
    kind: 'set_transition',
    type,
    duration_sec,
    clip,
  });

  it('crossfades and fades to black or white on every cut', () => {
    const cases: [string, ReturnType<typeof transition>][] = [
      ['crossfade between the scenes', transition('fade')],
      ['Crossfade between the scenes, please.', transition('fade')],
      ['cross-fade between clips', transition('fade')],
      ['add crossfades', transition('fade')],
      ['dissolve between the shots', transition('fade')],
      ['fade to black between scenes', transition('fadeblack')],
      ['Fade through black between the scenes', transition('fadeblack')],
      ['fade to white between scenes', transition('fadewhite')],
      ['use wipes between the scenes', transition('wipeleft')],
      ['a wipe to the right between the clips', transition('wiperight')],
      ['slide between scenes', transition('slideleft')],
      ['circle open between the scenes', transition('circleopen')],
      ['a 2-second crossfade between the scenes', transition('fade', 2)],
      ['crossfade between the scenes over half a second', transition('fade', 0.5)],
      ['a slow crossfade between the scenes', transition('fade', 2)],
      ['a quick dissolve between the clips', transition('fade', 0.5)],
    ];
    for (const [phrase, intent] of cases) assert.deepEqual(parseDirectorIntent(phrase), intent, phrase);
  });

  it('names one cut by its clip, and removes transitions', () => {
    assert.deepEqual(parseDirectorIntent('crossfade into clip 3'), transition('fade', null, 3));
    assert.deepEqual(parseDirectorIntent('a dissolve between clips 2 and 3'), transition('fade', null, 3));
    assert.deepEqual(
      parseDirectorIntent('fade to black between scene 1 and scene 2'),
      transition('fadeblack', null, 2),
    );
    assert.deepEqual(parseDirectorIntent('no transitions'), transition('none'));
    assert.deepEqual(parseDirectorIntent('remove the transitions'), transition('none'));
    assert.deepEqual(parseDirectorIntent('remove the transition on clip 2'), transition('none', null, 2));
    assert.deepEqual(parseDirectorIntent('just hard cuts please'), transition('none'));
  });
});

describe('director phrases: motion and speed', () => {
  it('"slow zoom on the images" and the other motions', () => {
    const motion = (m: string, clip: number | null = null) => ({ kind: 'set_motion', motion: m, clip });
    const cases: [string, ReturnType<typeof motion>][] = [
      ['slow zoom on the images', motion('zoom_in')],
      ['Slow zoom on the images.', motion('zoom_in')],
      ['add a slow zoom to the pictures', motion('zoom_in')],
      ['zoom in on the photos', motion('zoom_in')],
      ['ken burns on the stills', motion('zoom_in')],
      ['zoom out on the images', motion('zoom_out')],
      ['pan left across the images', motion('pan_left')],
      ['pan across the photos', motion('pan_right')],
      ['zoom in on clip 2', motion('zoom_in', 2)],
      ['no zoom on the images', motion('none')],
      ['keep the images still', motion('none')],
    ];
    for (const [phrase, intent] of cases) assert.deepEqual(parseDirectorIntent(phrase), intent, phrase);
  });

  it('"play clip <n> at half speed" and other speeds', () => {
    const speed = (s: number, clip: number | 'last' | 'all') => ({ kind: 'set_speed', speed: s, clip });
    const cases: [string, ReturnType<typeof speed>][] = [
      ['play clip 2 at half speed', speed(0.5, 2)],
      ['Play clip two at half speed!', speed(0.5, 2)],
      ['play the second clip at double speed', speed(2, 2)],
      ['clip 3 at 1.5x', speed(1.5, 3)],
      ['play clip 1 at 2× speed', speed(2, 1)],
      ['slow motion on scene 2', speed(0.5, 2)],
      ['speed up the last clip', speed(2, 'last')],
      ['play clip 4 at quarter speed', speed(0.25, 4)],
      ['play all clips at normal speed', speed(1, 'all')],
    ];
    for (const [phrase, intent] of cases) assert.deepEqual(parseDirectorIntent(phrase), intent, phrase);
  });
});

describe('director phrases: sound fades and previews', () => {
  it('"fade out the music at the end" and its variants', () => {
    const fade = (track: string, edge: string, duration_sec: number | null = null) => ({
      kind: 'fade_audio',
      track,
      edge,
      duration_sec,
    });
    const cases: [string, ReturnType<typeof fade>][] = [
      ['fade out the music at the end', fade('music', 'out')],
      ['Fade out the music at the end.', fade('music', 'out')],
      ['fade the music out over 3 seconds', fade('music', 'out', 3)],
      ['fade in the music', fade('music', 'in')],
      ['the narration fades out', fade('voice', 'out')],
      ['fade out the sound effects', fade('sfx', 'out')],
      ['a 4 second fade-out on the music', fade('music', 'out', 4)],
    ];
    for (const [phrase, intent] of cases) assert.deepEqual(parseDirectorIntent(phrase), intent, phrase);
  });

  it('"export a preview" asks for the preview quality', () => {
    for (const phrase of ['export a preview', 'export a quick preview', 'preview it', 'show me a preview'])
      assert.deepEqual(
        parseDirectorIntent(phrase),
        { kind: 'export', fit: null, quality: 'preview' },
        phrase,
      );
    assert.deepEqual(parseDirectorIntent('export it'), { kind: 'export', fit: null, quality: null });
    assert.deepEqual(parseDirectorIntent('export the final video'), {
      kind: 'export',
      fit: null,
      quality: 'final',
    });
  });
});

describe('director phrases: what the look phrases leave alone', () => {
  it('plain edits, storyboards and "continue" keep their meaning', () => {
    assert.deepEqual(parseDirectorIntent('remove clip 2'), { kind: 'remove_clip', clip: 2 });
    assert.deepEqual(parseDirectorIntent('move clip 3 to the start'), {
      kind: 'move_clip',
      clip: 3,
      to: { kind: 'start' },
    });
    assert.equal(parseDirectorIntent('add the image as scene 2').kind, 'add_to_video');
    assert.equal(parseDirectorIntent('a 3-scene video about old photos and a slow zoom').kind, 'storyboard');
    assert.equal(parseDirectorIntent('a video about a playground slide in every park').kind, 'storyboard');
    assert.deepEqual(parseDirectorIntent('keep going, slow motion'), {
      kind: 'continue',
      note: 'slow motion',
    });
    assert.equal(parseDirectorIntent('remove clip 2, it is too slow').kind, 'remove_clip');
    assert.equal(parseDirectorIntent('make it 16:9').kind, 'set_aspect_ratio');
  });

  it('what it cannot do is help, not a guess', () => {
    for (const phrase of [
      'fade to black at the end',
      'play it at half speed',
      'make it prettier',
      'add some sparkles',
    ])
      assert.deepEqual(parseDirectorIntent(phrase), { kind: 'help', asked: false }, phrase);
  });
});
