// How the builders number ffmpeg inputs and place picture clips on the timeline; the plan's types are the
// export pool's port (src/ports/export-pool.ts).

export type {
  ExportPlan,
  ExportSource,
  FilterSupport,
  OutputSpec,
  PictureClip,
  SoundClip,
} from '../../src/ports/export-pool.ts';
import type { ExportPlan } from '../../src/ports/export-pool.ts';

/**
 * ffmpeg input numbering shared by every builder: one input per picture clip in order, then one per sound
 * clip (an image is looped for its own clip; a file used twice is opened twice, which keeps each clip's trim
 * independent and the graph free of `split`).
 */
export const pictureInput = (index: number): number => index;
export const soundInput = (plan: Pick<ExportPlan, 'picture'>, index: number): number =>
  plan.picture.length + index;

/** Where each picture clip starts on the timeline, and the whole duration (the sum of picture clips). */
export function pictureTimeline(plan: Pick<ExportPlan, 'picture'>): { starts: number[]; totalSec: number } {
  const starts: number[] = [];
  let at = 0;
  for (const clip of plan.picture) {
    starts.push(at);
    at += clip.durationSec;
  }
  return { starts, totalSec: at };
}
