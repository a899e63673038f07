// How the preview draws a transition between two video-track clips, as the export's `xfade` draws it
// (docs/editor.md "Transitions"; ffmpeg's libavfilter/vf_xfade.c). Pure: the compositor turns each answer into
// canvas calls. `done` is how far the transition has gone, 0 (only the clip before) to 1 (only the next).
import type { TransitionType } from '../api-types.ts';

/** Weights of a linear mix: the clip before, the next clip and a flat colour (they add up to 1). */
export interface BlendLook {
  kind: 'blend';
  outgoing: number;
  incoming: number;
  colour: '#000000' | '#ffffff';
  colourWeight: number;
}

/** The next clip uncovered in a rectangle of the frame (in pixels), the clip before elsewhere. */
export interface WipeLook {
  kind: 'wipe';
  incoming: { x: number; y: number; width: number; height: number };
}

/** Both clips shifted sideways by these many pixels (the next one pushes the first out). */
export interface SlideLook {
  kind: 'slide';
  outgoingX: number;
  incomingX: number;
}

/**
 * The next clip inside a circle around the middle of the frame, the clip before outside it, with a soft edge:
 * all the next clip within `innerRadius`, none of it beyond `outerRadius`.
 */
export interface CircleLook {
  kind: 'circle';
  centreX: number;
  centreY: number;
  innerRadius: number;
  outerRadius: number;
}

export type TransitionLook = BlendLook | WipeLook | SlideLook | CircleLook;

const clamp01 = (value: number): number => Math.min(1, Math.max(0, value));

/** GLSL's smoothstep, as xfade uses it. */
function smoothstep(edge0: number, edge1: number, x: number): number {
  const t = clamp01((x - edge0) / (edge1 - edge0));
  return t * t * (3 - 2 * t);
}

/**
 * xfade's fadeblack/fadewhite: with its own `progress` P running 1 → 0, a pixel is
 * P·mix(first, colour, s(0.8, 1, P)) + (1 − P)·mix(colour, next, s(0.2, 1, P)), mix(a, b, m) = a·m + b·(1 − m):
 * the first clip sinks into the colour, then the next rises out of it.
 */
function throughColour(done: number, colour: BlendLook['colour']): BlendLook {
  const p = 1 - done;
  const outgoing = p * smoothstep(0.8, 1, p);
  const incoming = (1 - p) * (1 - smoothstep(0.2, 1, p));
  return { kind: 'blend', outgoing, incoming, colour, colourWeight: 1 - outgoing - incoming };
}

/** The look of `type` at `done` (0..1) in a `width`×`height` frame. */
export function transitionLook(
  type: TransitionType,
  done: number,
  width: number,
  height: number,
): TransitionLook {
  const q = clamp01(done);
  switch (type) {
    case 'fade':
      return { kind: 'blend', outgoing: 1 - q, incoming: q, colour: '#000000', colourWeight: 0 };
    case 'fadeblack':
      return throughColour(q, '#000000');
    case 'fadewhite':
      return throughColour(q, '#ffffff');
    // wipeleft: the edge sweeps from the right edge to the left, the next clip uncovered behind it (right).
    case 'wipeleft':
      return { kind: 'wipe', incoming: { x: width * (1 - q), y: 0, width: width * q, height } };
    case 'wiperight':
      return { kind: 'wipe', incoming: { x: 0, y: 0, width: width * q, height } };
    // slideleft: everything moves left; the next clip comes in from the right edge.
    case 'slideleft':
      return { kind: 'slide', outgoingX: -width * q, incomingX: width * (1 - q) };
    case 'slideright':
      return { kind: 'slide', outgoingX: width * q, incomingX: -width * (1 - q) };
    case 'circleopen': {
      // xfade: the clip before weighs smoothstep(0, 1, r/z + (P − 0.5)·3) at a distance r from the middle, z the
      // half diagonal, P = 1 − done: the next clip is whole within r = −z·(P − 0.5)·3, gone from z more out.
      const halfDiagonal = Math.hypot(width / 2, height / 2);
      const shift = (1 - q - 0.5) * 3;
      return {
        kind: 'circle',
        centreX: width / 2,
        centreY: height / 2,
        innerRadius: Math.max(0, -shift * halfDiagonal),
        outerRadius: Math.max(0, (1 - shift) * halfDiagonal),
      };
    }
  }
}
