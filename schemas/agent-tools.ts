import Type, { type Static, type TSchema } from 'typebox';
import { literalUnion } from './common.ts';
import { AddClipBody, EXPORT_FITS } from './editor.ts';
import { DURATION_BOUNDS } from './clip-rules.ts';
import { CLIP_OFFSET_MAX_SEC } from './clip-bounds.ts';
import {
  ClipAssetIdField,
  ClipEffectFields,
  ClipTextFields,
  TEXT_DURATION_BOUNDS,
  TEXT_MESSAGE,
  TRACK_MESSAGE,
  TRANSITION_DURATION_MESSAGE,
  TRANSITION_TYPE_MESSAGE,
} from './clip-effect-fields.ts';
import { CLIP_VOLUME_MAX, PROJECT_ASPECT_RATIOS, TRACKS } from './editor-terms.ts';
import {
  EXPORT_QUALITIES,
  TEXT_MAX_CHARS,
  TEXT_MIN_CHARS,
  TRANSITION_DEFAULT_SEC,
  TRANSITION_MAX_SEC,
  TRANSITION_MIN_SEC,
  TRANSITION_TYPES,
} from './timeline-terms.ts';
import { VIDEO_DURATIONS_SECONDS, VIDEO_RESOLUTIONS, PROMPT_MAX_LENGTH } from './models-catalog.ts';

// The agent tools (docs/editor.md, The tools): their names are public (operators write prompts against
// them), their parameters are offered to an LLM as JSON Schema, and every call is checked against them
// before it runs. The timeline tools are the direct-edit routes' operations (docs/editor.md, Routes): their
// fields are the routes' schemas, with the routes' messages, described for a model.

/** A route's field schema with a description written for the agents (its checks and message kept). */
const describedAs = <T extends TSchema>(schema: T, description: string): T =>
  ({ ...schema, description }) as T;

const clipBody = AddClipBody.properties;

/** Clip place, timing, volume (docs/editor.md, Clip): shared by `add_clip` and `update_clip`. */
export const ClipTimingFields = {
  idx: Type.Optional(describedAs(clipBody.idx, 'position on the track, from 0')),
  start_sec: Type.Optional(
    describedAs(
      clipBody.start_sec,
      `audio and text tracks: start on the timeline, in seconds (at most ${CLIP_OFFSET_MAX_SEC}); without it the clip follows the previous clip of its track`,
    ),
  ),
  trim_start_sec: Type.Optional(
    describedAs(clipBody.trim_start_sec, `seconds skipped at the start (at most ${CLIP_OFFSET_MAX_SEC})`),
  ),
  duration_sec: Type.Optional(
    describedAs(clipBody.duration_sec, `seconds on the timeline (${DURATION_BOUNDS})`),
  ),
  volume: Type.Optional(
    describedAs(clipBody.volume, `0..${CLIP_VOLUME_MAX}, 1 = as is (clips with an asset)`),
  ),
};

/** Tool parameters admit no other property: nothing the runtime did not check reaches a command. */
const closed = (description: string) => ({ description, additionalProperties: false });

/** What `set_transition` takes as `type`: a transition, or `none` to remove it. */
export const SET_TRANSITION_TYPES = ['none', ...TRANSITION_TYPES] as const;

