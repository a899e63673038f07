import { PROJECT_ASPECT_RATIOS, type ProjectAspectRatio } from '../../../schemas/editor-terms.ts';
import { NUM, ORD, parseClipRef, parseCount, type DirectorClipRef } from './director-words.ts';
import { parseAddText, parseLookIntent, type LookIntent } from './look-intents.ts';

export type { DirectorClipRef } from './director-words.ts';

// What the builtin director understands (docs/editor.md, The builtin director): a small, deterministic
// grammar over plain English. Parsing is pure so every phrasing can be tested without a timeline; the
// director decides what to do with it.

export type DirectorMoveTarget =
  | { kind: 'start' }
  | { kind: 'end' }
  | { kind: 'position'; position: number }
  | { kind: 'before' | 'after'; clip: DirectorClipRef };

export type DirectorAudioTrack = 'music' | 'voice' | 'sfx';

export type DirectorIntent =
  /** `subject` '' when a video was asked for without saying what it is about. */
  | { kind: 'storyboard'; subject: string; scenes: number; aspect_ratio: ProjectAspectRatio | null }
  /** `note`: what followed the phrase ("continue with the sunset" → "the sunset"), '' when nothing did. */
  | { kind: 'continue'; note: string }
  | { kind: 'remove_clip'; clip: DirectorClipRef }
  | { kind: 'move_clip'; clip: DirectorClipRef; to: DirectorMoveTarget }
  /** `aspect_ratio` null: the user named a ratio (`named`) that a video cannot have. */
  | { kind: 'set_aspect_ratio'; aspect_ratio: ProjectAspectRatio | null; named: string }
  /** `asset_id` null: "the image" (this turn's reference, else the newest image); `position` null: at the end. */
  | { kind: 'add_to_video'; asset_id: string | null; position: number | null }
  | { kind: 'use_audio'; asset_id: string; track: DirectorAudioTrack }
  /** `fit`, `quality` null: the export's defaults. */
  | { kind: 'export'; fit: 'fit' | 'fill' | null; quality: 'final' | 'preview' | null }
  /** Titles, transitions, motion, speed, sound fades (look-intents.ts). */
  | LookIntent
  /** `asked`: the user asked what the director can do (rather than something it cannot). */
  | { kind: 'help'; asked: boolean };

/** Scenes of a storyboard when the request names no number. */
export const DEFAULT_STORYBOARD_SCENES = 3;

const ASSET_ID = /\bva_[A-Za-z0-9_-]+/;

function parseMoveTarget(preposition: string, rest: string): DirectorMoveTarget | null {
  if (preposition !== 'to') {
    const clip = parseClipRef(rest);
    return clip === null ? null : { kind: preposition as 'before' | 'after', clip };
  }
  const position =
    new RegExp(`\\b(?:position|place|slot|spot)\\s*(?:#|number\\s*)?(${NUM})\\b`, 'i').exec(rest) ??
    new RegExp(`\\b(${ORD})\\s+(?:position|place|slot|spot)\\b`, 'i').exec(rest) ??
    new RegExp(`^(?:the\\s+)?(${NUM}|${ORD})\\W*$`, 'i').exec(rest);
  if (position) {
    const value = parseCount(position[1]!);
    return value === null ? null : { kind: 'position', position: value };
  }
  if (/\b(?:start|beginning|front|top|first)\b/i.test(rest)) return { kind: 'start' };
  if (/\b(?:end|back|bottom|last)\b/i.test(rest)) return { kind: 'end' };
  return null;
}

const ORIENTATIONS: readonly [RegExp, ProjectAspectRatio][] = [
  [/\b(?:vertical|portrait|tall)\b/i, '9:16'],
  [/\bsquare\b/i, '1:1'],
  [/\b(?:landscape|horizontal|widescreen|wide-screen)\b/i, '16:9'],
];

const WRITTEN_RATIO = /\b(\d{1,2})\s*[:x×/]\s*(\d{1,2})\b/i;

