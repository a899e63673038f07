// An export's picture split at its cuts (docs/editor.md, Export): each clip's body, and each transition (the
// tail of one clip and the head of the next), is a segment, with the text that lies over it. Each segment is
// encoded on its own (segment-command.ts) with one fixed set of codec parameters (segment-codec.ts), and the
// export is the segments joined by stream copy plus the sound mixed once. A segment's key names everything
// that decides its pixels, so a later export of an edited timeline re-encodes only the segments whose key
// changed. Pure: no ffmpeg, no files.
//
// Frame-exact by construction: the boundaries come from the same rounded timeline as the whole-timeline render
// (picture-graph.ts `clipFrames`, transitions.ts `overlapFrames`), so the segments' frame counts add up to the
// whole render's exactly, and each segment cuts its frames out of the very chain the whole render builds for
// its clips (frame numbers, not seconds, so no timestamp rounding can move a cut).
//
// When the picture is not segmented (`segmentBlockers`), the export renders the whole timeline in one
// command, as it always has; that render stays the reference the segmented one is tested against:
// - the fast path applies: it copies every clip without encoding anything, which no segment can beat;
// - a clip rounds to no frame: the whole render leaves it out, and the transitions around it then join other
//   clips than the plan's neighbours;
// - a clip's transition in and transition out overlap each other (possible by rounding, or a plan the service
//   did not bound): `xfade` then clamps, and no split into disjoint segments reproduces it;
// - the frame rate does not fall on the segments' 90 kHz timescale (29.97): the joined timestamps would drift.
import { createHash } from 'node:crypto';
import { fastPathEligible } from './fast-path.ts';
import { clipFrames } from './picture-graph.ts';
import type { ExportPlan, ExportSource, PictureClip } from './plan.ts';
import { fitsTimescale, segmentCodecArgs } from './segment-codec.ts';
import { overlapFrames } from './transitions.ts';

/**
 * Version of the pixels the builders make from a plan. Bump it with any change to a builder (picture graph,
 * placement, motion, transitions, text layout or drawing, the bundled font, the codec parameters) that
 * changes the frames for the same plan: every cached segment then misses.
 */
export const RENDERER_VERSION = 1;

/** The frames a segment takes from one clip: `[fromFrame, toFrame)` of that clip's own chain (0 = its first). */
export interface SegmentPart {
  /** Index in `plan.picture`. */
  clip: number;
  fromFrame: number;
  toFrame: number;
}

/** A stretch of the output's picture, encoded on its own. */
export interface PictureSegment {
  /** A clip's frames alone, or a transition: the outgoing clip's tail under the incoming clip's head. */
  kind: 'body' | 'transition';
  /** Output frames `[startFrame, endFrame)` at the output's fps. */
  startFrame: number;
  endFrame: number;
  /** One part for a body; for a transition the outgoing clip's tail, then the incoming clip's head. */
  parts: SegmentPart[];
  /** Indexes in `plan.texts` of the text clips shown on any of its frames, in drawing order. */
  texts: number[];
  /** sha256 (hex) of a canonical JSON of everything that decides its pixels (`segmentKeyInput`). */
  key: string;
}

/**
 * Why `plan`'s picture cannot be rendered in segments, one line per reason; empty when it can. See the top of
 * the file for why each one falls back to the whole-timeline render.
 */
export function segmentBlockers(plan: ExportPlan): string[] {
  if (plan.picture.length === 0) return ['no picture clips'];
  if (fastPathEligible(plan)) return ['the fast path copies every clip: there is nothing to encode'];
  const reasons: string[] = [];
  const { fps } = plan.output;
  if (!fitsTimescale(fps)) reasons.push(`frame rate ${fps} is not a whole number of 90 kHz ticks`);
  const frames = clipFrames(plan);
  const overlaps = overlapFrames(plan);
  plan.picture.forEach((_clip, i) => {
    const count = frames[i]!;
    if (count <= 0) reasons.push(`clip ${i}: shorter than a frame`);
    else if (overlaps[i]! + (overlaps[i + 1] ?? 0) > count) {
      reasons.push(`clip ${i}: its transitions in and out overlap`);
    }
  });
  return reasons;
}

/** Whether `plan`'s picture can be rendered in segments (`segmentBlockers` is empty). */
export const canSegment = (plan: ExportPlan): boolean => segmentBlockers(plan).length === 0;

/**
 * Where each clip's first frame lands on the output: the clips one after the other, each transition pulling
 * its clip back over the one before by its overlap, as `joinSegments` places them.
 */
