// Which part of a video's filmstrip a clip box shows (docs/editor.md "Pictures of assets"): the sprite is one
// row of equal frames, frame i from the i-th of equal slices of the whole video, so a strip's width is the
// video's time. A clip plays only its trim onward, for its length × its speed: the box shows that part of the
// strip, stretched over the box, as CSS background size and position (set through CSSOM, which the page's CSP
// allows). Pure: clip-pictures.tsx applies it.
import { assetNumber } from '../asset-metadata.ts';
import type { PlacedClip } from './placements.ts';

/** The sprite's background size and position, in the CSS their values read as. */
export interface FilmstripRange {
  /** `background-size`: the sprite's width as a share of the box, its full height. */
  size: string;
  /** `background-position`: which part of the sprite lies under the box. */
  position: string;
}

/** The whole strip over the box: a video whose length is unknown, or a clip that plays all of it. */
const WHOLE: FilmstripRange = { size: '100% 100%', position: '0% 0%' };

/** A percentage as CSS reads it, without exponent notation or a long tail. */
const percent = (share: number): string => `${Number((share * 100).toFixed(4))}%`;

/**
 * The part of the source a placed video clip plays, in source seconds: from its trim for its timeline length
 * × its speed, within the video's `durationSec`.
 */
export function usedSourceRange(placed: PlacedClip, durationSec: number): { fromSec: number; toSec: number } {
  const clip = placed.clip;
  const fromSec = Math.min(durationSec, Math.max(0, clip.trim_start_sec ?? 0));
  const playedSec = Math.max(0, (placed.endSec - placed.startSec) * (clip.speed ?? 1));
  return { fromSec, toSec: Math.min(durationSec, fromSec + playedSec) };
}

/**
 * The filmstrip's size and position for a placed video clip: the sprite is made `duration / used` times the
 * box's width, and shifted so that the used range's start meets the box's left edge. CSS positions a
 * percentage p by lining up p of the sprite with p of the box, so the start lies at the left edge when
 * p = from / (duration − used).
 */
export function filmstripRange(placed: PlacedClip): FilmstripRange {
  const durationSec = placed.asset ? assetNumber(placed.asset, 'duration_sec') : undefined;
  if (durationSec === undefined || !(durationSec > 0)) return WHOLE;
  const { fromSec, toSec } = usedSourceRange(placed, durationSec);
  const usedSec = toSec - fromSec;
  // Nothing left to show (a trim at the very end): the strip's last instant would be a zero-width slice.
  if (!(usedSec > 0) || durationSec - usedSec < 1e-9) return WHOLE;
  const scale = durationSec / usedSec;
  return {
    size: `${percent(scale)} 100%`,
    position: `${percent(fromSec / (durationSec - usedSec))} 0%`,
  };
}
