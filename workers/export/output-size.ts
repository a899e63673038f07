// The output picture size for a video's aspect ratio (spec 4.7: the short side is 720 px). Both sides come
// out even, which yuv420p's halved chroma planes and libx264 require.
import type { ProjectAspectRatio } from '../../schemas/editor-terms.ts';

/** The short side of every export, in pixels. */
export const SHORT_SIDE_PX = 720;

/** Width and height of the exported picture for `aspectRatio`, its short side 720 px. */
export function outputSize(aspectRatio: ProjectAspectRatio): { width: number; height: number } {
  const [w, h] = aspectRatio.split(':').map(Number) as [number, number];
  // Rounded to an even number for any ratio; for the five we have it is exact (1280, 900, 960).
  const long = (side: number, other: number) => 2 * Math.round((SHORT_SIDE_PX * side) / other / 2);
  return w >= h ? { width: long(w, h), height: SHORT_SIDE_PX } : { width: SHORT_SIDE_PX, height: long(h, w) };
}
