// The font the export draws text with: `bundledFont` reads the font the project ships (DejaVu Sans from the
// `dejavu-fonts-ttf` package: Latin, Greek, Cyrillic and many symbols; no CJK, no Arabic shaping), once per
// thread, for `layoutText` (schemas/text-layout.ts, shared with the dashboard's preview).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import opentype from 'opentype.js';
import type { FontMeasure } from '../../schemas/text-layout.ts';

export {
  layoutText,
  TEXT_MAX_WIDTH_SHARE,
  type FontMeasure,
  type TextLayout,
  type TextRequest,
} from '../../schemas/text-layout.ts';

/** The path of the bundled font (DejaVu Sans, from the `dejavu-fonts-ttf` package). */
export function bundledFontPath(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('dejavu-fonts-ttf/package.json')), 'ttf', 'DejaVuSans.ttf');
}

let cached: FontMeasure | undefined;

/** The bundled font's measurements (parsed on first use). */
export function bundledFont(): FontMeasure {
  if (cached) return cached;
  const bytes = readFileSync(bundledFontPath());
  const font = opentype.parse(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  // Each character's own advance, summed: ffmpeg's drawtext (before 6.1) maps characters to glyphs one by one,
  // without shaping, as done here (opentype.js's own shaping also stops at lookups it does not support). No
  // kerning: it only ever narrows a line, so a line measured without it is never too wide.
  const advances = new Map<string, number>();
  const advanceOf = (character: string): number => {
    let units = advances.get(character);
    if (units === undefined) {
      units = font.charToGlyph(character).advanceWidth ?? 0;
      advances.set(character, units);
    }
    return units;
  };
  cached = {
    unitsPerEm: font.unitsPerEm,
    ascender: font.ascender,
    descender: font.descender,
    advance: (text, sizePx) => {
      let units = 0;
      for (const character of text) units += advanceOf(character);
      return (units * sizePx) / font.unitsPerEm;
    },
  };
  return cached;
}
