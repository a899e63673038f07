import Type, { type Static } from 'typebox';
import {
  IMAGE_ASPECT_RATIOS,
  IMAGE_REFERENCE_URLS_MAX,
  IMAGES_PER_REQUEST_MAX,
  PROMPT_MAX_LENGTH,
  VIDEO_ASPECT_RATIOS,
  VIDEO_DURATIONS_SECONDS,
  VIDEO_RESOLUTIONS,
} from './models-catalog.ts';
import type { FieldRule } from './validate.ts';
import { defaulted, literalUnion } from './common.ts';
import { JOB_STATUSES } from './vocabulary.ts';

// Request bodies of the generate routes (docs/api.md, Routes). Property order is their request tables' order,
// which is also the order the checks run in (docs/errors.md, Order of checks); every message is the one
// docs/errors.md gives, word for word.
// Whether a URL is https (or our own media, any scheme) needs the service's base URL: the rules below take that
// check as a function and run at their field's place in the order.

const Prompt = Type.String({
  minLength: 1,
  maxLength: PROMPT_MAX_LENGTH,
  description: `1 to ${PROMPT_MAX_LENGTH} characters`,
  errorMessage: {
    maxLength: `prompt too long (max ${PROMPT_MAX_LENGTH} chars)`,
    default: 'prompt is required (non-empty string)',
  },
});

const Seed = Type.Integer({ description: 'Random when omitted', errorMessage: 'seed must be an integer' });

const boolean = (name: string, defaultValue: boolean, description: string) =>
  defaulted(Type.Boolean({ default: defaultValue, description, errorMessage: `${name} must be a boolean` }));

/** `POST /api/v1/video/vidmodel-2/generate` body. */
export const VideoGenerateBody = Type.Object({
  prompt: Prompt,
  image_url: Type.Optional(
    Type.String({
      description: 'https URL of a still image: runs image-to-video (not with `fast`)',
      errorMessage: 'image_url must be a https URL',
    }),
  ),
  fast: boolean('fast', false, 'Selects the fast variant (text-to-video only)'),
  duration_seconds: defaulted(
    literalUnion(VIDEO_DURATIONS_SECONDS, {
      default: 5,
      errorMessage: `duration_seconds must be one of ${VIDEO_DURATIONS_SECONDS.join(', ')}`,
    }),
  ),
  aspect_ratio: defaulted(
    literalUnion(VIDEO_ASPECT_RATIOS, {
      default: '16:9',
      errorMessage: `aspect_ratio must be one of ${VIDEO_ASPECT_RATIOS.join(', ')}`,
    }),
  ),
  resolution: defaulted(
    literalUnion(VIDEO_RESOLUTIONS, {
      default: '720p',
      errorMessage: `resolution must be one of ${VIDEO_RESOLUTIONS.join(', ')}`,
    }),
  ),
  generate_audio: boolean('generate_audio', true, 'Native sound effects and ambient audio'),
  seed: Type.Optional(Seed),
});
export type VideoGenerateRequest = Static<typeof VideoGenerateBody>;

/** Is this an image URL the service accepts: https, or the service's own media (any scheme)? */
export type ImageUrlAcceptance = (url: string) => boolean;

/** The video body's rules beyond its schema, at their fields' places (docs/errors.md, Order of checks). */
export function videoGenerateRules(accepts: ImageUrlAcceptance): FieldRule<VideoGenerateRequest>[] {
  return [
    {
      field: 'image_url',
      check: (body) => body.image_url === undefined || accepts(body.image_url),
      message: 'image_url must be a https URL',
    },
    {
      field: 'fast',
      check: (body) => !(body.fast && body.image_url !== undefined),
      message: 'fast mode supports text-to-video only (no image_url)',
    },
  ];
}