export function clipStartFrames(plan: Pick<ExportPlan, 'picture' | 'output'>): number[] {
  const frames = clipFrames(plan);
  const overlaps = overlapFrames(plan);
  const starts: number[] = [];
  let at = 0;
  plan.picture.forEach((_clip, i) => {
    at -= overlaps[i]!;
    starts.push(at);
    at += frames[i]!;
  });
  return starts;
}

/**
 * The time base the whole render's text filters see (their `t`): a timeline of cuts only is one `concat`,
 * whose timestamps are microseconds; any other timeline ends on the output's frame grid (a single clip, or
 * `xfade`, which keeps its first input's `1/fps`). A segment draws its text on the same time base, so a text's
 * first and last frames are decided by the same arithmetic.
 */
export function textTimeBase(plan: Pick<ExportPlan, 'picture' | 'output'>): 'frame' | 'microsecond' {
  const cutsOnly = overlapFrames(plan).every((overlap) => overlap === 0);
  return plan.picture.length > 1 && cutsOnly ? 'microsecond' : 'frame';
}

/**
 * The pixel format the whole render's joined picture is in from its first `xfade` on (its text drawn in it, and
 * converted to the encoder's yuv420p at the end): `xfade` works in 4:4:4 (every ffmpeg that has it; the clips'
 * yuv420p is converted at its inputs), and since every frame of the timeline reaches the last `xfade` through
 * one input or the other, a timeline with any transition between clips has all its frames through that round
 * trip, which blurs their colour a little. A segment makes the same round trip (segment-command.ts), or its
 * frames would differ from the reference by it (≈55 dB PSNR where the rest is identical).
 */
export function joinedPixelFormat(plan: Pick<ExportPlan, 'picture' | 'output'>): 'yuv420p' | 'yuv444p' {
  return overlapFrames(plan).some((overlap) => overlap > 0) ? 'yuv444p' : 'yuv420p';
}

/** How close to a frame's time a text's edge still counts as on it (text times are given to the µs). */
const TEXT_EPSILON_SEC = 1e-6;

/** The text clips drawn on any output frame of `[startFrame, endFrame)` (`between(t, start, end)`). */
function textsOver(plan: ExportPlan, startFrame: number, endFrame: number): number[] {
  const { fps } = plan.output;
  const first = startFrame / fps;
  const last = (endFrame - 1) / fps;
  return (plan.texts ?? []).flatMap((text, i) =>
    text.durationSec >= 0 &&
    text.startSec <= last + TEXT_EPSILON_SEC &&
    text.startSec + text.durationSec >= first - TEXT_EPSILON_SEC
      ? [i]
      : [],
  );
}

/** What the keys need to know beyond the plan. */
export interface SegmentKeyOptions {
  /**
   * The ffmpeg that renders (its `-version` first line, which names its libx264 build too, or any stable name
   * of it): another build may make other pixels from the same graph — `xfade`'s formats, x264's decisions —
   * so a cache shared across deployments must not mix them. Absent: keys hold for one ffmpeg only.
   */
  toolVersion?: string;
}

/**
 * The picture's segments in output order (throws a RangeError naming the blockers when `canSegment` is
 * false). For each clip: the transition that brings it in, if any, then its body — its frames outside any
 * transition, left out when a transition in and out leave none.
 */
export function planSegments(plan: ExportPlan, options: SegmentKeyOptions = {}): PictureSegment[] {
  const blockers = segmentBlockers(plan);
  if (blockers.length > 0) throw new RangeError(`cannot render in segments: ${blockers.join('; ')}`);
  const frames = clipFrames(plan);
  const overlaps = overlapFrames(plan);
  const starts = clipStartFrames(plan);
  const segments: PictureSegment[] = [];
  const add = (kind: PictureSegment['kind'], startFrame: number, parts: SegmentPart[]) => {
    const endFrame = startFrame + parts[0]!.toFrame - parts[0]!.fromFrame;
    const shaped = { kind, startFrame, endFrame, parts, texts: textsOver(plan, startFrame, endFrame) };
    segments.push({ ...shaped, key: segmentKey(plan, shaped, options) });
  };
  plan.picture.forEach((_clip, i) => {
    const count = frames[i]!;
    const into = overlaps[i]!;
    const out = overlaps[i + 1] ?? 0;
    const start = starts[i]!;
    if (into > 0) {
      const before = frames[i - 1]!;
      add('transition', start, [
        { clip: i - 1, fromFrame: before - into, toFrame: before },
        { clip: i, fromFrame: 0, toFrame: into },
      ]);
    }
    if (count - out > into) add('body', start + into, [{ clip: i, fromFrame: into, toFrame: count - out }]);
  });
  return segments;
}

