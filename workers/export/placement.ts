// How a picture clip is placed in the output frame (docs/editor.md#fit-and-fill): `fit` scales it to the
// largest size that fits and pads it centred with black, `fill` scales it to cover the frame and crops it
// centred.
//
// The sizes are ffmpeg expressions on the clip's display aspect ratio (`dar`, after rotation and with the
// source's sample aspect ratio), evaluated once when the graph starts: the plan does not know every source's
// size (an image's, or a video's sample aspect ratio).
//
// Equal bars: yuv420p shares each colour sample between two pixels, so `pad` and `crop` round an odd offset
// down to the even one below. Scaling down and centring that way left an 854×480 clip 718 rows high in a
// 720-row frame with no bar above and 2 px below. So the scaled side is the frame's side plus the difference
// to its exact size rounded to a multiple of 4: the two bars (or the two cropped margins) are then even and
// equal, the picture is within 2 px of its exact size, and a source within 2 px of the frame's shape fills it.
import type { ExportQuality } from '../../schemas/timeline-terms.ts';

/** `side` plus (`exact` − `side`) rounded to a multiple of 4, as an ffmpeg expression (no comma escaping). */
const alignedSide = (side: number, exact: string): string => `${side}+4*round((${exact}-${side})/4)`;

/**
 * The `scale` and `pad` (fit) or `scale` and `crop` (fill) filters that bring any clip to `width`×`height`
 * (both even), centred to the pixel. A preview scales with the cheapest filter (`fast_bilinear`): its frames
 * are small and only for looking at a change.
 */
export function placementFilters(
  fit: 'fit' | 'fill',
  width: number,
  height: number,
  quality: ExportQuality = 'final',
): string {
  const flags = quality === 'preview' ? ':flags=fast_bilinear' : '';
  // True when the clip is at least as wide as the frame for its height: its width meets the frame's with
  // `fit`, its height with `fill`.
  const wider = `gte(dar,${width}/${height})`;
  const exactWidth = `${height}*dar`;
  const exactHeight = `${width}/dar`;
  if (fit === 'fit') {
    // At least 2 px: a scale size of 0 would mean "keep the ratio" to ffmpeg (a 1×10000 strip in 1280×720).
    const w = `if(${wider},${width},max(2,${alignedSide(width, exactWidth)}))`;
    const h = `if(${wider},max(2,${alignedSide(height, exactHeight)}),${height})`;
    return `scale=w='${w}':h='${h}'${flags},pad=${width}:${height}:(ow-iw)/2:(oh-ih)/2:black`;
  }
  const w = `if(${wider},${alignedSide(width, exactWidth)},${width})`;
  const h = `if(${wider},${height},${alignedSide(height, exactHeight)})`;
  return `scale=w='${w}':h='${h}'${flags},crop=${width}:${height}:(iw-ow)/2:(ih-oh)/2`;
}
