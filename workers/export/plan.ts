// How the builders number ffmpeg inputs and place picture clips on the timeline; the plan's types are the
// export pool's port (work-order.ts).

export type {
  ExportPlan,
  ExportSource,
  FilterSupport,
  OutputSpec,
  PictureClip,
  SoundClip,
  TextOverlay,
} from './work-order.ts';
import type { ExportPlan } from './work-order.ts';

/**
 * ffmpeg input numbering shared by every builder: one input per picture clip in order, then one per sound
 * clip (an image is read once for its own clip; a file used twice is opened twice, which keeps each clip's
 * trim independent and the graph free of `split`).
 */
export const pictureInput = (index: number): number => index;
export const soundInput = (plan: Pick<ExportPlan, 'picture'>, index: number): number =>
  plan.picture.length + index;

/**
 * Where the sound graph reads picture clip `index`'s own sound: the clip's file opened a second time for its
 * audio alone (input-args.ts), after the sound clips' inputs, one per picture clip that has audio (undefined
 * for an image or a silent video). Reading a clip's sound from its picture input instead makes ffmpeg decode
 * that file's frames as soon as its sound is wanted and hold them until the picture gets there: on the
 * 12-clip bench with a transition on every cut, 3.4 GB of queued frames and half as much CPU again, where a
 * separate input keeps the export at 0.7 GB.
 */
export function pictureSoundInput(
  plan: Pick<ExportPlan, 'picture' | 'sounds'>,
  index: number,
): number | undefined {
  if (!hasOwnSound(plan.picture[index])) return undefined;
  const before = plan.picture.slice(0, index).filter(hasOwnSound).length;
  return plan.picture.length + plan.sounds.length + before;
}

/** Whether a picture clip has sound of its own (a video with an audio stream). */
export const hasOwnSound = (clip: ExportPlan['picture'][number] | undefined): boolean =>
  clip !== undefined && clip.source.kind === 'video' && clip.source.audio !== undefined;

/**
 * How long picture clip `index` overlaps the clip before it: its transition's length (none on the first clip,
 * whose transition fades in from black without shortening the video).
 */
export const overlapSec = (plan: Pick<ExportPlan, 'picture'>, index: number): number =>
  index === 0 ? 0 : (plan.picture[index]?.transitionIn?.durationSec ?? 0);

/**
 * Where each picture clip starts on the timeline, and the whole duration: the clips one after the other, each
 * transition overlapping its clip with the end of the one before (Σ durations − Σ transitions).
 */
export function pictureTimeline(plan: Pick<ExportPlan, 'picture'>): { starts: number[]; totalSec: number } {
  const starts: number[] = [];
  let at = 0;
  plan.picture.forEach((clip, index) => {
    at -= overlapSec(plan, index);
    starts.push(at);
    at += clip.durationSec;
  });
  return { starts, totalSec: at };
}

/**
 * Whether the video track carries sound of its own (a clip with audio): then the re-encoding command joins each
 * clip's frames and sound in one `concat` (picture-graph.ts), whose audio output the sound graph mixes.
 */
export const pictureCarriesSound = (plan: Pick<ExportPlan, 'picture'>): boolean =>
  plan.picture.some((clip) => clip.source.audio !== undefined);

/** Label of picture clip `index`'s own sound segment, and of those segments joined (`[picture]`). */
export const pictureSoundLabel = (index: number): string => `pic${index}`;
export const PICTURE_SOUND = 'picture';
