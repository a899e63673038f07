// How the picture clips are joined (docs/editor.md, Transitions): a cut is a `concat`, a transition an
// overlap drawn by ffmpeg's `xfade` — the clip comes in over the last frames of the one before it, so the
// video lasts Σ durations − Σ transitions. On the first clip a transition of any type is a fade in from black
// over its duration (the `fade` filter on that clip alone), which does not shorten the video. Pure: no ffmpeg.
//
// Frame-exact: every clip is cut to its frame count (picture-graph.ts `clipFrames`, from the rounded timeline
// with overlaps), a transition overlaps `overlapFrames` frames and starts at the joined stream's frame count
// minus that overlap. The joined stream is then exactly round(total × fps) frames long, whatever fractions the
// durations have.
import type { TransitionType } from '../../schemas/timeline-terms.ts';
import { pictureTimeline, type ExportPlan, type PictureClip } from './plan.ts';

/** Our transition names as `xfade` spells them (the same words: the table keeps them from drifting apart). */
export const XFADE_TRANSITIONS: Readonly<Record<TransitionType, string>> = {
  fade: 'fade',
  fadeblack: 'fadeblack',
  fadewhite: 'fadewhite',
  wipeleft: 'wipeleft',
  wiperight: 'wiperight',
  slideleft: 'slideleft',
  slideright: 'slideright',
  circleopen: 'circleopen',
};

/**
 * How many frames each picture clip overlaps the one before it: its transition's length on the frame grid
 * (the previous clip's rounded end minus this clip's rounded start), 0 for a cut and for the first clip.
 */
export function overlapFrames(plan: Pick<ExportPlan, 'picture' | 'output'>): number[] {
  const { fps } = plan.output;
  const { starts } = pictureTimeline(plan);
  return plan.picture.map((_clip, i) => {
    if (i === 0) return 0;
    const previousEnd = starts[i - 1]! + plan.picture[i - 1]!.durationSec;
    return Math.max(0, Math.round(previousEnd * fps) - Math.round(starts[i]! * fps));
  });
}

/** Seconds of `frames` frames as a plain decimal (`xfade` reads seconds; no exponent notation). */
const frameSeconds = (frames: number, fps: number): string => String(Number((frames / fps).toFixed(6)));

/**
 * The fade from black on the first clip's chain, for its transition (none without one): `fade` over the
 * transition's frames, counted from the clip's first frame.
 */
export function firstClipFade(first: PictureClip, fps: number): string | undefined {
  const transition = first.transitionIn;
  if (!transition) return undefined;
  const frames = Math.max(1, Math.round(transition.durationSec * fps));
  return `fade=t=in:s=0:n=${frames}:color=black`;
}

/** A clip's finished segment, as the picture graph hands it over. */
export interface JoinedSegment {
  /** Its label, e.g. `[vclip3]`. */
  label: string;
  /** Its index in `plan.picture` (for its transition). */
  index: number;
  /** Its exact frame count (> 0). */
  frames: number;
}

/**
 * The chains that join `segments` (in timeline order) into `[output]`: runs of clips joined by cuts go through
 * one `concat` each, and each run comes in over the end of the joined stream before it with the `xfade` of its
 * first clip's transition. Answers the chains (none when a single segment is simply relabelled) and the
 * joined frame count.
 */
export function joinSegments(
  plan: Pick<ExportPlan, 'picture' | 'output'>,
  segments: JoinedSegment[],
  output: string,
): { chains: string[]; frames: number } {
  if (segments.length === 0) throw new RangeError('an export needs at least one frame of picture');
  const { fps } = plan.output;
  const overlaps = overlapFrames(plan);
  // Runs of segments joined by cuts; every run after the first starts with a transition.
  const runs: JoinedSegment[][] = [];
  for (const segment of segments) {
    const overlap = overlaps[segment.index] ?? 0;
    if (runs.length === 0 || overlap > 0) runs.push([segment]);
    else runs.at(-1)!.push(segment);
  }
  const chains: string[] = [];
  /** A run as one stream: its lone segment, or the concat of its segments into `label`. */
  const runStream = (run: JoinedSegment[], label: string): string => {
    if (run.length === 1) return run[0]!.label;
    // `concat` outputs in microseconds and may not state the frame rate; `xfade` wants both inputs on the same
    // time base and rate, so the run is put back on the output's grid (its frames already are: none moves).
    const regrid = runs.length > 1 ? `,fps=${fps}` : '';
    chains.push(`${run.map((s) => s.label).join('')}concat=n=${run.length}:v=1:a=0${regrid}${label}`);
    return label;
  };
  const last = runs.length - 1;
  let joined = runStream(runs[0]!, last === 0 ? `[${output}]` : '[vrun0]');
  let frames = runs[0]!.reduce((sum, s) => sum + s.frames, 0);
  for (let r = 1; r <= last; r += 1) {
    const run = runs[r]!;
    const head = run[0]!;
    const transition = plan.picture[head.index]!.transitionIn!;
    const runFrames = run.reduce((sum, s) => sum + s.frames, 0);
    // Never longer than either side (the service keeps a transition within half of each clip it joins).
    const overlap = Math.min(overlaps[head.index]!, frames, runFrames);
    const offset = frames - overlap;
    const label = r === last ? `[${output}]` : `[vjoin${r}]`;
    // An xfade's output that another xfade takes ends one frame after its last frame: xfade ends its stream
    // at its last frame's time, and the next xfade, told its first input ended there, emitted no frame at its
    // transition's last time (the encoder's constant rate repeated one in its place, and every later frame
    // came one late). A cloned frame past the end, cut off again at the exact count, gives the end its time.
    const ending = r === last ? '' : `,tpad=stop_mode=clone:stop=1,trim=end_frame=${offset + runFrames}`;
    chains.push(
      `${joined}${runStream(run, `[vrun${r}]`)}xfade=transition=${XFADE_TRANSITIONS[transition.type]}` +
        `:duration=${frameSeconds(overlap, fps)}:offset=${frameSeconds(offset, fps)}${ending}${label}`,
    );
    joined = label;
    frames = offset + runFrames;
  }
  // A single clip is the output as it is: `null` only gives it the name.
  if (joined !== `[${output}]`) chains.push(`${joined}null[${output}]`);
  return { chains, frames };
}
