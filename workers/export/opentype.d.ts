// The part of opentype.js (no types of its own) that text-layout.ts uses: parsing a TTF and measuring text.
declare module 'opentype.js' {
  interface Font {
    unitsPerEm: number;
    ascender: number;
    descender: number;
    /** 0 when the font has no glyph for the character. */
    charToGlyphIndex(character: string): number;
    /** The character's glyph (`.notdef` when the font has none); `advanceWidth` in font units. */
    charToGlyph(character: string): { advanceWidth?: number };
  }
  const opentype: { parse(buffer: ArrayBuffer): Font };
  export default opentype;
  export type { Font };
}
