// The builtin director's reading of "continue" and "export" as people type them (docs/editor.md): every
// phrase with and without trailing words and punctuation, and the near-misses that must not start a scene.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CONTINUE_NOTE_MAX, parseDirectorIntent } from '../../src/editor/agents/director-intents.ts';

const PHRASES = ['continue', 'ok, continue', 'yes please', 'next', 'go on', 'next scene'];

/** `phrase` written the ways people write it: capitalised, shouted, punctuated, padded. */
function variants(phrase: string): string[] {
  const capitalised = phrase[0]!.toUpperCase() + phrase.slice(1);
  return [
    phrase,
    capitalised,
    phrase.toUpperCase(),
    `${phrase}.`,
    `${capitalised}!`,
    `${phrase}!!`,
    `${phrase}?`,
    `${phrase}...`,
    `  ${phrase}  `,
    `"${phrase}"`,
    `${phrase} please`,
    `${phrase}, please.`,
    `${phrase} thanks!`,
  ];
}

describe('director phrases: continue', () => {
  for (const phrase of PHRASES) {
    it(`"${phrase}" continues, with or without punctuation and politeness`, () => {
      for (const text of variants(phrase))
        assert.deepEqual(parseDirectorIntent(text), { kind: 'continue', note: '' }, text);
    });
  }

  it('the phrases in their longer forms continue too', () => {
    for (const text of [
      'Next!',
      'go on please.',
      'Okay, next scene',
      'ok continue',
      'Yes, go ahead',
      'sure, next one',
      'Sounds good, keep going',
      'alright, carry on!',
      'yes',
      'OK',
      'yep.',
      'proceed',
      "let's continue",
      'please continue',
      'thanks, next',
      'Great, do it',
      'generate the next scene',
      'Make the next one.',
      'go',
      'generate it',
    ])
      assert.deepEqual(parseDirectorIntent(text), { kind: 'continue', note: '' }, text);
  });

  it('the words after the phrase are a note for the scene', () => {
    const cases: [string, string][] = [
      ['continue with the sunset', 'the sunset'],
      ['continue with the sunset!', 'the sunset'],
      ['Continue with the sunset, please.', 'the sunset'],
      ['continue [sandbox:fail]', '[sandbox:fail]'],
      ['continue [sandbox:delay=5000]', '[sandbox:delay=5000]'],
      ['ok, continue [sandbox:fail]', '[sandbox:fail]'],
      ['next: more fog', 'more fog'],
      ['next scene with seagulls', 'seagulls'],
      ['go on, and make it rain', 'make it rain'],
      ['Next scene — darker, moodier', 'darker, moodier'],
      ['yes please, with more fog', 'more fog'],
      ['yes [sandbox:fail]', '[sandbox:fail]'],
      ['keep going, slow motion', 'slow motion'],
    ];
    for (const [text, note] of cases)
      assert.deepEqual(parseDirectorIntent(text), { kind: 'continue', note }, text);
  });

  it(`a note is cut at ${CONTINUE_NOTE_MAX} characters`, () => {
    const intent = parseDirectorIntent(`continue with ${'fog '.repeat(200)}`);
    assert.equal(intent.kind, 'continue');
    assert.equal((intent as { note: string }).note.length, CONTINUE_NOTE_MAX - 1); // its last character, a space, trimmed
  });

  it('near-misses do not continue', () => {
    for (const text of [
      "don't continue",
      'do not continue',
      'no',
      'No, stop.',
      'not yet',
      'please don’t continue',
      "ok, don't continue",
      'stop',
      'wait',
      'yes, but make it darker',
      'ok, what can you do?',
      'go to scene 2',
      'next to the lighthouse',
      'thanks',
      'please',
      'can you continue?',
      'discontinue',
      'continued',
      'nextly',
    ]) {
      assert.notEqual(parseDirectorIntent(text).kind, 'continue', text);
    }
  });

  it('an edit or a new plan wins over a leading "ok"', () => {
    assert.deepEqual(parseDirectorIntent('ok, remove clip 2'), { kind: 'remove_clip', clip: 2 });
    assert.equal(parseDirectorIntent('yes, but make it 16:9').kind, 'set_aspect_ratio');
    assert.equal(parseDirectorIntent('next, a 3-scene video about cats').kind, 'storyboard');
  });
});

describe('director phrases: export', () => {
  it('"export it" and "export the video" export, with trailing words and punctuation', () => {
    for (const text of [
      'export it',
      'Export it!',
      'export the video',
      'Export the video.',
      'please export it',
      'ok, export it now',
      'export it please',
      'EXPORT THE VIDEO',
      'export',
    ])
      assert.deepEqual(parseDirectorIntent(text), { kind: 'export', fit: null, quality: null }, text);
  });

  it('reads fill (cropping) and fit (letterboxing)', () => {
    assert.deepEqual(parseDirectorIntent('export it cropped'), {
      kind: 'export',
      fit: 'fill',
      quality: null,
    });
    assert.deepEqual(parseDirectorIntent('export the video to fill the frame'), {
      kind: 'export',
      fit: 'fill',
      quality: null,
    });
    assert.deepEqual(parseDirectorIntent('export it letterboxed'), {
      kind: 'export',
      fit: 'fit',
      quality: null,
    });
  });

  it('a negated export does not export', () => {
    for (const text of ["don't export yet", 'do not export it', 'not export', 'never export this'])
      assert.deepEqual(parseDirectorIntent(text), { kind: 'help', asked: false }, text);
  });
});

describe('director phrases: help', () => {
  it('tells asking what it can do from asking what it cannot', () => {
    assert.deepEqual(parseDirectorIntent('help'), { kind: 'help', asked: true });
    assert.deepEqual(parseDirectorIntent('What can you do?'), { kind: 'help', asked: true });
    assert.deepEqual(parseDirectorIntent('make the colours warmer'), { kind: 'help', asked: false });
    assert.deepEqual(parseDirectorIntent('add a voice-over'), { kind: 'help', asked: false });
  });
});