/** The ratio `text` names ("16:9", "16x9", "vertical", "square"), if any. */
function parseAspectRatio(text: string): { aspect_ratio: ProjectAspectRatio | null; named: string } | null {
  const ratio = WRITTEN_RATIO.exec(text);
  if (ratio) {
    const named = `${Number(ratio[1])}:${Number(ratio[2])}`;
    const known = PROJECT_ASPECT_RATIOS.find((candidate) => candidate === named) ?? null;
    return { aspect_ratio: known, named };
  }
  for (const [pattern, aspectRatio] of ORIENTATIONS) {
    if (pattern.test(text)) return { aspect_ratio: aspectRatio, named: aspectRatio };
  }
  return null;
}

const AUDIO_TRACKS: readonly [RegExp, DirectorAudioTrack][] = [
  [/\b(?:sfx|sound\s*effects?|effects?)\b/i, 'sfx'],
  [/\b(?:voice|voice-?over|narration|narrator|dialogue)\b/i, 'voice'],
  [/\b(?:music|soundtrack|song|score)\b/i, 'music'],
];

function parseUseAudio(text: string): DirectorIntent | null {
  const id = ASSET_ID.exec(text);
  if (!id || !/\b(?:use|add|put|set|make|place)\b/i.test(text)) return null;
  const after = text.slice(id.index + id[0].length);
  if (!/^\s*(?:as|for|on|to|in(?:to)?)\b/i.test(after)) return null;
  for (const [pattern, track] of AUDIO_TRACKS) {
    if (pattern.test(after)) return { kind: 'use_audio', asset_id: id[0], track };
  }
  return null;
}

const ADD_VERB = '(?:add|put|insert|place|use|drop)';
const PICTURE = new RegExp(
  `\\b${ADD_VERB}\\s+(?:(?:the|this|that|my|an?|last|latest|newest|new|reference|uploaded)\\s+){0,2}` +
    '(?:image|picture|photo|photograph|still|pic)\\b',
  'i',
);

function parseAddToVideo(text: string): DirectorIntent | null {
  const id = new RegExp(`\\b${ADD_VERB}\\s+(?:the\\s+)?(?:asset\\s+)?(va_[A-Za-z0-9_-]+)`, 'i').exec(text);
  if (!id && !PICTURE.test(text)) return null;
  const at = new RegExp(`\\b(?:scene|clip|position|shot)\\s*(?:#|number\\s*)?(${NUM})\\b`, 'i').exec(text);
  const ordinal = new RegExp(`\\b(${ORD})\\s+(?:scene|clip|position|shot)\\b`, 'i').exec(text);
  let position = at ? parseCount(at[1]!) : ordinal ? parseCount(ordinal[1]!) : null;
  if (position === null && /\b(?:start|beginning|front)\b/i.test(text)) position = 1;
  if (position === null && !/\b(?:timeline|video|end|scene|clip|track)\b/i.test(text)) return null;
  return { kind: 'add_to_video', asset_id: id ? id[1]! : null, position };
}

const VIDEO_WORDS = '(?:video|film|movie|short|reel|story|storyboard|trailer|commercial|ad)';

function parseStoryboard(text: string): DirectorIntent | null {
  const count = new RegExp(`\\b(${NUM})[\\s-]*(?:scenes?|shots?|parts?)\\b`, 'i').exec(text);
  const about =
    new RegExp(`\\b${VIDEO_WORDS}\\s+(?:about|of|on|showing|featuring|for)\\s+(.+)$`, 'i').exec(text) ??
    new RegExp(`\\b(?:scenes?|shots?)\\s+(?:about|of|on|showing|featuring)\\s+(.+)$`, 'i').exec(text);
  const asksForVideo = new RegExp(`\\b(?:a|an|another|new)\\b[^.?!]*?\\b${VIDEO_WORDS}\\b`, 'i');
  if (!about && !asksForVideo.test(text)) return null;
  const scenes = (count && parseCount(count[1]!)) || DEFAULT_STORYBOARD_SCENES;
  const prefix = about ? text.slice(0, about.index) : text;
  return {
    kind: 'storyboard',
    subject: about ? cleanSubject(about[1]!) : '',
    scenes,
    aspect_ratio: parseAspectRatio(prefix)?.aspect_ratio ?? null,
  };
}

