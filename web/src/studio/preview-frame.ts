// What one frame of the preview shows at a timeline time, with the export's arithmetic (docs/editor.md
// "Transitions", "Motion", "Speed", "Text"): the video-track clip(s) on the 30 fps frame grid — two during a
// transition, with how far it has gone —, each clip's source time, an image's motion window, the first clip's
// fade in from black, and the text clips with their opacity. Pure: the compositor draws what this answers.
import {
  MOTION_PAN,
  MOTION_ZOOM,
  TEXT_FADE_DEFAULT_SEC,
  type Motion,
  type TransitionType,
} from '../api-types.ts';
import type { PlacedClip } from './placements.ts';

/** The export's frame rate (docs/editor.md "The mp4"). */
export const PREVIEW_FPS = 30;

/** The frame a timeline second falls in (a hair of tolerance: 0.1 × 30 must be frame 3). */
export const frameAt = (sec: number): number => Math.floor(sec * PREVIEW_FPS + 1e-6);

/** A second put on the frame grid, as the export rounds clip starts and ends. */
export const frameOf = (sec: number): number => Math.round(sec * PREVIEW_FPS);

/** Which part of the placed picture a frame shows, as shares of the frame: the export's motion window. */
export interface ViewWindow {
  x: number;
  y: number;
  width: number;
  height: number;
}

const WHOLE: ViewWindow = { x: 0, y: 0, width: 1, height: 1 };

/**
 * The motion window of an image clip at `progress` (0 on its first frame, 1 on its last), as
 * workers/export/motion.ts places it: a zoom shows the middle 1/zoom of the frame, zoom 1 → 1.15 (or back); a
 * pan shows 1/1.15 of it and travels 10 % of that width, `pan_left` moving the picture left (the window right).
 */
export function motionWindow(motion: Motion | null | undefined, progress: number): ViewWindow {
  if (!motion || motion === 'none') return WHOLE;
  const p = Math.min(1, Math.max(0, progress));
  if (motion === 'zoom_in' || motion === 'zoom_out') {
    const zoom = motion === 'zoom_in' ? 1 + (MOTION_ZOOM - 1) * p : MOTION_ZOOM - (MOTION_ZOOM - 1) * p;
    const size = 1 / zoom;
    return { x: (1 - size) / 2, y: (1 - size) / 2, width: size, height: size };
  }
  const size = 1 / MOTION_ZOOM;
  const direction = motion === 'pan_left' ? p - 0.5 : 0.5 - p;
  return { x: (1 - size) / 2 + direction * MOTION_PAN * size, y: (1 - size) / 2, width: size, height: size };
}

/** One video-track clip as a frame shows it. */
export interface ClipLayer {
  placed: PlacedClip;
  /** The frame's number within the clip, from 0. */
  frameInClip: number;
  /** Video clips: the second of the source this frame shows (trim + time in the clip × speed). */
  sourceSec: number;
  /** Image clips: the motion window (the whole frame without motion). */
  window: ViewWindow;
}

/** A transition in progress: the next clip coming in over the one before. */
export interface TransitionLayer {
  type: TransitionType;
  incoming: ClipLayer;
  /** 0 on the transition's first frame, towards 1 on its last. */
  done: number;
}

/** A text clip shown on the frame. */
export interface TextLayer {
  placed: PlacedClip;
  /** Its opacity, 0..1, with its fades. */
  alpha: number;
}

/** Everything one frame shows, bottom to top. */
export interface FrameView {
  /** The frame's number on the timeline and its time (the frame's start). */
  frame: number;
  timeSec: number;
  /** The clip shown (the one before, during a transition); null past the end or on an empty track. */
  base: ClipLayer | null;
  transition: TransitionLayer | null;
  /** How black the picture is (the first clip's fade in from black): 0 none, 1 all black. */
  black: number;
  texts: TextLayer[];
}

/** The first and last frame (exclusive) a placed clip covers on the export's grid. */
export const clipFrames = (placed: PlacedClip): { first: number; end: number } => ({
  first: frameOf(placed.startSec),
  end: Math.max(frameOf(placed.startSec) + 1, frameOf(placed.endSec)),
});

function layerOf(placed: PlacedClip, frame: number): ClipLayer {
  const { first, end } = clipFrames(placed);
  const frameInClip = frame - first;
  const clip = placed.clip;
  const speed = clip.speed ?? 1;
  const sourceSec = (clip.trim_start_sec ?? 0) + (frameInClip / PREVIEW_FPS) * speed;
  const frames = end - first;
  const progress = frames > 1 ? frameInClip / (frames - 1) : 0;
  const window = placed.asset?.kind === 'image' ? motionWindow(clip.motion, progress) : WHOLE;
  return { placed, frameInClip, sourceSec, window };
}

