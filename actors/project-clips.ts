import Type, { type Static } from 'typebox';
import { ClipEffectFields, ClipTextFields } from '../schemas/clip-effect-fields.ts';
import { clipFieldsProblem, type ClipKind } from '../schemas/clip-applies.ts';
import { CLIP_VOLUME_MAX, IMAGE_CLIP_DEFAULT_SEC, type AssetKind } from '../schemas/editor-terms.ts';
import {
  TEXT_COLOR_DEFAULT,
  TEXT_DURATION_DEFAULT_SEC,
  type ClipEffects,
  type TextFields,
} from '../schemas/timeline-terms.ts';
import { AppError } from '../src/platform/core/index.ts';
import type { ClipRecord } from './ports/projects-repository.ts';

// A clip's fields in the project actor's commands, and how a command's fields become a stored clip
// (docs/editor.md, Clip): the second edition's fields are stored only when given, and read back with their
// defaults (project-views.ts), so a clip stored before them reads the same as one stored without them.

/** The timing fields of `add_clip` and `update_clip` (their upper bounds: project-bounds.ts). */
export const ClipTimingCommandFields = {
  start_sec: Type.Optional(Type.Number({ minimum: 0 })),
  trim_start_sec: Type.Optional(Type.Number({ minimum: 0 })),
  duration_sec: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  volume: Type.Optional(Type.Number({ minimum: 0, maximum: CLIP_VOLUME_MAX })),
};

/** The fields a clip command may set beyond its timing: a text clip's, then transitions, motion, speed, fades. */
export const ClipLookCommandFields = { ...ClipTextFields, ...ClipEffectFields };

type LookMessage = Static<ReturnType<typeof Type.Object<typeof ClipLookCommandFields>>>;
type TimingMessage = Static<ReturnType<typeof Type.Object<typeof ClipTimingCommandFields>>>;

/**
 * 400 with the first field of a command that does not suit its clip (clip-applies.ts): `asset_id` required
 * off the text track and absent on it, `text` required on a new text clip, every other field only where it
 * applies.
 */
export function checkClipFields(
  given: LookMessage & TimingMessage & { asset_id?: string | null },
  track: ClipRecord['track'],
  kind: ClipKind | undefined,
  adding: boolean,
): void {
  const problem = clipFieldsProblem(given, track, kind, adding);
  if (problem !== null) throw new AppError('bad_request', problem);
}

/** The second edition's fields a command gives (absent ones stay absent: they read as their defaults). */
function givenLooks(message: LookMessage): ClipEffects & Partial<TextFields> {
  const looks: ClipEffects & Partial<TextFields> = {};
  if (message.text !== undefined) looks.text = message.text;
  if (message.style !== undefined) looks.style = message.style;
  if (message.position !== undefined) looks.position = message.position;
  if (message.color !== undefined) looks.color = message.color;
  if (message.background !== undefined) looks.background = message.background;
  if (message.transition_in !== undefined) {
    // Only its two fields: anything else a client sent along is not stored.
    const transition = message.transition_in;
    looks.transition_in = transition && { type: transition.type, duration_sec: transition.duration_sec };
  }
  if (message.motion !== undefined) looks.motion = message.motion;
  if (message.speed !== undefined) looks.speed = message.speed;
  if (message.fade_in_sec !== undefined) looks.fade_in_sec = message.fade_in_sec;
  if (message.fade_out_sec !== undefined) looks.fade_out_sec = message.fade_out_sec;
  return looks;
}

/** What a new clip is made of besides its command's fields. */
export interface NewClip {
  id: string;
  video_id: string;
  track: ClipRecord['track'];
  /** The asset's id and kind; null for a text clip. */
  asset: { id: string; kind: AssetKind } | null;
  created_at: Date;
}

/**
 * A new clip as stored (its `idx` is set when it is placed). Defaults written down: an image shows 5 s and a
 * text clip 3 s; a text clip's style `title` and colour white, its position and background null (the style's).
 * `start_sec` is kept off the video track only (a text clip's null follows the previous text clip).
 */
export function newClip(base: NewClip, message: LookMessage & TimingMessage): ClipRecord {
  const text = base.asset === null;
  const looks = givenLooks(message);
  const clip: ClipRecord = {
    id: base.id,
    video_id: base.video_id,
    track: base.track,
    idx: 0,
    asset_id: base.asset?.id ?? null,
    start_sec: base.track === 'video' ? null : (message.start_sec ?? null),
    trim_start_sec: message.trim_start_sec ?? 0,
    duration_sec:
      message.duration_sec ??
      (text ? TEXT_DURATION_DEFAULT_SEC : base.asset?.kind === 'image' ? IMAGE_CLIP_DEFAULT_SEC : null),
    volume: message.volume ?? 1,
    created_at: base.created_at,
    ...looks,
  };
  if (text) {
    clip.style = looks.style ?? 'title';
    clip.position = looks.position ?? null;
    clip.color = looks.color ?? TEXT_COLOR_DEFAULT;
    clip.background = looks.background ?? null;
  }
  return clip;
}

/** `clip` with a command's changes (`start_sec` stays null on the video track). */
export function changedClip(clip: ClipRecord, message: LookMessage & TimingMessage): ClipRecord {
  return {
    ...clip,
    ...(message.start_sec !== undefined && clip.track !== 'video' ? { start_sec: message.start_sec } : {}),
    ...(message.trim_start_sec !== undefined ? { trim_start_sec: message.trim_start_sec } : {}),
    ...(message.duration_sec !== undefined ? { duration_sec: message.duration_sec } : {}),
    ...(message.volume !== undefined ? { volume: message.volume } : {}),
    ...givenLooks(message),
  };
}