/** Source seconds per timeline second, as the picture graph reads it (1 for an image). */
const speedOf = (clip: PictureClip): number =>
  clip.source.kind === 'video' && clip.speed !== undefined && clip.speed > 0 ? clip.speed : 1;

/**
 * What names a source's pixels: the caller's content id, else its path (the same file, not necessarily the
 * same content: such keys are only good within one export's folder). The probe's picture fields come along
 * (rotation and size decide the placement), and the demuxer, which decides how the bytes are read.
 */
function sourceIdentity(source: ExportSource): unknown {
  return {
    id: source.contentId !== undefined ? { content: source.contentId } : { path: source.path },
    kind: source.kind,
    demuxer: source.demuxer,
    durationSec: source.durationSec,
    video: source.video ?? null,
  };
}

/**
 * How many frames the first clip's fade from black darkens (0 without one), counted as transitions.ts
 * `firstClipFade` counts them.
 */
function firstFadeFrames(plan: ExportPlan): number {
  const transition = plan.picture[0]?.transitionIn;
  return transition ? Math.max(1, Math.round(transition.durationSec * plan.output.fps)) : 0;
}

/**
 * One part's share of the key: its source and what the clip's chain does with it (a video's trim, length
 * read and speed; an image's motion, which runs over the clip's whole frame count), the frames taken, and
 * the first clip's fade when it reaches them. Fields that change no pixel of the part (volume, sound fades,
 * an image's trim or speed) are left out, so changing them keeps the key.
 */
function partKeyInput(plan: ExportPlan, frames: number[], part: SegmentPart): unknown {
  const clip = plan.picture[part.clip]!;
  const video = clip.source.kind === 'video';
  const fade = part.clip === 0 ? firstFadeFrames(plan) : 0;
  return {
    source: sourceIdentity(clip.source),
    trimStartSec: video ? clip.trimStartSec : 0,
    // A video's length decides how much of the source is read (where a short source's last frame is held).
    durationSec: video ? clip.durationSec : null,
    speed: speedOf(clip),
    motion: clip.source.kind === 'image' ? (clip.motion ?? 'none') : 'none',
    clipFrames: frames[part.clip]!,
    fromFrame: part.fromFrame,
    toFrame: part.toFrame,
    fadeFromBlackFrames: fade > part.fromFrame ? fade : 0,
  };
}

/** The segment as the key sees it: everything of the plan that decides its pixels, and nothing else. */
export function segmentKeyInput(
  plan: ExportPlan,
  segment: Omit<PictureSegment, 'key'>,
  options: SegmentKeyOptions = {},
): unknown {
  const { width, height, fps, fit, quality } = plan.output;
  const frames = clipFrames(plan);
  const incoming = segment.kind === 'transition' ? plan.picture[segment.parts[1]!.clip]! : undefined;
  const texts = segment.texts.map((i) => plan.texts![i]!);
  return {
    renderer: RENDERER_VERSION,
    tool: options.toolVersion ?? null,
    encoder: segmentCodecArgs(plan),
    output: { width, height, fps, fit, quality: quality ?? 'final' },
    kind: segment.kind,
    // A transition anywhere in the plan puts every frame through 4:4:4 (`joinedPixelFormat`).
    joinedFormat: joinedPixelFormat(plan),
    frames: segment.endFrame - segment.startFrame,
    parts: segment.parts.map((part) => partKeyInput(plan, frames, part)),
    transition: incoming?.transitionIn
      ? { type: incoming.transitionIn.type, frames: segment.endFrame - segment.startFrame }
      : null,
    // Text is drawn at its times on the whole timeline (segment-command.ts), so where the segment sits on it
    // decides which of its frames show the text: with text, the start frame and time base count too.
    text:
      texts.length === 0
        ? null
        : { startFrame: segment.startFrame, timeBase: textTimeBase(plan), clips: texts },
  };
}

/** JSON with object keys sorted at every level (and undefined members left out): one text per value. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.entries(value)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, member]) => `${JSON.stringify(name)}:${canonicalJson(member)}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The segment's cache key: sha256 (hex) of the canonical JSON of `segmentKeyInput`. */
export function segmentKey(
  plan: ExportPlan,
  segment: Omit<PictureSegment, 'key'>,
  options: SegmentKeyOptions = {},
): string {
  return createHash('sha256')
    .update(canonicalJson(segmentKeyInput(plan, segment, options)))
    .digest('hex');
}