/** A text clip's opacity fade: its own, else 0.3 s, never more than half of the clip (docs/editor.md). */
const textFade = (set: number | null, durationSec: number): number =>
  Math.min(set ?? TEXT_FADE_DEFAULT_SEC, durationSec / 2);

/** A text clip's opacity at `timeSec` (0 outside it), as the export's drawtext `alpha`. */
export function textAlpha(placed: PlacedClip, timeSec: number): number {
  if (timeSec < placed.startSec || timeSec >= placed.endSec) return 0;
  const durationSec = placed.endSec - placed.startSec;
  const fadeIn = textFade(placed.clip.fade_in_sec, durationSec);
  const fadeOut = textFade(placed.clip.fade_out_sec, durationSec);
  let alpha = 1;
  if (fadeIn > 0) alpha = Math.min(alpha, (timeSec - placed.startSec) / fadeIn);
  if (fadeOut > 0) alpha = Math.min(alpha, (placed.endSec - timeSec) / fadeOut);
  return Math.min(1, Math.max(0, alpha));
}

/** The video's length on the frame grid: where its video track ends (the export's length), in seconds. */
export function videoLengthSec(placed: readonly PlacedClip[]): number {
  const end = placed
    .filter((one) => one.clip.track === 'video')
    .reduce((last, one) => Math.max(last, clipFrames(one).end), 0);
  return end / PREVIEW_FPS;
}

/** What the frame at `timeSec` shows. `placed` is `placeClips`' answer for the video. */
export function frameView(placed: readonly PlacedClip[], timeSec: number): FrameView {
  const frame = Math.max(0, frameAt(timeSec));
  const frameTime = frame / PREVIEW_FPS;
  const pictures = placed.filter((one) => one.clip.track === 'video');
  const covering = pictures.filter((one) => {
    const { first, end } = clipFrames(one);
    return frame >= first && frame < end;
  });
  let base: ClipLayer | null = null;
  let transition: TransitionLayer | null = null;
  // Pictures are in timeline order; two cover one frame only during a transition (the later one coming in).
  const incoming = covering.length > 1 ? covering[covering.length - 1]! : undefined;
  const before = covering.length > 1 ? covering[covering.length - 2]! : covering[0];
  if (before) base = layerOf(before, frame);
  if (incoming && incoming.clip.transition_in) {
    const first = clipFrames(incoming).first;
    // The overlap as the export counts it: the clip before's rounded end minus this one's rounded start.
    const overlap = Math.max(1, clipFrames(before!).end - first);
    transition = {
      type: incoming.clip.transition_in.type,
      incoming: layerOf(incoming, frame),
      done: (frame - first) / overlap,
    };
  } else if (incoming) base = layerOf(incoming, frame);

  // The first clip's transition fades it in from black over its duration (`fade=t=in`, no overlap).
  let black = 0;
  const opening = pictures[0];
  if (opening && opening.clip.transition_in && base?.placed === opening) {
    const frames = Math.max(1, Math.round(opening.clip.transition_in.duration_sec * PREVIEW_FPS));
    if (base.frameInClip < frames) black = 1 - base.frameInClip / frames;
  }

  const lengthFrames = Math.round(videoLengthSec(placed) * PREVIEW_FPS);
  // Text past the last frame is cut, like sound (docs/editor.md "The mp4").
  const texts =
    frame < lengthFrames
      ? placed
          .filter((one) => one.clip.track === 'text')
          .map((one) => ({ placed: one, alpha: textAlpha(one, frameTime) }))
          .filter((layer) => layer.alpha > 0)
      : [];
  return { frame, timeSec: frameTime, base, transition, black, texts };
}

/** The preview canvas's size for an aspect ratio (`16:9`…): 360 px on the short side, both even, like the
 * export's previews (docs/editor.md "Previews"). */
export function previewSize(aspectRatio: string): { width: number; height: number } {
  const [w, h] = aspectRatio.split(':').map(Number);
  const ratio = w && h && Number.isFinite(w / h) ? w / h : 16 / 9;
  const even = (size: number) => 2 * Math.round(size / 2);
  return ratio >= 1 ? { width: even(360 * ratio), height: 360 } : { width: 360, height: even(360 / ratio) };
}
