// Where the preview draws a text clip's words (docs/editor.md "Text"): the export's own layout
// (schemas/text-layout.ts) with the browser's measurements of the drawn width, and DejaVu Sans' vertical
// metrics, as the export lays its lines out with them.
import { layoutText as layoutWithFont, type TextLayout, type TextRequest } from '../api-types.ts';

export type { TextLayout, TextRequest };

/** DejaVu Sans' ascender and descender in font units (of 2048 to the em). */
const DEJAVU_METRICS = { unitsPerEm: 2048, ascender: 1901, descender: -483 };

/** Lays out `request` in a `width`×`height` frame; `measure(text, sizePx)` is the drawn width in pixels. */
export function layoutPreviewText(
  request: TextRequest,
  frame: { width: number; height: number },
  measure: (text: string, sizePx: number) => number,
): TextLayout {
  return layoutWithFont({ ...DEJAVU_METRICS, advance: measure }, request, frame);
}
