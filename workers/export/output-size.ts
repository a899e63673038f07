// The output picture size for a video's aspect ratio (spec 4.7: the short side is 720 px; a preview's is 360 px,
// docs/editor.md, Previews). Both sides come out even, which yuv420p's halved chroma planes and libx264 require.
import type { ProjectAspectRatio } from '../../schemas/editor-terms.ts';
import { PREVIEW_SHORT_SIDE, type ExportQuality } from '../../schemas/timeline-terms.ts';

/** The short side of every final export, in pixels. */
export const SHORT_SIDE_PX = 720;

/** The short side of an export of `quality`, in pixels. */
export const shortSide = (quality: ExportQuality = 'final'): number =>
  quality === 'preview' ? PREVIEW_SHORT_SIDE : SHORT_SIDE_PX;

/** Width and height of the exported picture for `aspectRatio`, its short side 720 px (360 px for a preview). */
export function outputSize(
  aspectRatio: ProjectAspectRatio,
  quality: ExportQuality = 'final',
): { width: number; height: number } {
  const short = shortSide(quality);
  const [w, h] = aspectRatio.split(':').map(Number) as [number, number];
  // Rounded to an even number for any ratio; for the five we have it is exact (1280, 900, 960; 640, 450, 480).
  const long = (side: number, other: number) => 2 * Math.round((short * side) / other / 2);
  return w >= h ? { width: long(w, h), height: short } : { width: short, height: long(h, w) };
}
