import Type, { type Static, type TSchema } from 'typebox';
import { literalUnion } from './common.ts';
import { EXPORT_FITS } from './editor.ts';
import { DURATION_BOUNDS } from './clip-rules.ts';
import { CLIP_OFFSET_MAX_SEC } from './clip-bounds.ts';
import { CLIP_VOLUME_MAX, PROJECT_ASPECT_RATIOS, TRACKS } from './editor-terms.ts';
import { VIDEO_DURATIONS_SECONDS, VIDEO_RESOLUTIONS, PROMPT_MAX_LENGTH } from './models-catalog.ts';

// The agent tools (docs/editor.md, The tools): their names are public (operators write prompts against
// them), their parameters are offered to an LLM as JSON Schema, and every call is checked against them
// before it runs.
// The timeline tools are the direct-edit routes' operations (docs/editor.md, Routes).

/** Clip place, timing, volume (docs/editor.md, Clip): shared by `add_clip`, `update_clip` and clip routes. */
export const ClipTimingFields = {
  idx: Type.Optional(Type.Integer({ minimum: 0, description: 'position on the track, from 0' })),
  start_sec: Type.Optional(
    Type.Number({
      minimum: 0,
      description: `audio tracks: start on the timeline, in seconds (at most ${CLIP_OFFSET_MAX_SEC})`,
    }),
  ),
  trim_start_sec: Type.Optional(
    Type.Number({
      minimum: 0,
      description: `seconds skipped at the start (at most ${CLIP_OFFSET_MAX_SEC})`,
    }),
  ),
  duration_sec: Type.Optional(
    Type.Number({ exclusiveMinimum: 0, description: `seconds shown or played (${DURATION_BOUNDS})` }),
  ),
  volume: Type.Optional(
    Type.Number({ minimum: 0, maximum: CLIP_VOLUME_MAX, description: '0..2, 1 = as is' }),
  ),
};

/** Tool parameters admit no other property: nothing the runtime did not check reaches a command. */
const closed = (description: string) => ({ description, additionalProperties: false });

/** The export qualities `export_video` takes: only the final encode today (docs/editor.md). */
export const EXPORT_QUALITIES = ['final'] as const;

export const AGENT_TOOLS = {
  list_assets: Type.Object({}, closed('The library: id, kind, source, prompt, duration')),
  get_timeline: Type.Object(
    { video_id: Type.Optional(Type.String()) },
    closed('The clips of every track with their timing'),
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
    { track: literalUnion(TRACKS), asset_id: Type.String(), ...ClipTimingFields },
    closed('Places an asset on a track (as POST /clips)'),
  ),
  update_clip: Type.Object(
    { clip_id: Type.String(), ...ClipTimingFields },
    closed('Moves, trims or changes the volume of a clip (as PATCH /clips/<id>)'),
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
  export_video: Type.Object(
    {
      fit: Type.Optional(
        literalUnion(EXPORT_FITS, {
          description: "'fit' letterboxes clips of another shape (default), 'fill' crops them",
        }),
      ),
      quality: Type.Optional(
        literalUnion(EXPORT_QUALITIES, { description: "'final' (the default and, for now, the only one)" }),
      ),
    },
    closed(
      'Exports the target video to one mp4 (as POST .../export) and answers its video_url; not a media generation',
    ),
  ),
} satisfies Record<string, TSchema>;

export type AgentToolName = keyof typeof AGENT_TOOLS;
export type AgentToolArgs<Name extends AgentToolName> = Static<(typeof AGENT_TOOLS)[Name]>;
/** The tools that start a media generation: one call of these per turn (docs/editor.md, Agent turns). */
export const MEDIA_TOOLS: readonly AgentToolName[] = ['generate_image', 'generate_video'];
