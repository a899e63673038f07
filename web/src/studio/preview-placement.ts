// Where a picture lands in the preview's frame, with the export's placement (docs/editor.md, the export's
// `fit` field): `fit` scales it to the largest size inside the frame and centres it on black, `fill` scales it
// to cover the frame and crops it centred. The export states this as ffmpeg `scale`/`pad`/`crop` expressions
// on the picture's display aspect ratio (workers/export/placement.ts, which the dashboard cannot import); this
// is the same arithmetic in numbers, down to its rounding: the scaled side is the frame's side plus the
// difference to its exact size rounded to a multiple of 4, so the two bars (or cropped margins) are equal and
// a picture within 2 px of the frame's shape fills it. Pure: the compositor draws where this answers.
import type { ExportFit } from '../api-types.ts';

/** A picture's rectangle in frame pixels (beyond the frame on the cropped sides with `fill`). */
export interface PlacedRect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** ffmpeg's `round`: halves away from zero (JavaScript's Math.round takes −0.5 to 0). */
const roundAway = (value: number): number => Math.sign(value) * Math.round(Math.abs(value));

/** `side` plus (`exact` − `side`) rounded to a multiple of 4. */
const alignedSide = (side: number, exact: number): number => side + 4 * roundAway((exact - side) / 4);

/**
 * The rectangle a `sourceWidth`×`sourceHeight` picture (its display size) takes in a `width`×`height` frame
 * when placed with `fit`. A picture of no size answers an empty rectangle.
 */
export function placedRect(
  fit: ExportFit,
  width: number,
  height: number,
  sourceWidth: number,
  sourceHeight: number,
): PlacedRect {
  if (!(sourceWidth > 0) || !(sourceHeight > 0)) return { x: 0, y: 0, width: 0, height: 0 };
  const dar = sourceWidth / sourceHeight;
  // At least as wide as the frame for its height: its width meets the frame's with `fit`, its height with `fill`.
  const wider = dar >= width / height;
  let w: number;
  let h: number;
  if (fit === 'fill') {
    w = wider ? alignedSide(width, height * dar) : width;
    h = wider ? height : alignedSide(height, width / dar);
  } else {
    // At least 2 px, as the export keeps a 1×10000 strip from a scale size of 0.
    w = wider ? width : Math.max(2, alignedSide(width, height * dar));
    h = wider ? Math.max(2, alignedSide(height, width / dar)) : height;
  }
  return { x: (width - w) / 2, y: (height - h) / 2, width: w, height: h };
}
