import Type, { type Static, type TSchema } from 'typebox';
import {
  ASSET_KINDS,
  ASSET_SOURCES,
  CLIP_VOLUME_MAX,
  CONTEXT_MD_MAX,
  INSTRUCTION_MAX,
  PROJECT_ASPECT_RATIOS,
  PROJECT_DESCRIPTION_MAX,
  PROJECT_NAME_MAX,
  TRACKS,
  TURN_IMAGE_URLS_MAX,
  DEFAULT_PROJECT_NAME,
} from './editor-terms.ts';
import { CLIP_OFFSET_MAX_SEC } from './clip-bounds.ts';
import { DURATION_BOUNDS } from './clip-rules.ts';
import type { FieldRule } from './validate.ts';
import { FreeFormObject, defaulted, literalUnion } from './common.ts';
import { DEFAULT_ASPECT_RATIO } from './vocabulary.ts';
import { ClipAssetIdField, ClipEffectFields, ClipTextFields, TRACK_MESSAGE } from './clip-effect-fields.ts';
import {
  EXPORT_QUALITIES,
  MOTIONS,
  TEXT_BACKGROUNDS,
  TEXT_POSITIONS,
  TEXT_STYLES,
  TRANSITION_TYPES,
} from './timeline-terms.ts';

// Request and answer bodies of the editor (docs/editor.md, Routes). Property order is the order of each
// route's request table, which is the order the checks run in (docs/errors.md, Order of checks); messages
// are docs/errors.md's, word for word.

const ratioMessage = `aspect_ratio must be one of ${PROJECT_ASPECT_RATIOS.join(', ')}`;
const Name = Type.String({
  minLength: 1,
  maxLength: PROJECT_NAME_MAX,
  errorMessage: `name must be 1 to ${PROJECT_NAME_MAX} characters`,
});
const Description = Type.String({
  maxLength: PROJECT_DESCRIPTION_MAX,
  errorMessage: `description must be at most ${PROJECT_DESCRIPTION_MAX} characters`,
});
const Ratio = (options: Record<string, unknown> = {}) =>
  literalUnion(PROJECT_ASPECT_RATIOS, { errorMessage: ratioMessage, ...options });
const Id = (field: string) =>
  Type.String({ minLength: 1, maxLength: 100, errorMessage: `${field} must be a string` });

/** `POST /projects`. */
export const CreateProjectBody = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  aspect_ratio: defaulted(Ratio({ default: DEFAULT_ASPECT_RATIO })),
});
export type CreateProjectRequest = Static<typeof CreateProjectBody>;
export const DEFAULT_NAME = DEFAULT_PROJECT_NAME;

/** `PATCH /projects/<id>` (docs/editor.md, Routes). */
export const PatchProjectBody = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  context_md: Type.Optional(
    Type.String({
      maxLength: CONTEXT_MD_MAX,
      errorMessage: `context_md must be a string of at most ${CONTEXT_MD_MAX} characters`,
    }),
  ),
});
export type PatchProjectRequest = Static<typeof PatchProjectBody>;

/** `POST /projects/<id>/videos` and `PATCH .../videos/<video_id>`. */
export const VideoBody = Type.Object({
  name: Type.Optional(Name),
  aspect_ratio: Type.Optional(Ratio()),
});
export type VideoRequest = Static<typeof VideoBody>;

/** `POST /projects/<id>/instruct` (docs/editor.md, Routes). */
export const InstructBody = Type.Object({
  instruction: Type.Optional(
    Type.String({
      maxLength: INSTRUCTION_MAX,
      errorMessage: {
        maxLength: `instruction too long (max ${INSTRUCTION_MAX} chars)`,
        default: 'instruction is required (non-empty string) unless image_urls is given',
      },
    }),
  ),
  image_urls: defaulted(
    Type.Array(Type.String(), {
      maxItems: TURN_IMAGE_URLS_MAX,
      default: [],
      errorMessage: `image_urls must be an array of at most ${TURN_IMAGE_URLS_MAX} https URLs`,
    }),
  ),
  video_id: Type.Optional(Id('video_id')),
});
export type InstructRequestBody = Static<typeof InstructBody>;

/** Instruct's rules beyond its schema: a non-empty instruction or images; URLs https or our own media. */
export function instructRules(accepts: (url: string) => boolean): FieldRule<InstructRequestBody>[] {
  return [
    {
      field: 'image_urls',
      check: (body) => body.image_urls.every(accepts),
      message: `image_urls must be an array of at most ${TURN_IMAGE_URLS_MAX} https URLs`,
    },
    {
      field: 'image_urls',
      check: (body) => (body.instruction ?? '').trim().length > 0 || body.image_urls.length > 0,
      message: 'instruction is required (non-empty string) unless image_urls is given',
    },
  ];
}

