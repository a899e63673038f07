import { randomInt } from 'node:crypto';
import type { ImageGenerateRequest, VideoGenerateRequest } from '../../schemas/jobs.ts';
import { MODEL_IDS, imageCost, videoCost } from '../../schemas/models-catalog.ts';
import type { InboundImages } from './inbound-images.ts';
import type { JobRequest } from './job-submission.ts';

/** Requests without a seed get one drawn below this; the generation records it either way. */
const SEED_MAX = 2 ** 31 - 1;

/**
 * A video body (validated by its schema and rules, schemas/jobs.ts) as a job request: the model and price
 * `fast` selects, the capability its fields select, and its `image_url` resolved into our store.
 */
export function videoRequest(body: VideoGenerateRequest, inbound: InboundImages): JobRequest {
  return {
    model: body.fast ? MODEL_IDS.videoFast : MODEL_IDS.video,
    type: 'video',
    cost: videoCost({
      fast: body.fast,
      resolution: body.resolution,
      durationSeconds: body.duration_seconds,
      generateAudio: body.generate_audio,
    }),
    buildGeneration: async () => ({
      capability: body.fast ? 'fast-text-to-video' : body.image_url ? 'image-to-video' : 'text-to-video',
      prompt: body.prompt,
      duration_seconds: body.duration_seconds,
      aspect_ratio: body.aspect_ratio,
      resolution: body.resolution,
      generate_audio: body.generate_audio,
      seed: body.seed ?? randomInt(SEED_MAX),
      ...(body.image_url ? { image: await inbound.resolve(body.image_url, 'image_url') } : {}),
    }),
  };
}

/** An image body (validated, schemas/jobs.ts) as a job request: text-to-image, or an edit of its `image_urls`. */
export function imageRequest(body: ImageGenerateRequest, inbound: InboundImages): JobRequest {
  return {
    model: MODEL_IDS.image,
    type: 'image',
    cost: imageCost(body.num_images),
    buildGeneration: async () => ({
      capability: body.image_urls.length > 0 ? 'image-edit' : 'text-to-image',
      prompt: body.prompt,
      num_images: body.num_images,
      aspect_ratio: body.aspect_ratio,
      seed: body.seed ?? randomInt(SEED_MAX),
      images: await inbound.resolveAll(body.image_urls, 'image_urls'),
    }),
  };
}
