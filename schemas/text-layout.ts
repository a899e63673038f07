// Where the words of a text clip go (docs/editor.md, Text): the lines, wrapped to 90 % of the frame's width
// at the style's size, and where each line sits. Pure arithmetic on a font's measurements, shared by the
// export (workers/export/text-layout.ts measures with the font the project ships) and the dashboard's preview
// (web/src/studio/preview-text.ts measures with the browser's canvas), so both put the words in one place.
import {
  TEXT_STYLE_DEFAULTS,
  type TextBackground,
  type TextPosition,
  type TextStyle,
} from './timeline-terms.ts';

/** What layout needs of a font: its vertical metrics and the advance of a run of text. */
export interface FontMeasure {
  unitsPerEm: number;
  /** Above the baseline, in font units (positive). */
  ascender: number;
  /** Below the baseline, in font units (negative). */
  descender: number;
  /** The advance of `text` at `sizePx`, in pixels. */
  advance(text: string, sizePx: number): number;
}

/** The text may be no wider than this share of the frame (its box included). */
export const TEXT_MAX_WIDTH_SHARE = 0.9;
/**
 * The share of that width the measured words may fill: ffmpeg draws with FreeType, whose hinting rounds each
 * glyph's advance to the pixel, so a drawn line can come out a little wider than opentype.js measures it.
 */
const MEASURE_MARGIN = 0.96;
/** Distance from the frame's top or bottom edge to the text block, as a share of the frame's height. */
const EDGE_MARGIN_SHARE = 0.07;
/** Left-aligned text starts this share of the width in (the 90 % column, centred). */
const LEFT_MARGIN_SHARE = (1 - TEXT_MAX_WIDTH_SHARE) / 2;
/** The box's padding around each line, and the distance between baselines, in font sizes. */
const BOX_PADDING_EM = 0.16;
const LINE_STEP_EM = { box: 1.5, none: 1.25 } as const;

/** One laid-out text clip, in output pixels. */
export interface TextLayout {
  /** The font size in pixels: the style's share of the frame's short side. */
  fontSizePx: number;
  /** The lines as drawn, in order ('' for a blank line, which only takes its height). */
  lines: string[];
  /** Each line's baseline, from the top of the frame. */
  baselines: number[];
  /** `left`: every line starts at `leftPx`; `center`: each line is centred on its own. */
  align: 'left' | 'center';
  leftPx: number;
  /** The box's padding around each line (0 without a box). */
  boxPaddingPx: number;
}

/** What a text clip asks for (its style's defaults already resolved by the service). */
export interface TextRequest {
  text: string;
  style: TextStyle;
  position: TextPosition;
  background: TextBackground;
}

// C0/C1 control characters other than the line breaks (a font has no glyph for them), and tabs (shown as a
// space).
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/g;

/** The user's lines: line breaks kept, tabs as spaces, control characters dropped, blank ends trimmed. */
function paragraphs(text: string): string[] {
  const lines = text
    .replace(/\t/g, ' ')
    .replace(CONTROL, '')
    .split(/\r\n|\r|\n|\u2028|\u2029/)
    .map((line) => line.replace(/\s+/g, ' ').trim());
  while (lines.length > 0 && lines[0] === '') lines.shift();
  while (lines.length > 0 && lines.at(-1) === '') lines.pop();
  return lines;
}

/** `word` cut into pieces that each fit `maxPx` (by characters; a piece has at least one). */
function breakWord(word: string, fits: (text: string) => boolean): string[] {
  const pieces: string[] = [];
  let piece = '';
  for (const character of Array.from(word)) {
    if (piece !== '' && !fits(piece + character)) {
      pieces.push(piece);
      piece = character;
    } else piece += character;
  }
  if (piece !== '') pieces.push(piece);
  return pieces;
}

/** One paragraph wrapped greedily at word boundaries; a word wider than the line is broken. */
function wrap(paragraph: string, fits: (text: string) => boolean): string[] {
  if (paragraph === '') return [''];
  const lines: string[] = [];
  let line = '';
  for (const word of paragraph.split(' ')) {
    const candidate = line === '' ? word : `${line} ${word}`;
    if (fits(candidate)) {
      line = candidate;
      continue;
    }
    if (line !== '') lines.push(line);
    const pieces = fits(word) ? [word] : breakWord(word, fits);
    lines.push(...pieces.slice(0, -1));
    line = pieces.at(-1) ?? '';
  }
  if (line !== '') lines.push(line);
  return lines;
}

/**
 * Lays out `request` in a `width`×`height` frame: the style's size (a share of the short side), words
 * wrapped so that every line (with its box's padding) is at most 90 % of the width, the block placed at the
 * top, middle or bottom, each line left-aligned in the 90 % column or centred (the style's alignment).
 */
export function layoutText(
  font: FontMeasure,
  request: TextRequest,
  frame: { width: number; height: number },
): TextLayout {
  const defaults = TEXT_STYLE_DEFAULTS[request.style];
  const fontSizePx = Math.max(8, Math.round(defaults.size * Math.min(frame.width, frame.height)));
  const boxPaddingPx = request.background === 'box' ? Math.round(BOX_PADDING_EM * fontSizePx) : 0;
  const maxPx = (TEXT_MAX_WIDTH_SHARE * frame.width - 2 * boxPaddingPx) * MEASURE_MARGIN;
  const fits = (text: string) => font.advance(text, fontSizePx) <= maxPx;
  const lines = paragraphs(request.text).flatMap((paragraph) => wrap(paragraph, fits));
  if (lines.length === 0) lines.push('');

  const ascent = (font.ascender / font.unitsPerEm) * fontSizePx;
  const descent = (-font.descender / font.unitsPerEm) * fontSizePx;
  const step = LINE_STEP_EM[request.background] * fontSizePx;
  const blockHeight = ascent + (lines.length - 1) * step + descent;
  const margin = EDGE_MARGIN_SHARE * frame.height + boxPaddingPx;
  const top =
    request.position === 'top'
      ? margin
      : request.position === 'center'
        ? (frame.height - blockHeight) / 2
        : frame.height - margin - blockHeight;
  const baselines = lines.map((_line, i) => Math.round(top + ascent + i * step));
  return {
    fontSizePx,
    lines,
    baselines,
    align: defaults.align,
    leftPx: Math.round(LEFT_MARGIN_SHARE * frame.width + boxPaddingPx),
    boxPaddingPx,
  };
}