// The upper bounds are body rules (clip-rules.ts): the `duration_sec` one depends on the track.
const clipTiming = {
  start_sec: Type.Optional(
    Type.Number({
      minimum: 0,
      description: `at most ${CLIP_OFFSET_MAX_SEC}`,
      errorMessage: 'start_sec must be a number >= 0',
    }),
  ),
  trim_start_sec: Type.Optional(
    Type.Number({
      minimum: 0,
      description: `at most ${CLIP_OFFSET_MAX_SEC}`,
      errorMessage: 'trim_start_sec must be a number >= 0',
    }),
  ),
  duration_sec: Type.Optional(
    Type.Number({
      exclusiveMinimum: 0,
      description: DURATION_BOUNDS,
      errorMessage: 'duration_sec must be a number > 0',
    }),
  ),
  volume: Type.Optional(
    Type.Number({
      minimum: 0,
      maximum: CLIP_VOLUME_MAX,
      errorMessage: `volume must be a number from 0 to ${CLIP_VOLUME_MAX}`,
    }),
  ),
};
const Idx = Type.Optional(Type.Integer({ minimum: 0, errorMessage: 'idx must be an integer >= 0' }));

/**
 * `POST /projects/<id>/clips`: the request table's order — the first edition's fields, then a text clip's,
 * then transitions, motion, speed and fades (docs/editor.md, `POST /projects/<id>/clips`).
 */
export const AddClipBody = Type.Object({
  video_id: Type.Optional(Id('video_id')),
  track: literalUnion(TRACKS, { errorMessage: TRACK_MESSAGE }),
  asset_id: ClipAssetIdField,
  idx: Idx,
  ...clipTiming,
  ...ClipTextFields,
  ...ClipEffectFields,
});
export type AddClipRequest = Static<typeof AddClipBody>;

/** `PATCH /projects/<id>/clips/<clip_id>`: any field of a clip but its video, track and asset. */
export const PatchClipBody = Type.Object({ idx: Idx, ...clipTiming, ...ClipTextFields, ...ClipEffectFields });
export type PatchClipRequest = Static<typeof PatchClipBody>;

/** `POST /projects/<id>/assets` as JSON: an import by URL. */
export const ImportAssetBody = Type.Object({
  url: Type.String({ minLength: 1, errorMessage: 'url must be a https URL' }),
  name: Type.Optional(
    Type.String({
      maxLength: PROJECT_NAME_MAX,
      errorMessage: `name must be at most ${PROJECT_NAME_MAX} characters`,
    }),
  ),
});
export type ImportAssetRequest = Static<typeof ImportAssetBody>;

export const importAssetRules = (accepts: (url: string) => boolean): FieldRule<ImportAssetRequest>[] => [
  { field: 'url', check: (body) => accepts(body.url), message: 'url must be a https URL' },
];

/** `POST /projects/<id>/export` (docs/editor.md, Routes). */
export const EXPORT_FITS = ['fit', 'fill'] as const;
export const ExportBody = Type.Object({
  video_id: Type.Optional(Id('video_id')),
  fit: Type.Optional(
    literalUnion(EXPORT_FITS, { errorMessage: `fit must be one of ${EXPORT_FITS.join(', ')}` }),
  ),
  /** `final` (default) or `preview`: short side 360 px, the fastest settings (docs/editor.md, Previews). */
  quality: Type.Optional(
    literalUnion(EXPORT_QUALITIES, { errorMessage: `quality must be one of ${EXPORT_QUALITIES.join(', ')}` }),
  ),
});
export type ExportRequest = Static<typeof ExportBody>;

/** `GET /projects/<id>`: `video_id` narrows the clips. */
export const StateQuery = Type.Object({ video_id: Type.Optional(Type.String({ maxLength: 100 })) });

/** `GET .../messages`. */
export const MessagesQuery = Type.Object({
  limit: defaulted(
    Type.Integer({ minimum: 1, maximum: 100, default: 50, errorMessage: 'limit must be 1-100' }),
  ),
  cursor: Type.Optional(Type.String({ maxLength: 200, errorMessage: 'cursor is invalid' })),
});

const idParam = (prefix: string, notFound: string) =>
  Type.String({ pattern: `^${prefix}_[0-9A-Za-z]{1,40}$`, errorMessage: notFound });
export const ProjectParams = Type.Object({ project_id: idParam('vp', 'Project not found') });
export const VideoParams = Type.Object({
  project_id: idParam('vp', 'Project not found'),
  video_id: idParam('vv', 'Video not found'),
});
export const ClipParams = Type.Object({
  project_id: idParam('vp', 'Project not found'),
  clip_id: idParam('vc', 'Clip not found'),
});

// Answers (OpenAPI). Shapes as the views in actors/project-views.ts build them.
export const ProjectSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  aspect_ratio: Type.String(),
  context_md: Type.String(),
  revision: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
export const VideoSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  aspect_ratio: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
});
/**
 * An asset's `metadata` (docs/editor.md, Asset): keys by kind and source, open to more. The pictures' keys are
 * named here (docs/editor.md, Pictures of assets); an asset read before its pictures are made has none of them.
 */