/** `POST /api/v1/image/nano-banana/generate` body. */
export const ImageGenerateBody = Type.Object({
  prompt: Prompt,
  image_urls: defaulted(
    Type.Array(Type.String(), {
      maxItems: IMAGE_REFERENCE_URLS_MAX,
      default: [],
      description: `0 or 1 to ${IMAGE_REFERENCE_URLS_MAX} https URLs; a non-empty list runs the edit mode`,
      errorMessage: {
        items: 'image_urls items must be https URLs',
        default: `image_urls must be an array of 1 to ${IMAGE_REFERENCE_URLS_MAX} https URLs`,
      },
    }),
  ),
  num_images: defaulted(
    Type.Integer({
      minimum: 1,
      maximum: IMAGES_PER_REQUEST_MAX,
      default: 1,
      errorMessage: `num_images must be 1-${IMAGES_PER_REQUEST_MAX}`,
    }),
  ),
  aspect_ratio: defaulted(
    literalUnion(IMAGE_ASPECT_RATIOS, {
      default: '1:1',
      errorMessage: `aspect_ratio must be one of ${IMAGE_ASPECT_RATIOS.join(', ')}`,
    }),
  ),
  seed: Type.Optional(Seed),
});
export type ImageGenerateRequest = Static<typeof ImageGenerateBody>;

/** The image body's rules beyond its schema, at their fields' places (docs/errors.md, Order of checks). */
export function imageGenerateRules(accepts: ImageUrlAcceptance): FieldRule<ImageGenerateRequest>[] {
  return [
    {
      field: 'image_urls',
      check: (body) => body.image_urls.every(accepts),
      message: 'image_urls items must be https URLs',
    },
  ];
}

const jobStatuses = (options: Record<string, unknown> = {}) => literalUnion(JOB_STATUSES, options);
const JobStatus = jobStatuses();

/** The 202 answer of both submit routes (docs/api.md, Routes): `model` is the model id here. */
export const SubmitResponse = Type.Object({
  job_id: Type.String(),
  status: Type.Literal('processing'),
  model: Type.String({ description: 'The model id, e.g. vidmodel-2.0' }),
  credits_consumed: Type.Integer(),
  credits_remaining: Type.Integer(),
  poll_url: Type.String({ description: '/api/v1/jobs/<job_id>' }),
});

/** The 402 answer: what the request costs and what is left (nothing was charged). */
export const InsufficientCreditsResponse = Type.Object({
  error: Type.String(),
  credits_required: Type.Integer(),
  credits_remaining: Type.Integer(),
});

/** A job as read back (docs/api.md, The Job object): every field in every state. */
export const JobSchema = Type.Object({
  job_id: Type.String(),
  status: JobStatus,
  model: Type.String({ description: 'The model display name, e.g. VidModel 2.0' }),
  type: Type.Union([Type.Literal('video'), Type.Literal('image')]),
  credits_consumed: Type.Integer(),
  refunded_credits: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  completed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  result: Type.Union([
    Type.Object({ video: Type.String() }),
    Type.Object({ images: Type.Array(Type.String()) }),
    Type.Null(),
  ]),
  error: Type.Union([Type.String(), Type.Null()]),
});
export type JobView = Static<typeof JobSchema>;

/** `DELETE /api/v1/jobs/<job_id>` answer. */
export const CancelResponse = Type.Object({
  job_id: Type.String(),
  status: Type.Literal('cancelled'),
  refunded_credits: Type.Integer(),
});

/** `GET /api/v1/jobs` query (docs/api.md, GET /api/v1/jobs). */
export const JobListQuery = Type.Object({
  limit: defaulted(
    Type.Integer({ minimum: 1, maximum: 100, default: 20, errorMessage: 'limit must be 1-100' }),
  ),
  status: Type.Optional(
    jobStatuses({ errorMessage: 'status must be one of processing, completed, failed, cancelled' }),
  ),
  cursor: Type.Optional(Type.String({ maxLength: 200, errorMessage: 'cursor is invalid' })),
});

/** `GET /api/v1/jobs` answer. */
export const JobListResponse = Type.Object({
  jobs: Type.Array(JobSchema),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});

/** Path parameters of the job routes (an id that cannot be a job's is not found). */
export const JobParams = Type.Object({
  job_id: Type.String({ minLength: 1, maxLength: 100, errorMessage: 'Job not found' }),
});