/** The subject without the trailing count, politeness and punctuation ("… in 4 scenes, please." → "…"). */
function cleanSubject(raw: string): string {
  return raw
    .replace(
      new RegExp(`[,;]?\\s*(?:in|with|using|across)\\s+${NUM}[\\s-]*(?:scenes?|shots?|parts?)\\b.*$`, 'i'),
      '',
    )
    .replace(/[,;]?\s*(?:please|thanks|thank you)\b.*$/i, '')
    .replace(/[\s.!?,;:]+$/, '')
    .trim();
}

/** The longest note a "continue" passes on to its scene's prompt. */
export const CONTINUE_NOTE_MAX = 300;

// "continue" as people type it: agreement and politeness first ("ok,", "yes please"), then a phrase that asks
// for the next step; whatever follows that phrase is a note for the scene ("continue with the sunset").
const AGREEING = [
  'yes',
  'yeah',
  'yep',
  'yup',
  'y',
  'ok',
  'okay',
  'k',
  'sure',
  'alright',
  'absolutely',
  'perfect',
  'great',
  'good',
  'fine',
  'cool',
  'nice',
  'awesome',
  'excellent',
  'lovely',
];
const POLITE = [
  'please',
  'pls',
  'thanks',
  'thank you',
  'sounds',
  'looks',
  "that's",
  'thats',
  'so',
  'now',
  'then',
  'and',
  'well',
  "let's",
  'lets',
  'all right',
  'right',
  'love it',
];
const NEXT_THING = '(?:\\s+(?:scene|one|shot|clip|part|step))?';
const ASKS_NEXT = [
  'continue', 'carry on', 'keep going', 'go on', 'go ahead', 'proceed', 'move on', 'onwards?', 'do it',
  'go for it', `next${NEXT_THING}(?!\\s+to\\b)`,
  // Alone only: "go to scene 2" is not a go-ahead.
  '(?:go|generate(?:\\s+it)?)(?=[\\s.!?]*$)',
  `(?:generate|make|do|create|render|start)\\s+(?:the\\s+)?(?:next|first)${NEXT_THING}`,
]; // prettier-ignore
const words = (list: readonly string[]) => list.map((word) => word.replace(/ /g, '\\s+')).join('|');
const LEAD_WORD = new RegExp(`^(?:${words(AGREEING)}|${words(POLITE)})\\b`, 'i');
const AGREEING_WORD = new RegExp(`^(?:${words(AGREEING)})\\b`, 'i');
const ASKS_NEXT_PHRASE = new RegExp(`^(?:${ASKS_NEXT.join('|')})\\b`, 'i');
const SEPARATORS = /^[\s,.;:!?…\-–—"“”]*/;
/** Text that says nothing more: politeness and punctuation. */
const NOTHING_MORE = new RegExp(`^(?:[\\s,.;:!?…\\-–—]|(?:${words(POLITE)}|${words(AGREEING)})\\b)*$`, 'i');
/** Sandbox markers (`[sandbox:fail]`) and other bracketed notes. */
const BRACKETED_ONLY = /^(?:\s*\[[^\]]*\])+[\s.!?]*$/;

