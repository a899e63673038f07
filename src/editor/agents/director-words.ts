// The words the builtin director's grammar shares (docs/editor.md, The builtin director): numbers as digits,
// words and ordinals, clip references, seconds. Pure.

/** A clip of the video track as the user names it: a 1-based position, or the last one. */
export type DirectorClipRef = number | 'last';

export const NUMBER_WORDS: Readonly<Record<string, number>> = {
  one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, eleven: 11, twelve: 12,
}; // prettier-ignore
const ORDINALS: Readonly<Record<string, number>> = {
  first: 1, second: 2, third: 3, fourth: 4, fifth: 5, sixth: 6, seventh: 7, eighth: 8, ninth: 9, tenth: 10,
}; // prettier-ignore

/** A count: digits or a number word. */
export const NUM = `(?:\\d+|${Object.keys(NUMBER_WORDS).join('|')})`;
/** An ordinal: "3rd" or "third". */
export const ORD = `(?:\\d+(?:st|nd|rd|th)|${Object.keys(ORDINALS).join('|')})`;

/** A number written as digits, a word ("three") or an ordinal ("third", "3rd"). */
export function parseCount(word: string): number | null {
  const lower = word.toLowerCase();
  const digits = /^(\d+)(?:st|nd|rd|th)?$/.exec(lower);
  if (digits) return Number(digits[1]);
  return NUMBER_WORDS[lower] ?? ORDINALS[lower] ?? null;
}

/**
 * The first clip named in `text`: "clip 2", "clip #2", "clip two", "the second clip", "the last clip"; with
 * `nouns` other names of a clip too ("scene 2", "the second shot").
 */
export function parseClipRef(text: string, nouns = 'clip'): DirectorClipRef | null {
  const noun = `(?:${nouns})`;
  const numbered = new RegExp(`\\b${noun}\\s*(?:#|no\\.?\\s*|number\\s*)?(${NUM})\\b`, 'i').exec(text);
  if (numbered) return parseCount(numbered[1]!);
  const ordinal = new RegExp(`\\b(${ORD}|last)\\s+${noun}\\b`, 'i').exec(text);
  if (!ordinal) return null;
  return ordinal[1]!.toLowerCase() === 'last' ? 'last' : parseCount(ordinal[1]!);
}

/** A decimal number or a number word ("1.5", "two"); "half a" is 0.5 and "a" is 1 before a unit. */
const AMOUNT = `(\\d+(?:\\.\\d+)?|${Object.keys(NUMBER_WORDS).join('|')}|half\\s+an?|an?)`;
const SECONDS_UNIT = '(?:s|secs?|seconds?)\\b';

function amount(word: string): number | null {
  const lower = word.toLowerCase().replace(/\s+/g, ' ');
  if (/^\d/.test(lower)) return Number(lower);
  if (lower === 'half a' || lower === 'half an') return 0.5;
  if (lower === 'a' || lower === 'an') return 1;
  return NUMBER_WORDS[lower] ?? null;
}

/** Seconds written after `lead` ("over 2 seconds", "a 1.5-second …", "half a second"), or null. */
export function parseSeconds(text: string, lead = ''): number | null {
  const match = new RegExp(`${lead}\\b${AMOUNT}\\s*-?\\s*${SECONDS_UNIT}`, 'i').exec(text);
  return match ? amount(match[1]!) : null;
}

/** The pattern of a number of seconds, for phrases that cut it out of the text (its amount: group 1). */
export const SECONDS = `${AMOUNT}\\s*-?\\s*${SECONDS_UNIT}`;

/** The amount a `SECONDS` match captured. */
export const secondsOf = (captured: string): number | null => amount(captured);
