// Motion of an image clip (docs/editor.md, Motion): a slow zoom 1.0 → 1.15 (or back) or a pan of 10 % of the
// frame's width over the clip. Pure: filter text only.
//
// Smooth at 30 fps: `zoompan` rounds its window to whole pixels, so a slow zoom or pan moves in visible
// one-pixel steps on some frames and not on others (jitter). Here the window is placed with sub-pixel
// precision by `perspective` (its four source corners are expressions of the frame number, evaluated for
// every frame, and the picture is resampled between pixels), so every frame moves by the same fraction of a
// pixel. The still is first placed at an internal size of MOTION_ZOOM × the output (for `final`: the most
// zoomed frame still samples the picture at full resolution) and each frame is scaled back down; a preview
// works at its own (already small) size, the internal size then being the output's.
import { MOTION_PAN, MOTION_ZOOM, type ExportQuality, type Motion } from '../../schemas/timeline-terms.ts';

/** Even, at least 2 (yuv420p halves the chroma planes). */
const even = (size: number): number => Math.max(2, 2 * Math.round(size / 2));

/** The size the still is placed at before its motion: the output's × MOTION_ZOOM for `final`. */
export function motionSize(
  output: { width: number; height: number },
  quality: ExportQuality = 'final',
): { width: number; height: number } {
  if (quality === 'preview') return { width: output.width, height: output.height };
  return { width: even(output.width * MOTION_ZOOM), height: even(output.height * MOTION_ZOOM) };
}

/** A number as an expression literal: plain decimals, never exponent notation. */
const num = (value: number): string => String(Number(value.toFixed(6)));

/**
 * The source window of each frame as `perspective` corner expressions (`W`, `H`: the frame's size; `in`: the
 * frame's number from 0). `frames` is the clip's frame count: the motion runs from its first frame to its
 * last.
 */
function corners(motion: Exclude<Motion, 'none'>, frames: number): Record<string, string> {
  // The clip's progress 0 → 1 over its frames (a one-frame clip stays at the start).
  const progress = frames > 1 ? `in/${frames - 1}` : '0';
  if (motion === 'zoom_in' || motion === 'zoom_out') {
    const zoom =
      motion === 'zoom_in'
        ? `(1+${num(MOTION_ZOOM - 1)}*${progress})`
        : `(${num(MOTION_ZOOM)}-${num(MOTION_ZOOM - 1)}*${progress})`;
    // The window is the frame divided by the zoom, centred: its margins are (1 − 1/zoom)/2 of each side.
    const left = `W*(1-1/${zoom})/2`;
    const top = `H*(1-1/${zoom})/2`;
    const right = `W-${left}`;
    const bottom = `H-${top}`;
    return { x0: left, y0: top, x1: right, y1: top, x2: left, y2: bottom, x3: right, y3: bottom };
  }
  // A pan: the window is the frame divided by MOTION_ZOOM (room to move), and it travels MOTION_PAN of the
  // shown width, centred on the middle. `pan_left` moves the picture to the left: the window goes right.
  const window = `W/${num(MOTION_ZOOM)}`;
  const travel = `${num(MOTION_PAN)}*${window}`;
  const direction = motion === 'pan_left' ? `(${progress}-0.5)` : `(0.5-${progress})`;
  const left = `((W-${window})/2+${direction}*${travel})`;
  const right = `(${left}+${window})`;
  const top = `H*(1-1/${num(MOTION_ZOOM)})/2`;
  const bottom = `H-${top}`;
  return { x0: left, y0: top, x1: right, y1: top, x2: left, y2: bottom, x3: right, y3: bottom };
}

/**
 * The filters that move a still placed at `motionSize` over `frames` frames and bring it to the output's size
 * (none for `none`). Interpolation is cubic for `final`, linear for a preview.
 */
export function motionFilters(
  motion: Motion | undefined,
  frames: number,
  output: { width: number; height: number },
  quality: ExportQuality = 'final',
): string[] {
  if (motion === undefined || motion === 'none') return [];
  const points = Object.entries(corners(motion, frames))
    .map(([name, expression]) => `${name}='${expression}'`)
    .join(':');
  const interpolation = quality === 'preview' ? 'linear' : 'cubic';
  const filters = [`perspective=${points}:interpolation=${interpolation}:sense=source:eval=frame`];
  const internal = motionSize(output, quality);
  if (internal.width !== output.width || internal.height !== output.height) {
    filters.push(`scale=${output.width}:${output.height}:flags=bicubic`, 'setsar=1');
  }
  return filters;
}
