// Frame sizes of sandbox renders. Pure: the provider and its tests share these numbers.

const SHORT_SIDE = { '480p': 480, '720p': 720 } as const;
const IMAGE_LONG_SIDE = 1024;

/** A `W:H` aspect ratio as two positive integers; throws on anything else. */
function parseAspectRatio(aspectRatio: string): { w: number; h: number } {
  const match = /^(\d{1,3}):(\d{1,3})$/.exec(aspectRatio);
  const w = Number(match?.[1]);
  const h = Number(match?.[2]);
  if (!match || w <= 0 || h <= 0 || Math.max(w / h, h / w) > 4) {
    throw new RangeError(`unsupported aspect ratio: ${JSON.stringify(aspectRatio)}`);
  }
  return { w, h };
}

/** The nearest even integer: H.264 with yuv420p needs even frame sizes. */
function even(value: number): number {
  return 2 * Math.round(value / 2);
}

/** Video frame size: the short side is 720 or 480, the long side follows the ratio (made even). */
export function videoDimensions(
  resolution: '480p' | '720p',
  aspectRatio: string,
): { width: number; height: number } {
  const short = SHORT_SIDE[resolution];
  if (!short) throw new RangeError(`unsupported resolution: ${JSON.stringify(resolution)}`);
  const { w, h } = parseAspectRatio(aspectRatio);
  if (w >= h) return { width: even((short * w) / h), height: short };
  return { width: short, height: even((short * h) / w) };
}

/** Image size: the long side is 1024, the short side follows the ratio (made even). */
export function imageDimensions(aspectRatio: string): { width: number; height: number } {
  const { w, h } = parseAspectRatio(aspectRatio);
  if (w >= h) return { width: IMAGE_LONG_SIDE, height: even((IMAGE_LONG_SIDE * h) / w) };
  return { width: even((IMAGE_LONG_SIDE * w) / h), height: IMAGE_LONG_SIDE };
}
