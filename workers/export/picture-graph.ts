// The video half of the export's filter_complex: every picture clip brought to the output's size and frame
// rate, cut to an exact number of frames, and the segments concatenated into `[vout]`.
//
// Exact duration: a clip's frame count comes from the rounded timeline, not from its own duration —
// round(end × fps) − round(start × fps) — so the counts always add up to round(Σ durationSec × fps) and the
// output is within half a frame of Σ, whatever fractions the clips have (three 1.01 s clips at 30 fps are 30,
// 31 and 30 frames, 91 in all, instead of 3 × 30 = 90 from rounding each alone).
// Each segment then gets exactly that count: `fps` puts the frames on the output's grid, `tpad` clones the last
// frame when a source falls short (a container's duration is often a frame longer than its video stream), and
// `trim=end_frame` cuts by frame count, which no timestamp rounding can shift.
//
// An image clip takes the same chain: its input is the one decoded frame of the image (input-args.ts), which is
// scaled, placed and converted once, and `tpad` repeats that finished frame for the clip's whole length. The
// clones share the frame's memory, so a still costs one decode and one scale however long it shows, and its
// frame count is exact like any clip's.
import { placementFilters } from './placement.ts';
import {
  type ExportPlan,
  PICTURE_SOUND,
  pictureCarriesSound,
  pictureInput,
  pictureSoundLabel,
  pictureTimeline,
} from './plan.ts';

/** How many output frames each picture clip gets (0 for a clip shorter than half a frame at its position). */
export function clipFrames(plan: Pick<ExportPlan, 'picture' | 'output'>): number[] {
  const { fps } = plan.output;
  const { starts } = pictureTimeline(plan);
  return plan.picture.map((clip, i) => {
    const start = starts[i]!;
    return Math.round((start + clip.durationSec) * fps) - Math.round(start * fps);
  });
}

/** The exact length of the exported video: its frame count over the frame rate. */
export function pictureDurationSec(plan: Pick<ExportPlan, 'picture' | 'output'>): number {
  return clipFrames(plan).reduce((sum, frames) => sum + frames, 0) / plan.output.fps;
}

/**
 * The picture part of `-filter_complex`: one chain per picture clip reading `[<pictureInput(i)>:v]`, then
 * `concat` into `[vout]`. Its labels are `[vclip<i>]`, apart from the sound graph's (`[pic<i>]`, `[voice]`…).
 *
 * `withSound` (the re-encoding command, when the track has sound): each clip's sound segment `[pic<i>]` from
 * the sound graph (`soundGraph(plan, 'with-picture')`) goes into the same `concat`, interleaved with its
 * frames, which also outputs `[picture]`. One concat keeps every input's video and audio decoding in step;
 * two separate ones let ffmpeg run one far ahead of the other and queue decoded frames in between, which
 * made the whole export about 1.4 times slower (test/bench/export.ts).
 * Throws on a plan without frames (the service answers `no_video_clips` before it builds a plan).
 */
export function pictureGraph(plan: ExportPlan, withSound = false): string {
  const { width, height, fps, fit } = plan.output;
  const frames = clipFrames(plan);
  const interleaved = withSound && pictureCarriesSound(plan);
  const chains: string[] = [];
  const segments: string[] = [];
  plan.picture.forEach((clip, i) => {
    const count = frames[i]!;
    // A clip that rounds to no frame is left out: concat cannot take an empty segment, and its input stays
    // opened but unused, which ffmpeg allows.
    if (count <= 0) return;
    const label = `[vclip${i}]`;
    const filters = [
      // An image is one picture: a file of several concatenated ones (which the image demuxers read as
      // frames) shows its first, and ffmpeg stops reading it there.
      ...(clip.source.kind === 'image' ? ['trim=end_frame=1'] : []),
      // Start at 0 so that `fps` lays its grid from the clip's first frame.
      'setpts=PTS-STARTPTS',
      placementFilters(fit, width, height),
      // Sources with odd sample aspect ratios would otherwise carry it into concat, which refuses mixed SARs.
      'setsar=1',
      `fps=${fps}`,
      // Converted before `tpad`, so a repeated still is converted once too.
      'format=yuv420p',
      `tpad=stop_mode=clone:stop=${count}`,
      `trim=end_frame=${count}`,
      'setpts=PTS-STARTPTS',
    ];
    chains.push(`[${pictureInput(i)}:v]${filters.join(',')}${label}`);
    segments.push(interleaved ? `${label}[${pictureSoundLabel(i)}]` : label);
  });
  if (segments.length === 0) throw new RangeError('an export needs at least one frame of picture');
  const join = interleaved
    ? `concat=n=${segments.length}:v=1:a=1[vout][${PICTURE_SOUND}]`
    : `concat=n=${segments.length}:v=1:a=0[vout]`;
  return [...chains, `${segments.join('')}${join}`].join(';');
}
