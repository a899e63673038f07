import Type from 'typebox';
import {
  FADE_MAX_SEC,
  MOTIONS,
  SPEED_MAX,
  SPEED_MIN,
  TEXT_BACKGROUNDS,
  TEXT_COLOR_DEFAULT,
  TEXT_COLOR_PATTERN,
  TEXT_DURATION_DEFAULT_SEC,
  TEXT_DURATION_MAX_SEC,
  TEXT_DURATION_MIN_SEC,
  TEXT_FADE_DEFAULT_SEC,
  TEXT_MAX_CHARS,
  TEXT_MIN_CHARS,
  TEXT_POSITIONS,
  TEXT_STYLES,
  TRANSITION_MAX_SEC,
  TRANSITION_MIN_SEC,
  TRANSITION_TYPES,
  type Motion,
  type TextBackground,
  type TextPosition,
  type TextStyle,
  type TransitionIn,
  type TransitionType,
} from './timeline-terms.ts';
import { TRACKS } from './editor-terms.ts';
import { literalUnion } from './common.ts';
import { ASSET_ID_REQUIRED_MESSAGE, TEXT_MESSAGE } from './clip-applies.ts';

export { ASSET_ID_REQUIRED_MESSAGE, TEXT_MESSAGE };

// The second edition's clip fields (docs/editor.md, Text, transitions, motion, speed, fades) as request
// schemas, each with its validation message word for word: shared by `POST`/`PATCH .../clips` and the agents'
// `add_clip` / `update_clip`. Which clip a field applies to is clip-applies.ts; the rules that need the clip
// (applicability, the text clip's duration) are clip-rules.ts.

/** The answer to a `track` that is not one of the five. */
export const TRACK_MESSAGE = `track must be one of ${TRACKS.join(', ')}`;
export const STYLE_MESSAGE = `style must be one of ${TEXT_STYLES.join(', ')}`;
export const POSITION_MESSAGE = `position must be one of ${TEXT_POSITIONS.join(', ')}`;
export const COLOR_MESSAGE = 'color must be a #RRGGBB colour';
export const BACKGROUND_MESSAGE = `background must be one of ${TEXT_BACKGROUNDS.join(', ')}`;
export const TRANSITION_MESSAGE = 'transition_in must be an object { type, duration_sec } or null';
export const TRANSITION_TYPE_MESSAGE = `transition_in.type must be one of ${TRANSITION_TYPES.join(', ')}`;
export const TRANSITION_DURATION_MESSAGE = `transition_in.duration_sec must be a number from ${TRANSITION_MIN_SEC} to ${TRANSITION_MAX_SEC}`;
export const TRANSITION_TOO_LONG_MESSAGE = 'transition_in is longer than half of a clip it joins';
export const MOTION_MESSAGE = `motion must be one of ${MOTIONS.join(', ')}`;
export const SPEED_MESSAGE = `speed must be a number from ${SPEED_MIN} to ${SPEED_MAX}`;
export const fadeMessage = (field: 'fade_in_sec' | 'fade_out_sec') =>
  `${field} must be a number from 0 to ${FADE_MAX_SEC}`;
/** A text clip's `duration_sec` outside 0.5–60 (0 and below keep every clip's `> 0` message). */
export const TEXT_DURATION_MIN_MESSAGE = `duration_sec must be at least ${TEXT_DURATION_MIN_SEC}`;

/** `asset_id`: required on the `video`, `voice`, `sfx` and `music` tracks, absent (or null) on `text`. */
export const ClipAssetIdField = Type.Optional(
  Type.Unsafe<string | null>(
    Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()], {
      errorMessage: ASSET_ID_REQUIRED_MESSAGE,
      description: 'the library asset shown or played; required except on the text track (no asset there)',
    }),
  ),
);