export const AGENT_TOOLS = {
  list_assets: Type.Object({}, closed('The library: id, kind, source, prompt, duration')),
  get_timeline: Type.Object(
    { video_id: Type.Optional(Type.String()) },
    closed('The clips of every track (video, voice, sfx, music, text) with their timing and effects'),
  ),
  generate_image: Type.Object(
    {
      prompt: Type.String({ minLength: 1, maxLength: PROMPT_MAX_LENGTH }),
      aspect_ratio: Type.Optional(literalUnion(PROJECT_ASPECT_RATIOS)),
      reference_asset_ids: Type.Optional(Type.Array(Type.String(), { maxItems: 9 })),
    },
    closed('One image job (50 credits); waits for it and adds the image to the library'),
  ),
  generate_video: Type.Object(
    {
      prompt: Type.String({ minLength: 1, maxLength: PROMPT_MAX_LENGTH }),
      duration_seconds: Type.Optional(literalUnion(VIDEO_DURATIONS_SECONDS)),
      resolution: Type.Optional(literalUnion(VIDEO_RESOLUTIONS)),
      fast: Type.Optional(Type.Boolean()),
      image_asset_id: Type.Optional(Type.String()),
      generate_audio: Type.Optional(Type.Boolean()),
    },
    closed('One video job (spec prices); waits for it and adds the video to the library'),
  ),
  add_clip: Type.Object(
    {
      track: literalUnion(TRACKS, { errorMessage: TRACK_MESSAGE }),
      asset_id: ClipAssetIdField,
      ...ClipTimingFields,
      ...ClipTextFields,
      ...ClipEffectFields,
    },
    closed(
      'Places an asset on a track, or a text clip on the text track (as POST /clips); each field only where it applies',
    ),
  ),
  update_clip: Type.Object(
    { clip_id: Type.String(), ...ClipTimingFields, ...ClipTextFields, ...ClipEffectFields },
    closed(
      'Changes a clip (as PATCH /clips/<id>): moves, trims, volume, text, transition_in (null removes), motion, speed, fades',
    ),
  ),
  remove_clip: Type.Object(
    { clip_id: Type.String() },
    closed('Removes a clip; the rest of its track closes up (as DELETE /clips/<id>)'),
  ),
  append_context: Type.Object(
    { text: Type.String({ minLength: 1 }) },
    closed('Appends Markdown to the project context'),
  ),
  set_aspect_ratio: Type.Object(
    { aspect_ratio: literalUnion(PROJECT_ASPECT_RATIOS) },
    closed("Changes the target video's aspect ratio"),
  ),
  add_text: Type.Object(
    {
      text: Type.String({
        minLength: TEXT_MIN_CHARS,
        maxLength: TEXT_MAX_CHARS,
        errorMessage: TEXT_MESSAGE,
        description: `the words shown, ${TEXT_MIN_CHARS} to ${TEXT_MAX_CHARS} characters (line breaks allowed)`,
      }),
      style: ClipTextFields.style,
      position: ClipTextFields.position,
      color: ClipTextFields.color,
      background: ClipTextFields.background,
      start_sec: Type.Optional(
        describedAs(
          clipBody.start_sec,
          'when it appears on the timeline, in seconds (default: right after the previous text clip)',
        ),
      ),
      duration_sec: Type.Optional(
        describedAs(clipBody.duration_sec, `how long it shows, in seconds (${TEXT_DURATION_BOUNDS})`),
      ),
      fade_in_sec: ClipEffectFields.fade_in_sec,
      fade_out_sec: ClipEffectFields.fade_out_sec,
    },
    closed(
      'Adds a text clip (a title, lower third or caption) drawn over the picture on the text track; it needs no asset',
    ),
  ),
  set_transition: Type.Object(
    {
      clip_id: Type.String({
        minLength: 1,
        description:
          'a clip of the video track (its transition_in: how it comes in over the end of the clip before), or "all": every cut (each video-track clip after the first)',
      }),
      type: literalUnion(SET_TRANSITION_TYPES, {
        errorMessage: `${TRANSITION_TYPE_MESSAGE}, or none`,
        description:
          'fade (cross-dissolve), fadeblack, fadewhite, wipeleft, wiperight, slideleft, slideright, circleopen; none removes the transition (a hard cut)',
      }),
      duration_sec: Type.Optional(
        Type.Number({
          minimum: TRANSITION_MIN_SEC,
          maximum: TRANSITION_MAX_SEC,
          errorMessage: TRANSITION_DURATION_MESSAGE,
          description: `${TRANSITION_MIN_SEC} to ${TRANSITION_MAX_SEC} s (default ${TRANSITION_DEFAULT_SEC}), at most half of each clip it joins; every transition shortens the video by its duration`,
        }),
      ),
    },
    closed('Sets or removes the transition into one video-track clip, or on every cut at once'),
  ),
  export_video: Type.Object(
    {
      fit: Type.Optional(
        literalUnion(EXPORT_FITS, {
          errorMessage: `fit must be one of ${EXPORT_FITS.join(', ')}`,
          description: "'fit' letterboxes clips of another shape (default), 'fill' crops them",
        }),
      ),
      quality: Type.Optional(
        literalUnion(EXPORT_QUALITIES, {
          errorMessage: `quality must be one of ${EXPORT_QUALITIES.join(', ')}`,
          description:
            "'final' (the default) or 'preview' (360p, encoded fast: to check a change in seconds)",
        }),
      ),
    },
    closed(
      'Exports the target video to one mp4 (as POST .../export) and answers its video_url; not a media generation, no credits beyond the turn',
    ),
  ),
} satisfies Record<string, TSchema>;

export type AgentToolName = keyof typeof AGENT_TOOLS;
export type AgentToolArgs<Name extends AgentToolName> = Static<(typeof AGENT_TOOLS)[Name]>;
/** The tools that start a media generation: one call of these per turn (docs/editor.md, Agent turns). */
export const MEDIA_TOOLS: readonly AgentToolName[] = ['generate_image', 'generate_video'];