export const AssetMetadataSchema = Type.Unsafe<Record<string, unknown>>(
  Type.Object(
    {
      poster_url: Type.Optional(
        Type.String({ description: 'JPEG, longest side at most 640 px (images, videos)' }),
      ),
      filmstrip_url: Type.Optional(
        Type.String({ description: 'JPEG sprite: one row of filmstrip_frames frames (videos)' }),
      ),
      filmstrip_frames: Type.Optional(Type.Integer({ minimum: 1 })),
      waveform_url: Type.Optional(
        Type.String({ description: 'JSON { peaks_per_second, peaks } (assets with sound)' }),
      ),
      has_sound: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: true },
  ),
);
export const AssetSchema = Type.Object({
  id: Type.String(),
  kind: literalUnion(ASSET_KINDS),
  source: literalUnion(ASSET_SOURCES),
  url: Type.String(),
  metadata: AssetMetadataSchema,
  created_at: Type.String({ format: 'date-time' }),
});
const orNull = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
/** A clip as it reads back: every field, a default where one applies and is unset, null where it does not apply. */
export const ClipSchema = Type.Object({
  id: Type.String(),
  video_id: Type.String(),
  track: literalUnion(TRACKS),
  idx: Type.Integer(),
  asset_id: orNull(Type.String()),
  start_sec: orNull(Type.Number()),
  trim_start_sec: orNull(Type.Number()),
  duration_sec: orNull(Type.Number()),
  volume: orNull(Type.Number()),
  text: orNull(Type.String()),
  style: orNull(literalUnion(TEXT_STYLES)),
  position: orNull(literalUnion(TEXT_POSITIONS)),
  color: orNull(Type.String()),
  background: orNull(literalUnion(TEXT_BACKGROUNDS)),
  transition_in: orNull(Type.Object({ type: literalUnion(TRANSITION_TYPES), duration_sec: Type.Number() })),
  motion: orNull(literalUnion(MOTIONS)),
  speed: orNull(Type.Number()),
  fade_in_sec: orNull(Type.Number()),
  fade_out_sec: orNull(Type.Number()),
});
export const EventSchema = Type.Object({
  type: Type.String(),
  seq: Type.Integer(),
  ts: Type.String(),
  project_id: Type.String(),
  video_id: Type.Union([Type.String(), Type.Null()]),
  turn_id: Type.Union([Type.String(), Type.Null()]),
  data: FreeFormObject,
});
export const StateResponse = Type.Object({
  project: ProjectSchema,
  videos: Type.Array(VideoSchema),
  assets: Type.Array(AssetSchema),
  clips: Type.Array(ClipSchema),
});
export const InstructResponse = Type.Object({
  assistant_text: Type.String(),
  assets_created: Type.Array(AssetSchema),
  clips_created: Type.Array(ClipSchema),
  context_appended: Type.Boolean(),
  aspect_ratio_changed: Type.Union([
    Type.Object({ video_id: Type.String(), from: Type.String(), to: Type.String() }),
    Type.Null(),
  ]),
  media_gen_done: Type.Boolean(),
  agent_events: Type.Array(EventSchema),
});
export const ExportResponse = Type.Object({
  asset_id: Type.String(),
  video_url: Type.String(),
  duration_sec: Type.Number(),
  video_clip_count: Type.Integer(),
  audio_overlay_count: Type.Integer(),
});
export const MessageSchema = Type.Object({
  id: Type.String(),
  role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
  text: Type.String(),
  image_urls: Type.Optional(Type.Array(Type.String())),
  /** An LLM agent's reply: the tokens its turn used. */
  usage: Type.Optional(
    Type.Object({
      prompt_tokens: Type.Integer(),
      completion_tokens: Type.Integer(),
      total_tokens: Type.Integer(),
      completions: Type.Integer(),
    }),
  ),
  turn_id: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
});

/** A project as `GET /projects` lists it. */
export const ProjectSummarySchema = Type.Pick(ProjectSchema, ['id', 'name', 'aspect_ratio', 'updated_at']);
/** `GET /projects`: the user's projects, last changed first. */
export const ProjectListResponse = Type.Object({ projects: Type.Array(ProjectSummarySchema) });
/** `POST /projects` and `PATCH /projects/<id>`. */
export const ProjectResponse = Type.Object({ project: ProjectSchema });
/** `POST .../videos` and `PATCH .../videos/<video_id>`. */
export const VideoResponse = Type.Object({ video: VideoSchema });
/** `GET .../videos/<video_id>/messages`: a page of the thread, oldest first; `next_cursor` null on the last. */
export const MessagesResponse = Type.Object({
  messages: Type.Array(MessageSchema),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});

/** The events WebSocket's query (docs/editor.md, Connecting); `access_token` is taken out before checks. */
export const EventsQuery = Type.Object({
  video_id: Type.Optional(Type.String({ maxLength: 100 })),
  since: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      errorMessage: 'since must be an event seq (an integer ≥ 0)',
    }),
  ),
});
