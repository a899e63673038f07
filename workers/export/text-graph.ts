// Text over the picture (docs/editor.md, Text): each text clip laid out (text-layout.ts) and every line drawn
// by its own `drawtext`, above every clip and transition, from the clip's start to its end with opacity fades.
// Pure: the filters and the files they read.
//
// User text never enters filter syntax: each line is written to a file of its own (`textFiles`, beside the
// output, written before ffmpeg runs) that `drawtext` reads with `textfile=` and `expansion=none`, so neither
// the filtergraph parser nor drawtext's `%{…}` expansion ever sees it. What does enter the graph is ours —
// the paths, numbers, and a colour checked against #RRGGBB — and the paths are quoted for both levels of
// ffmpeg's escaping.
import { TEXT_COLOR_DEFAULT } from '../../schemas/timeline-terms.ts';
import type { ExportPlan, TextOverlay } from './plan.ts';
import {
  bundledFont,
  bundledFontPath,
  layoutText,
  type FontMeasure,
  type TextLayout,
} from './text-layout.ts';

/** The box behind a line when the clip asks for one: black, a little transparent. */
const BOX_COLOR = 'black@0.6';
const COLOR = /^#[0-9A-Fa-f]{6}$/;

/**
 * `value` as one option value inside a `-filter_complex` description. First level (the filter's options):
 * in single quotes, a quote written as `'\''`. Second level (the graph): every character the graph parser
 * treats specially (`\ ' [ ] , ;`) escaped with a backslash.
 */
export function filterValue(value: string): string {
  const quoted = `'${value.replaceAll("'", "'\\''")}'`;
  return quoted.replace(/[\\'[\],;]/g, (character) => `\\${character}`);
}

/** A number as a filter literal: plain decimals, never exponent notation. */
const num = (value: number): string => String(Number(value.toFixed(6)));

/** The file line `line` of text clip `index` is written to: beside the output, in the export's own folder. */
export const textLinePath = (plan: Pick<ExportPlan, 'output'>, index: number, line: number): string =>
  `${plan.output.path}.text${index}-${line}.txt`;

/** Each text clip's layout in the output frame. */
function layouts(plan: Pick<ExportPlan, 'texts' | 'output'>, font: FontMeasure): TextLayout[] {
  return (plan.texts ?? []).map((text) => layoutText(font, text, plan.output));
}

/** The files the text filters read: one per drawn line, its words exactly (no line break, no expansion). */
export function textFiles(
  plan: Pick<ExportPlan, 'texts' | 'output'>,
  font?: FontMeasure,
): { path: string; contents: string }[] {
  if ((plan.texts ?? []).length === 0) return [];
  return layouts(plan, font ?? bundledFont()).flatMap((layout, i) =>
    layout.lines.flatMap((line, j) =>
      line === '' ? [] : [{ path: textLinePath(plan, i, j), contents: line }],
    ),
  );
}

/** Opacity over the clip: 0 → 1 over the fade in, 1, then 1 → 0 over the fade out (`t`: seconds). */
function opacity(text: TextOverlay): string {
  const start = text.startSec;
  const end = text.startSec + text.durationSec;
  const parts: string[] = [];
  if (text.fadeInSec > 0) parts.push(`(t-${num(start)})/${num(text.fadeInSec)}`);
  if (text.fadeOutSec > 0) parts.push(`(${num(end)}-t)/${num(text.fadeOutSec)}`);
  if (parts.length === 0) return '1';
  const lowest = parts.reduce((a, b) => `min(${a},${b})`);
  return `clip(${lowest},0,1)`;
}

/**
 * The `drawtext` filters of every text clip, in order (later clips drawn over earlier ones), for a chain on
 * the joined picture. Each line: the bundled font at the layout's size, the clip's colour, the baseline where
 * the layout puts it (`ascent` is how far the drawn glyphs reach above it), centred or left-aligned, a box
 * when asked, drawn between the clip's start and end with its fades.
 */
export function textFilters(
  plan: Pick<ExportPlan, 'texts' | 'output'>,
  font?: FontMeasure,
  fontPath?: string,
): string[] {
  const texts = plan.texts ?? [];
  if (texts.length === 0) return [];
  const all = layouts(plan, font ?? bundledFont());
  const fontFile = fontPath ?? bundledFontPath();
  return texts.flatMap((text, i) => {
    const layout = all[i]!;
    const end = text.startSec + text.durationSec;
    const colour = COLOR.test(text.color) ? text.color : TEXT_COLOR_DEFAULT;
    const common = [
      `fontfile=${filterValue(fontFile)}`,
      `expansion=none`,
      `fontsize=${layout.fontSizePx}`,
      `fontcolor=0x${colour.slice(1)}`,
      ...(layout.boxPaddingPx > 0
        ? ['box=1', `boxcolor=${BOX_COLOR}`, `boxborderw=${layout.boxPaddingPx}`]
        : []),
      `alpha='${opacity(text)}'`,
      `enable='between(t,${num(text.startSec)},${num(end)})'`,
    ];
    return layout.lines.flatMap((line, j) => {
      if (line === '') return [];
      const x = layout.align === 'center' ? `(w-text_w)/2` : String(layout.leftPx);
      const place = [`x=${x}`, `y=${layout.baselines[j]}-ascent`];
      return [
        `drawtext=textfile=${filterValue(textLinePath(plan, i, j))}:${[...common, ...place].join(':')}`,
      ];
    });
  });
}
