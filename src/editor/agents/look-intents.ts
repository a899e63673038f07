import type { Motion, TextStyle, TransitionType } from '../../../schemas/timeline-terms.ts';
import {
  NUM,
  SECONDS,
  parseClipRef,
  parseCount,
  parseSeconds,
  secondsOf,
  type DirectorClipRef,
} from './director-words.ts';

// The director's phrases for the look of a video (docs/editor.md, The builtin director): titles and captions,
// transitions, motion, speed and sound fades. Pure; each parser answers null unless the phrase is clearly
// one of its own, so plain edits and storyboard requests keep their meaning.

/** The sound tracks a fade can name. */
export type FadeTrack = 'music' | 'voice' | 'sfx';

export type LookIntent =
  /** `text` '' when none was given ("add a title"); `start_sec`/`duration_sec` null: not named. */
  | {
      kind: 'add_text';
      style: TextStyle;
      text: string;
      start_sec: number | null;
      duration_sec: number | null;
    }
  /** `clip` null: every cut; `duration_sec` null: not named (the director picks one that fits). */
  | {
      kind: 'set_transition';
      type: TransitionType | 'none';
      duration_sec: number | null;
      clip: DirectorClipRef | null;
    }
  /** `clip` null: every image of the video track. */
  | { kind: 'set_motion'; motion: Motion; clip: DirectorClipRef | null }
  /** `clip` 'all': every video clip of the video track. */
  | { kind: 'set_speed'; speed: number; clip: DirectorClipRef | 'all' }
  /** `duration_sec` null: not named. */
  | { kind: 'fade_audio'; track: FadeTrack; edge: 'in' | 'out'; duration_sec: number | null };

// --- Text: "add a title <text>", "add a caption <text> at <n> seconds" ---

const LEAD_IN = `^(?:(?:please|pls|ok(?:ay)?|now|and|then|also|next|could\\s+you|can\\s+you|would\\s+you|i'?d\\s+like\\s+to|let'?s)[\\s,]+)*`;
const TEXT_KINDS: readonly [string, TextStyle][] = [
  ['title\\s+card|title|headline|heading', 'title'],
  ['lower[\\s-]?third', 'lower_third'],
  ['caption|subtitle|text|label', 'caption'],
];
const TEXT_LEAD = new RegExp(
  `${LEAD_IN}(?:add|put|insert|place|create|make|show|overlay|write|give\\s+it)\\s+` +
    `(?:(?:a|an|the|one|another|some|this|my)\\s+)?(?:(?:big|large|small|short|little|new|opening)\\s+)?` +
    `(${TEXT_KINDS.map(([words]) => words).join('|')})\\b`,
  'i',
);
/** What may stand between the kind and the words: "saying", "that says", ":", "with the text". */
const TEXT_CONNECTOR =
  /^[\s,:\-–—]*(?:(?:that|which)\s+(?:says|reads)|saying|reading|with\s+(?:the\s+)?(?:text|words?)|of|=)?[\s,:\-–—]*/i;
