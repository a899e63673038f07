import {
  MOTIONS,
  TEXT_BACKGROUNDS,
  TEXT_POSITIONS,
  TEXT_STYLES,
  TRANSITION_TYPES,
  type Motion,
  type TextBackground,
  type TextPosition,
  type TextStyle,
  type TransitionType,
} from '../api-types.ts';

// The words the timeline's selects show for the clip fields of docs/editor.md (Text, transitions, motion,
// speed, fades): `[value, shown text]`, the values the API takes. An empty value means "the style's" (sent as
// null) or no transition (a cut).

const STYLE_WORDS: Record<TextStyle, string> = {
  title: 'title',
  lower_third: 'lower third',
  caption: 'caption',
};
const POSITION_WORDS: Record<TextPosition, string> = { top: 'top', center: 'centre', bottom: 'bottom' };
const BACKGROUND_WORDS: Record<TextBackground, string> = { none: 'none', box: 'box' };
const TRANSITION_WORDS: Record<TransitionType, string> = {
  fade: 'fade (cross-dissolve)',
  fadeblack: 'fade through black',
  fadewhite: 'fade through white',
  wipeleft: 'wipe left',
  wiperight: 'wipe right',
  slideleft: 'slide left',
  slideright: 'slide right',
  circleopen: 'circle open',
};
const MOTION_WORDS: Record<Motion, string> = {
  none: 'none',
  zoom_in: 'zoom in',
  zoom_out: 'zoom out',
  pan_left: 'pan left',
  pan_right: 'pan right',
};

export const STYLE_OPTIONS = TEXT_STYLES.map((s) => [s, STYLE_WORDS[s]] as const);
export const POSITION_OPTIONS = [
  ['', "the style's"] as const,
  ...TEXT_POSITIONS.map((p) => [p, POSITION_WORDS[p]] as const),
];
export const BACKGROUND_OPTIONS = [
  ['', "the style's"] as const,
  ...TEXT_BACKGROUNDS.map((b) => [b, BACKGROUND_WORDS[b]] as const),
];
export const TRANSITION_OPTIONS = [
  ['', 'none (cut)'] as const,
  ...TRANSITION_TYPES.map((t) => [t, TRANSITION_WORDS[t]] as const),
];
export const MOTION_OPTIONS = MOTIONS.map((m) => [m, MOTION_WORDS[m]] as const);
