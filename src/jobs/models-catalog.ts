import type { CreditsImage, CreditsVideo, Model, ModelParam } from '../../schemas/models.ts';
import {
  IMAGES_PER_REQUEST_MAX,
  IMAGE_ASPECT_RATIOS,
  IMAGE_CREDITS_PER_IMAGE,
  IMAGE_REFERENCE_URLS_MAX,
  MODEL_IDS,
  MODEL_NAMES,
  PROMPT_MAX_LENGTH,
  type ProviderEndpoints,
  type ProviderLabel,
  VIDEO_ASPECT_RATIOS,
  VIDEO_AUDIO_SURCHARGE_PER_SECOND,
  VIDEO_DURATIONS_SECONDS,
  VIDEO_RESOLUTIONS,
  videoCost,
  videoCreditsPerSecond,
} from '../../schemas/models-catalog.ts';

// The catalogue of GET /api/v1/models, built from the domain's model ids, parameters and prices.

/** Input of {@link buildModelsCatalog}. */
export interface ModelsCatalogOptions {
  provider: ProviderLabel;
  endpoints: ProviderEndpoints;
}

/** The `GET /api/v1/models` list (docs/api.md), for the configured provider and endpoints. */
export function buildModelsCatalog(options: ModelsCatalogOptions): Model[] {
  const { provider, endpoints } = options;
  return [
    {
      id: MODEL_IDS.video,
      type: 'video',
      name: MODEL_NAMES[MODEL_IDS.video],
      provider,
      description:
        'Standard video model: turns a text prompt, or a prompt plus a still image, into a 4 to 15 second clip with native sound effects and ambient audio.',
      capabilities: ['text-to-video', 'image-to-video'],
      provider_endpoints: {
        'text-to-video': endpoints.textToVideo,
        'image-to-video': endpoints.imageToVideo,
      },
      params: videoParams(false),
      credits: videoCredits(false),
    },
    {
      id: MODEL_IDS.videoFast,
      type: 'video',
      name: MODEL_NAMES[MODEL_IDS.videoFast],
      provider,
      description:
        'Faster, cheaper text-to-video variant of VidModel 2.0, chosen with `fast: true` on the video generate route; it does not take an input image.',
      capabilities: ['text-to-video'],
      provider_endpoints: { 'text-to-video': endpoints.fastTextToVideo },
      params: videoParams(true),
      credits: videoCredits(true),
    },
    {
      id: MODEL_IDS.image,
      type: 'image',
      name: MODEL_NAMES[MODEL_IDS.image],
      provider,
      description:
        'Image model that generates up to 4 images from a text prompt, or edits and combines up to 9 reference images when `image_urls` is given.',
      capabilities: ['text-to-image', 'image-edit'],
      provider_endpoints: {
        'text-to-image': endpoints.textToImage,
        'image-edit': endpoints.imageEdit,
      },
      params: imageParams(),
      credits: { per_image: IMAGE_CREDITS_PER_IMAGE } satisfies CreditsImage,
    },
  ];
}

function videoCredits(fast: boolean): CreditsVideo {
  return {
    base_per_second: videoCreditsPerSecond(fast, '720p'),
    per_second_by_resolution: {
      '480p': videoCreditsPerSecond(fast, '480p'),
      '720p': videoCreditsPerSecond(fast, '720p'),
    },
    audio_surcharge_per_second: VIDEO_AUDIO_SURCHARGE_PER_SECOND,
    example_5s_with_audio: videoCost({ fast, resolution: '720p', durationSeconds: 5, generateAudio: true }),
  };
}

const PROMPT_PARAM: Readonly<ModelParam> = {
  type: 'string',
  required: true,
  min_length: 1,
  max_length: PROMPT_MAX_LENGTH,
};

const SEED_PARAM: Readonly<ModelParam> = {
  type: 'integer',
  description: 'Random when omitted; set it for reproducible output.',
};

// Both video models share one route (POST /api/v1/video/vidmodel-2/generate); `fast` picks between them.
function videoParams(fast: boolean): Record<string, ModelParam> {
  const imageUrl: Record<string, ModelParam> = fast
    ? {}
    : {
        image_url: {
          type: 'string',
          format: 'https-url',
          description: 'When present, runs image-to-video; cannot be combined with `fast: true`.',
        },
      };
  return {
    prompt: { ...PROMPT_PARAM },
    ...imageUrl,
    fast: fast
      ? {
          type: 'boolean',
          required: true,
          allowed: [true],
          description: 'Selects this model on POST /api/v1/video/vidmodel-2/generate (text-to-video only).',
        }
      : {
          type: 'boolean',
          default: false,
          allowed: [false],
          description: '`true` selects vidmodel-2.0-fast instead.',
        },
    duration_seconds: { type: 'integer', default: 5, allowed: [...VIDEO_DURATIONS_SECONDS] },
    aspect_ratio: { type: 'string', default: '16:9', allowed: [...VIDEO_ASPECT_RATIOS] },
    resolution: { type: 'string', default: '720p', allowed: [...VIDEO_RESOLUTIONS] },
    generate_audio: {
      type: 'boolean',
      default: true,
      description: 'Native sound-effect and ambient audio; included in the per-second rate.',
    },
    seed: { ...SEED_PARAM },
  };
}

function imageParams(): Record<string, ModelParam> {
  return {
    prompt: { ...PROMPT_PARAM },
    image_urls: {
      type: 'array',
      items: { type: 'string', format: 'https-url' },
      default: [],
      max_items: IMAGE_REFERENCE_URLS_MAX,
      description: 'Reference images; a non-empty list (1 to 9) runs the edit mode.',
    },
    num_images: { type: 'integer', default: 1, min: 1, max: IMAGES_PER_REQUEST_MAX },
    aspect_ratio: { type: 'string', default: '1:1', allowed: [...IMAGE_ASPECT_RATIOS] },
    seed: { ...SEED_PARAM },
  };
}