/** The fields of a text clip (`text` track only). */
export const ClipTextFields = {
  text: Type.Optional(
    Type.String({
      minLength: TEXT_MIN_CHARS,
      maxLength: TEXT_MAX_CHARS,
      errorMessage: TEXT_MESSAGE,
      description: `text clips: the words shown, ${TEXT_MIN_CHARS} to ${TEXT_MAX_CHARS} characters (line breaks allowed); required there`,
    }),
  ),
  style: Type.Optional(
    literalUnion<TextStyle>(TEXT_STYLES, {
      errorMessage: STYLE_MESSAGE,
      description:
        'text clips: title (large, centred; the default), lower_third (medium, bottom left, on a box), caption (small, bottom centre, on a box)',
    }),
  ),
  position: Type.Optional(
    Type.Unsafe<TextPosition | null>(
      Type.Union([...TEXT_POSITIONS.map((value) => Type.Literal(value)), Type.Null()], {
        errorMessage: POSITION_MESSAGE,
        description: "text clips: top, center or bottom (default and null: the style's)",
      }),
    ),
  ),
  color: Type.Optional(
    Type.String({
      pattern: TEXT_COLOR_PATTERN,
      errorMessage: COLOR_MESSAGE,
      description: `text clips: the text's colour, #RRGGBB (default ${TEXT_COLOR_DEFAULT})`,
    }),
  ),
  background: Type.Optional(
    Type.Unsafe<TextBackground | null>(
      Type.Union([...TEXT_BACKGROUNDS.map((value) => Type.Literal(value)), Type.Null()], {
        errorMessage: BACKGROUND_MESSAGE,
        description: "text clips: none or box behind the text (default and null: the style's)",
      }),
    ),
  ),
};

/** `transition_in`'s value: how a video-track clip comes in over the end of the one before it. */
export const TransitionInSchema = Type.Object(
  {
    type: literalUnion<TransitionType>(TRANSITION_TYPES, { errorMessage: TRANSITION_TYPE_MESSAGE }),
    duration_sec: Type.Number({
      minimum: TRANSITION_MIN_SEC,
      maximum: TRANSITION_MAX_SEC,
      errorMessage: TRANSITION_DURATION_MESSAGE,
    }),
  },
  { description: 'type fade (cross-dissolve), fadeblack, fadewhite, wipes, slides or circleopen' },
);

/** Transitions, motion, speed and fades (each only on the clips clip-applies.ts names). */
export const ClipEffectFields = {
  transition_in: Type.Optional(
    Type.Unsafe<TransitionIn | null>(
      Type.Union([TransitionInSchema, Type.Null()], {
        errorMessage: TRANSITION_MESSAGE,
        description: `video track: { type, duration_sec ${TRANSITION_MIN_SEC}–${TRANSITION_MAX_SEC} } over the end of the clip before (at most half of either clip; it shortens the video by its duration), null for a cut; on the first clip a fade in from black`,
      }),
    ),
  ),
  motion: Type.Optional(
    literalUnion<Motion>(MOTIONS, {
      errorMessage: MOTION_MESSAGE,
      description: 'image clips of the video track: none (default), zoom_in, zoom_out, pan_left, pan_right',
    }),
  ),
  speed: Type.Optional(
    Type.Number({
      minimum: SPEED_MIN,
      maximum: SPEED_MAX,
      errorMessage: SPEED_MESSAGE,
      description: `video clips of the video track: ${SPEED_MIN} to ${SPEED_MAX} (default 1); duration_sec stays timeline time`,
    }),
  ),
  fade_in_sec: Type.Optional(
    Type.Number({
      minimum: 0,
      maximum: FADE_MAX_SEC,
      errorMessage: fadeMessage('fade_in_sec'),
      description: `clips with sound, and text clips (opacity): 0 to ${FADE_MAX_SEC} s (default 0; text ${TEXT_FADE_DEFAULT_SEC})`,
    }),
  ),
  fade_out_sec: Type.Optional(
    Type.Number({
      minimum: 0,
      maximum: FADE_MAX_SEC,
      errorMessage: fadeMessage('fade_out_sec'),
      description: `clips with sound, and text clips (opacity): 0 to ${FADE_MAX_SEC} s (default 0; text ${TEXT_FADE_DEFAULT_SEC})`,
    }),
  ),
};

/** A text clip's `duration_sec` in words (schema descriptions). */
export const TEXT_DURATION_BOUNDS = `text clips ${TEXT_DURATION_MIN_SEC} to ${TEXT_DURATION_MAX_SEC} (default ${TEXT_DURATION_DEFAULT_SEC})`;
