// The video half of the export's filter_complex (docs/editor.md, Export): every picture clip brought to the
// output's size and frame rate (at its speed, with its motion), cut to an exact number of frames, the clips
// joined by cuts and transitions (transitions.ts), and the text drawn over the whole (text-graph.ts), into
// `[vout]`. Video only: the sound graph reads each clip's own sound itself.
//
// Exact duration: a clip's frame count comes from the rounded timeline, not from its own duration —
// round(end × fps) − round(start × fps) — so the counts always add up to round(total × fps) and the
// output is within half a frame of the timeline, whatever fractions the clips have (three 1.01 s clips at
// 30 fps are 30, 31 and 30 frames, 91 in all, instead of 3 × 30 = 90 from rounding each alone). A transition
// overlaps its clip with the one before by its own rounded frames (transitions.ts `overlapFrames`).
// Each segment gets exactly its count: `fps` puts the frames on the output's grid, `tpad` clones the last
// frame when a source falls short (a container's duration is often a frame longer than its video stream), and
// `trim=end_frame` cuts by frame count, which no timestamp rounding can shift.
//
// An image clip takes the same chain: its input is the one decoded frame of the image (input-args.ts), which is
// scaled, placed and converted once, and `tpad` repeats that finished frame for the clip's whole length. The
// clones share the frame's memory, so a still costs one decode and one scale however long it shows (a moving
// still is then resampled per frame by its motion, motion.ts).
import { motionFilters, motionSize } from './motion.ts';
import { placementFilters } from './placement.ts';
import { pictureInput, pictureTimeline, type ExportPlan, type PictureClip } from './plan.ts';
import { textFilters } from './text-graph.ts';
import { firstClipFade, joinSegments, overlapFrames, type JoinedSegment } from './transitions.ts';

/** Label of the picture graph's single output: the caller maps it (`-map [vout]`). */
export const PICTURE_OUT = 'vout';

/** How many output frames each picture clip gets (0 for a clip shorter than half a frame at its position). */
export function clipFrames(plan: Pick<ExportPlan, 'picture' | 'output'>): number[] {
  const { fps } = plan.output;
  const { starts } = pictureTimeline(plan);
  return plan.picture.map((clip, i) => {
    const start = starts[i]!;
    return Math.round((start + clip.durationSec) * fps) - Math.round(start * fps);
  });
}

/** The exact length of the exported video: its frames (each clip's, less each overlap) over the frame rate. */
export function pictureDurationSec(plan: Pick<ExportPlan, 'picture' | 'output'>): number {
  const frames = clipFrames(plan).reduce((sum, count) => sum + Math.max(0, count), 0);
  const overlaps = overlapFrames(plan).reduce((sum, count) => sum + count, 0);
  return (frames - overlaps) / plan.output.fps;
}

/** A number as a filter literal: plain decimals, never exponent notation. */
const num = (value: number): string => String(Number(value.toFixed(6)));

/** Source seconds per timeline second of a clip (1 for an image, whose single frame has no time). */
const speedOf = (clip: PictureClip): number =>
  clip.source.kind === 'video' && clip.speed !== undefined && clip.speed > 0 ? clip.speed : 1;

/** Whether a clip moves (an image with a motion other than none). */
const moves = (clip: PictureClip): boolean =>
  clip.source.kind === 'image' && clip.motion !== undefined && clip.motion !== 'none';

/**
 * Timeline seconds of a video clip's start that a chain kept from output frame `keepFrom` on can drop before
 * scaling (0: none): all but two output frames and three source frames (at the clip's speed) before it, so
 * `fps` still sees every source frame it could pick for a kept frame.
 */
export function droppableSec(clip: PictureClip, keepFrom: number, fps: number): number {
  const sourceFps = clip.source.kind === 'video' ? clip.source.video?.fps : undefined;
  if (!sourceFps || !(sourceFps > 0) || keepFrom <= 0) return 0;
  const seconds = (keepFrom - 2) / fps - 3 / (sourceFps * speedOf(clip));
  return seconds > 0 ? Number(seconds.toFixed(6)) : 0;
}