/** What the user added after "continue", ready for a prompt ('' when nothing): connectors and politeness off. */
function continueNote(rest: string): string {
  const note = rest
    .replace(/^(?:with|and|then|using)\b[\s,:]*/i, '')
    .replace(/[\s,;]*(?:\b(?:please|pls|thanks|thank you))?[\s.!?,;:…"“”]*$/i, '')
    .trim();
  return NOTHING_MORE.test(note) ? '' : note.slice(0, CONTINUE_NOTE_MAX).trim();
}

/**
 * "continue", "ok, continue", "yes please", "next", "go on", "next scene", "Next!", "continue with the sunset",
 * "continue [sandbox:fail]": the next step, with the words after the phrase as a note. Agreement alone
 * ("yes", "sure") continues only when nothing else follows but a "with …" note or bracketed markers, so
 * "yes, but make it darker" and "ok, what can you do?" are not taken for a go-ahead; neither is "don't continue".
 */
function parseContinue(text: string): { note: string } | null {
  let rest = text;
  let agreed = false;
  for (;;) {
    rest = rest.replace(SEPARATORS, '');
    const asksNext = ASKS_NEXT_PHRASE.exec(rest);
    if (asksNext) return { note: continueNote(rest.slice(asksNext[0].length).replace(SEPARATORS, '')) };
    const lead = LEAD_WORD.exec(rest);
    if (!lead) break;
    agreed ||= AGREEING_WORD.test(lead[0]);
    rest = rest.slice(lead[0].length);
  }
  if (!agreed) return null;
  if (rest === '') return { note: '' };
  if (/^with\b/i.test(rest) || BRACKETED_ONLY.test(rest)) return { note: continueNote(rest) };
  return null;
}

/**
 * "export it", "export the video", "export it cropped", "export a preview", "preview it": not when negated
 * ("don't export yet").
 */
function parseExport(text: string): DirectorIntent | null {
  const previewOnly =
    /^(?:(?:please|ok(?:ay)?|now|then|and|so)[\s,]+)*(?:preview\s+it|(?:show\s+me|make|give\s+me|render)\s+a\s+preview)\b/i;
  if (!/\b(?:export|render)\b/i.test(text) && !previewOnly.test(text)) return null;
  if (
    /\b(?:don'?t|do\s+not|not|never|no\s+need\s+to|without)\b[^.!?]*\b(?:export|render|preview)/i.test(text)
  )
    return null;
  const fit = /\b(?:fill|crop(?:ped|ping)?)\b/i.test(text)
    ? 'fill'
    : /\b(?:letterbox(?:ed|ing)?|fit)\b/i.test(text)
      ? 'fit'
      : null;
  const quality = /\b(?:preview|draft|quick|low[\s-]?res(?:olution)?|360p)\b/i.test(text)
    ? 'preview'
    : /\b(?:final|full[\s-]?quality|high[\s-]?quality)\b/i.test(text)
      ? 'final'
      : null;
  return { kind: 'export', fit, quality };
}

// An orientation word alone ("square", "tall") is often part of a description; with a verb it is a ratio.
const RESHAPING =
  /\b(?:make|turn|switch|change|convert|set|go|crop|reformat|format|aspect|orientation|ratio)\b/i;

/**
 * The intent of one instruction; the most specific reading wins: a text clip first (its words may say
 * anything), then the look of the video (transitions, motion, speed, fades: before the plain edits, so "remove
 * the transition on clip 2" removes no clip) unless the instruction asks for a video about something, then the
 * plain edits, a storyboard, a ratio, "continue" and "export".
 */
export function parseDirectorIntent(instruction: string): DirectorIntent {
  const text = instruction.replace(/\s+/g, ' ').trim();
  const words = parseAddText(text);
  if (words) return words;
  // A storyboard's subject may name a look ("a video about old photos, slowly zooming"): it is not an edit.
  const storyboard = parseStoryboard(text);
  const look = storyboard?.kind === 'storyboard' && storyboard.subject ? null : parseLookIntent(text);
  if (look) return look;
  const audio = parseUseAudio(text);
  if (audio) return audio;
  if (/\b(?:remove|delete|drop|take out|get rid of)\b/i.test(text)) {
    const clip = parseClipRef(text);
    if (clip !== null) return { kind: 'remove_clip', clip };
  }
  const move = /\b(?:move|put|place|shift)\s+(.+?)\s+(to|before|after)\s+(.+)$/i.exec(text);
  const moved = move ? parseClipRef(move[1]!) : null;
  if (move && moved !== null) {
    const to = parseMoveTarget(move[2]!.toLowerCase(), move[3]!);
    if (to) return { kind: 'move_clip', clip: moved, to };
  }
  const add = parseAddToVideo(text);
  if (add) return add;
  if (storyboard) return storyboard;
  const ratio = parseAspectRatio(text);
  if (ratio && (WRITTEN_RATIO.test(text) || RESHAPING.test(text) || text.split(' ').length <= 3)) {
    return { kind: 'set_aspect_ratio', ...ratio };
  }
  const next = parseContinue(text);
  if (next) return { kind: 'continue', ...next };
  const exported = parseExport(text);
  if (exported) return exported;
  return {
    kind: 'help',
    asked: /^(?:help|what can you do|what do you do|how does (?:this|it) work)\b/i.test(text),
  };
}
