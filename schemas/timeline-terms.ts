// The timeline's second edition (docs/editor.md, Text, transitions, motion, speed, fades): the words and
// numbers of text clips, transitions, motion, speed, fades and previews. Pure constants and types, no I/O;
// shared by the request schemas, the project actor, the agents and the export.

/** Text clip styles: `title` large and centred, `lower_third` medium bottom left on a box, `caption` small. */
export const TEXT_STYLES = ['title', 'lower_third', 'caption'] as const;
export type TextStyle = (typeof TEXT_STYLES)[number];

export const TEXT_POSITIONS = ['top', 'center', 'bottom'] as const;
export type TextPosition = (typeof TEXT_POSITIONS)[number];

export const TEXT_BACKGROUNDS = ['none', 'box'] as const;
export type TextBackground = (typeof TEXT_BACKGROUNDS)[number];

/** What each style looks like when the clip does not say: size as a share of the frame's short side. */
export const TEXT_STYLE_DEFAULTS: Readonly<
  Record<
    TextStyle,
    { position: TextPosition; align: 'center' | 'left'; background: TextBackground; size: number }
  >
> = {
  title: { position: 'center', align: 'center', background: 'none', size: 0.09 },
  lower_third: { position: 'bottom', align: 'left', background: 'box', size: 0.06 },
  caption: { position: 'bottom', align: 'center', background: 'box', size: 0.045 },
};

export const TEXT_MIN_CHARS = 1;
export const TEXT_MAX_CHARS = 500;
export const TEXT_COLOR_DEFAULT = '#FFFFFF';
export const TEXT_COLOR_PATTERN = '^#[0-9A-Fa-f]{6}$';
export const TEXT_DURATION_DEFAULT_SEC = 3;
export const TEXT_DURATION_MIN_SEC = 0.5;
export const TEXT_DURATION_MAX_SEC = 60;
/** A text clip's opacity fades when it does not set them. */
export const TEXT_FADE_DEFAULT_SEC = 0.3;

/** How a video-track clip comes in over the end of the one before it. */
export const TRANSITION_TYPES = [
  'fade',
  'fadeblack',
  'fadewhite',
  'wipeleft',
  'wiperight',
  'slideleft',
  'slideright',
  'circleopen',
] as const;
export type TransitionType = (typeof TRANSITION_TYPES)[number];
export const TRANSITION_MIN_SEC = 0.1;
export const TRANSITION_MAX_SEC = 2;
/** The agents' `set_transition` when it names no duration. */
export const TRANSITION_DEFAULT_SEC = 1;

export interface TransitionIn {
  type: TransitionType;
  duration_sec: number;
}

/** Motion of an image clip: a 1.0 → 1.15 zoom or a pan of 10 % of the width over the clip. */
export const MOTIONS = ['none', 'zoom_in', 'zoom_out', 'pan_left', 'pan_right'] as const;
export type Motion = (typeof MOTIONS)[number];
export const MOTION_ZOOM = 1.15;
export const MOTION_PAN = 0.1;

export const SPEED_MIN = 0.25;
export const SPEED_MAX = 4;
export const FADE_MAX_SEC = 10;
/** The ramp the export puts wherever sound starts or stops at a cut without a fade (5–20 ms: no click). */
export const DECLICK_SEC = 0.01;

/** Loudness of the programme: normalised in two passes to this, never raising near silence. */
export const LOUDNESS_TARGET_LUFS = -14;
export const LOUDNESS_TRUE_PEAK_DBTP = -1;
export const LOUDNESS_SILENCE_LUFS = -50;

/** `final` as before; `preview` short side 360 px with the fastest encoder settings. */
export const EXPORT_QUALITIES = ['final', 'preview'] as const;
export type ExportQuality = (typeof EXPORT_QUALITIES)[number];
export const PREVIEW_SHORT_SIDE = 360;

/** The fields of a text clip (stored on the clip; a text clip has no asset). */
export interface TextFields {
  text: string;
  style: TextStyle;
  /** null: the style's. */
  position: TextPosition | null;
  color: string;
  /** null: the style's. */
  background: TextBackground | null;
}

/** The second edition's fields of any clip, as stored; absent on clips stored before it (read as defaults). */
export interface ClipEffects {
  transition_in?: TransitionIn | null;
  motion?: Motion;
  speed?: number;
  fade_in_sec?: number;
  fade_out_sec?: number;
}