/**
 * The chain of one picture clip, `count` frames long (`first`: the timeline's first clip, which fades in from
 * black when it has a transition). Exported for segments (segment-command.ts), which cut their frames out of
 * this same chain; one that keeps frames from `keepFrom` on only (a transition's outgoing tail) has a video's
 * earlier frames dropped before they are scaled (`droppableSec`), and `fps` pads the clip's start with copies of
 * the first frame left (`start_time=0`): every frame keeps its number, and every kept frame is the one the
 * whole chain makes.
 */
export function clipChain(
  plan: ExportPlan,
  clip: PictureClip,
  count: number,
  first: boolean,
  keepFrom = 0,
): string[] {
  const { width, height, fps, fit } = plan.output;
  const quality = plan.output.quality ?? 'final';
  const speed = speedOf(clip);
  const dropped = droppableSec(clip, keepFrom, fps);
  // A moving still is placed larger (motion.ts) and brought back to the output's size by its motion.
  const placed = moves(clip) ? motionSize(plan.output, quality) : { width, height };
  const fade = first ? firstClipFade(clip, fps) : undefined;
  return [
    // An image is one picture: a file of several concatenated ones (which the image demuxers read as
    // frames) shows its first, and ffmpeg stops reading it there.
    ...(clip.source.kind === 'image' ? ['trim=end_frame=1'] : []),
    // Start at 0 so that `fps` lays its grid from the clip's first frame; at speed s, s source seconds pass
    // in each second of the timeline.
    speed === 1 ? 'setpts=PTS-STARTPTS' : `setpts=(PTS-STARTPTS)/${num(speed)}`,
    ...(dropped > 0 ? [`trim=start=${num(dropped)}`] : []),
    placementFilters(fit, placed.width, placed.height, quality),
    // Sources with odd sample aspect ratios would otherwise carry it into concat, which refuses mixed SARs.
    'setsar=1',
    dropped > 0 ? `fps=${fps}:start_time=0` : `fps=${fps}`,
    // Converted before `tpad`, so a repeated still is converted once too.
    'format=yuv420p',
    `tpad=stop_mode=clone:stop=${count}`,
    `trim=end_frame=${count}`,
    'setpts=PTS-STARTPTS',
    ...(moves(clip) ? motionFilters(clip.motion, count, { width, height }, quality) : []),
    ...(fade ? [fade] : []),
  ];
}

/**
 * The picture part of `-filter_complex`: one chain per picture clip reading `[<pictureInput(i)>:v]` into
 * `[vclip<i>]`, the clips joined by cuts and transitions, the text drawn over them, ending in `[vout]`.
 * Throws on a plan without frames (the service answers `no_video_clips` before it builds a plan).
 */
export function pictureGraph(plan: ExportPlan): string {
  const frames = clipFrames(plan);
  const chains: string[] = [];
  const segments: JoinedSegment[] = [];
  plan.picture.forEach((clip, i) => {
    const count = frames[i]!;
    // A clip that rounds to no frame is left out: concat cannot take an empty segment, and its input stays
    // opened but unused, which ffmpeg allows.
    if (count <= 0) return;
    const label = `[vclip${i}]`;
    chains.push(
      `[${pictureInput(i)}:v]${clipChain(plan, clip, count, segments.length === 0).join(',')}${label}`,
    );
    segments.push({ label, index: i, frames: count });
  });
  const texts = textFilters(plan);
  const joined = joinSegments(plan, segments, texts.length > 0 ? 'vtext' : PICTURE_OUT);
  chains.push(...joined.chains);
  if (texts.length > 0) chains.push(`[vtext]${texts.join(',')}[${PICTURE_OUT}]`);
  return chains.join(';');
}