const CLOCK = '(\\d{1,2}):(\\d{2}(?:\\.\\d+)?)';
const AT_TIME = new RegExp(
  `(?:^|\\s|,)(?:at|from|starting\\s+at|after|@)\\s+(?:(?:the\\s+)?(?:${CLOCK}|${SECONDS})(?:\\s+mark)?|(?:the\\s+)?(start|beginning))[\\s,.]*$`,
  'i',
);
const AT_TIME_FIRST = new RegExp(
  `^(?:at|from|starting\\s+at|after|@)\\s+(?:(?:the\\s+)?(?:${CLOCK}|${SECONDS})(?:\\s+mark)?|(?:the\\s+)?(start|beginning))[\\s,]*`,
  'i',
);
const FOR_TIME = new RegExp(`(?:^|\\s|,)for\\s+${SECONDS}[\\s,.]*$`, 'i');
const FOR_TIME_FIRST = new RegExp(`^for\\s+${SECONDS}[\\s,]*`, 'i');
const QUOTED = /^["“”'‘’«»]([\s\S]*)["“”'‘’«»]$/;

function timeOf(match: RegExpExecArray): number | null {
  if (match[1] !== undefined) return Number(match[1]) * 60 + Number(match[2]);
  if (match[3] !== undefined) return secondsOf(match[3]);
  return 0; // "at the start"
}

/** "add a title Lighthouse at Dawn", "add a caption "Low tide" at 5 seconds for 3 seconds". */
export function parseAddText(text: string): LookIntent | null {
  const lead = TEXT_LEAD.exec(text);
  if (!lead) return null;
  const style = TEXT_KINDS.find(([words]) => new RegExp(`^(?:${words})$`, 'i').test(lead[1]!))![1];
  let rest = text.slice(lead[0].length).replace(TEXT_CONNECTOR, '');
  let start: number | null = null;
  let duration: number | null = null;
  // The timing may come before or after the words, in either order.
  for (let changed = true; changed;) {
    changed = false;
    const at = AT_TIME_FIRST.exec(rest) ?? AT_TIME.exec(rest);
    if (at && start === null) {
      start = timeOf(at);
      rest = at.index === 0 ? rest.slice(at[0].length) : rest.slice(0, at.index);
      changed = true;
    }
    const lasting = FOR_TIME_FIRST.exec(rest) ?? FOR_TIME.exec(rest);
    if (lasting && duration === null) {
      duration = secondsOf(lasting[1]!);
      rest = lasting.index === 0 ? rest.slice(lasting[0].length) : rest.slice(0, lasting.index);
      changed = true;
    }
    rest = rest.replace(TEXT_CONNECTOR, '').trim();
  }
  const quoted = QUOTED.exec(rest);
  const words = quoted ? quoted[1]!.trim() : rest.replace(/[\s.,;]+$/, '').trim();
  return { kind: 'add_text', style, text: words, start_sec: start, duration_sec: duration };
}

// --- Transitions: "crossfade between the scenes", "fade to black between scenes" ---

const TRANSITION_WORDS: readonly [RegExp, TransitionType | 'none'][] = [
  [
    /\bfade[sd]?\s+(?:to|through|via|into)\s+black\b|\bdip(?:s)?\s+to\s+black\b|\bblack\s+fades?\b/i,
    'fadeblack',
  ],
  [
    /\bfade[sd]?\s+(?:to|through|via|into)\s+white\b|\bdip(?:s)?\s+to\s+white\b|\bwhite\s+flash(?:es)?\b/i,
    'fadewhite',
  ],
  [/\bcross[\s-]?(?:fade|dissolve)[sd]?\b|\bdissolve[sd]?\b|\bfade[sd]?\s+between\b|\bblend\b/i, 'fade'],
  [/\bwipe[sd]?\b(?:\s+(?:to\s+the\s+|from\s+the\s+)?right\b)/i, 'wiperight'],
  [/\bwipe[sd]?\b/i, 'wipeleft'],
  [/\bslide[sd]?\b(?:\s+(?:to\s+the\s+|from\s+the\s+)?right\b)/i, 'slideright'],
  [/\bslide[sd]?\b/i, 'slideleft'],
  [/\b(?:circle|iris)(?:\s+open)?\b/i, 'circleopen'],
];
const NO_TRANSITIONS =
  /\b(?:no\s+|remove\s+(?:the\s+|all\s+(?:the\s+)?)?|delete\s+(?:the\s+|all\s+(?:the\s+)?)?|without\s+(?:any\s+)?|drop\s+(?:the\s+)?)transitions?\b|\b(?:hard|straight|plain|just)\s+cuts?\b/i;
/** Where a transition goes: between clips, at the cuts, on every scene. */
const TRANSITION_PLACE =
  /\b(?:between|cuts?|transitions?|scenes?|clips?|shots?|each|every|all)\b|\b(?:add|use|put|apply)\b/i;

/** "crossfade between the scenes", "fade to black between scenes", "a 2-second dissolve into clip 3". */
export function parseTransition(text: string): LookIntent | null {
  const none = NO_TRANSITIONS.test(text);
  const found = TRANSITION_WORDS.find(([pattern]) => pattern.test(text));
  if (!none && !(found && TRANSITION_PLACE.test(text))) return null;
  const type = none ? 'none' : found![1];
  const between = new RegExp(
    `\\bbetween\\s+(?:clips?|scenes?|shots?)\\s*(${NUM})\\s+and\\s+(?:clip\\s+|scene\\s+|shot\\s+)?(${NUM})\\b`,
    'i',
  ).exec(text);
  const first = between ? parseCount(between[1]!) : null;
  const second = between ? parseCount(between[2]!) : null;
  const clip =
    first !== null && second !== null ? Math.max(first, second) : parseClipRef(text, 'clip|scene|shot');
  let duration = parseSeconds(text);
  if (duration === null && /\b(?:slow|long|gentle)\b/i.test(text)) duration = 2;
  if (duration === null && /\b(?:quick|short|fast|brief)\b/i.test(text)) duration = 0.5;
  return { kind: 'set_transition', type, duration_sec: type === 'none' ? null : duration, clip };
}

// --- Motion: "slow zoom on the images" ---

const MOTION_WORDS: readonly [RegExp, Motion][] = [
  [
    /\b(?:no\s+|remove\s+(?:the\s+)?|stop\s+(?:the\s+)?|without\s+)(?:motion|movement|zoom(?:ing)?|pan(?:ning)?|ken\s+burns)\b|\bkeep\s+(?:the\s+\w+\s+|them\s+|it\s+)?still\b/i,
    'none',
  ],
  [/\bzoom(?:s|ing)?\s+out\b|\bpull(?:s|ing)?[\s-]?(?:back|out)\b/i, 'zoom_out'],
  [
    /\bpan(?:s|ning)?\s+(?:to\s+(?:the\s+)?)?left\b|\bpan(?:s|ning)?\s+(?:from\s+)?right\s+to\s+left\b/i,
    'pan_left',
  ],
  [/\bpan(?:s|ning)?\b/i, 'pan_right'],
  [/\bzoom(?:s|ing)?\b|\bken\s+burns\b|\bpush(?:es|ing)?[\s-]?in\b/i, 'zoom_in'],
];
/** What the motion is put on: pictures, a clip, or everything. */
const PICTURES = /\b(?:images?|pictures?|photos?|photographs?|stills?|pics?)\b/i;
const EVERYTHING = /\b(?:them|everything|all\s+(?:of\s+them|clips|the\s+clips))\b/i;

/** "slow zoom on the images", "zoom out on clip 2", "pan left across the photos", "no zoom". */
export function parseMotion(text: string): LookIntent | null {
  const found = MOTION_WORDS.find(([pattern]) => pattern.test(text));
  if (!found) return null;
  const clip = parseClipRef(text, 'clip|scene|shot|image|picture|photo');
  if (clip === null && !PICTURES.test(text) && !EVERYTHING.test(text)) return null;
  return { kind: 'set_motion', motion: found[1], clip };
}

// --- Speed: "play clip 2 at half speed" ---

const SPEED_WORDS: readonly [RegExp, number | null][] = [
  [/\bquarter[\s-]+(?:the\s+)?speed\b/i, 0.25],
  [
    /\bhalf[\s-]+(?:the\s+)?speed\b|\b50\s*%\s*speed\b|\bslow[\s-]?mo(?:tion)?\b|\bslow(?:er|\s+(?:it\s+)?down)\b/i,
    0.5,
  ],
  [
    /\b(?:double|twice)(?:\s+the)?\s+speed\b|\btwice\s+as\s+fast\b|\bspeed\s+(?:it\s+)?up\b|\bfast(?:er|[\s-]?forward)\b/i,
    2,
  ],
  [/\b(?:normal|regular|original|real[\s-]?time)\s+speed\b/i, 1],
  [/\b(\d+(?:\.\d+)?)\s*(?:x|×|times)(?!\w)|\bspeed\s+(?:of\s+)?(\d+(?:\.\d+)?)\b/i, null],
];
const EVERY_VIDEO_CLIP =
  /\b(?:all|every|each)\s+(?:the\s+)?(?:clips?|scenes?|videos?|shots?)\b|\beverything\b/i;

/** "play clip 2 at half speed", "clip 3 at 2x", "slow motion on the second scene", "all clips at normal speed". */
export function parseSpeed(text: string): LookIntent | null {
  const found = SPEED_WORDS.find(([pattern]) => pattern.test(text));
  if (!found) return null;
  let speed = found[1];
  if (speed === null) {
    const match = found[0].exec(text)!;
    speed = Number(match[1] ?? match[2]);
  }
  const clip = parseClipRef(text, 'clip|scene|shot|video');
  if (clip !== null) return { kind: 'set_speed', speed, clip };
  return EVERY_VIDEO_CLIP.test(text) ? { kind: 'set_speed', speed, clip: 'all' } : null;
}

// --- Sound fades: "fade out the music at the end" ---

const FADE_TRACK =
  '(?<track>music|soundtrack|song|score|voice(?:[\\s-]?over)?|narration|narrator|sound\\s*effects?|sfx)';
const EDGE = '(?<edge>out|in)';
const THE = '(?:the\\s+|my\\s+|our\\s+)?';
const FADE_PATTERNS = [
  new RegExp(`\\bfade[\\s-]?${EDGE}\\s+(?:of\\s+)?${THE}${FADE_TRACK}\\b`, 'i'),
  new RegExp(`\\bfade\\s+${THE}${FADE_TRACK}\\s+${EDGE}\\b`, 'i'),
  new RegExp(`\\b${FADE_TRACK}\\s+(?:should\\s+)?fades?\\s+${EDGE}\\b`, 'i'),
  new RegExp(`\\bfade[\\s-]?${EDGE}\\s+(?:on|to|for)\\s+${THE}${FADE_TRACK}\\b`, 'i'),
];

function fadeTrack(word: string): FadeTrack {
  if (/^(?:music|soundtrack|song|score)$/i.test(word)) return 'music';
  if (/^(?:sound\s*effects?|sfx)$/i.test(word)) return 'sfx';
  return 'voice';
}

/** "fade out the music at the end", "fade in the music over 3 seconds", "the narration fades out". */
export function parseFadeAudio(text: string): LookIntent | null {
  for (const pattern of FADE_PATTERNS) {
    const groups = pattern.exec(text)?.groups;
    if (!groups) continue;
    return {
      kind: 'fade_audio',
      track: fadeTrack(groups.track!),
      edge: groups.edge!.toLowerCase() as 'in' | 'out',
      duration_sec: parseSeconds(text),
    };
  }
  return null;
}

/** The look intent of `text`, if it is one: text first (its words may say anything), then the rest. */
export function parseLookIntent(text: string): LookIntent | null {
  return (
    parseAddText(text) ??
    parseFadeAudio(text) ??
    parseTransition(text) ??
    parseMotion(text) ??
    parseSpeed(text)
  );
}
