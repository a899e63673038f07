/** The phase-1 model ids (docs/api.md, GET /api/v1/models). */
export const MODEL_IDS = {
  video: 'vidmodel-2.0',
  videoFast: 'vidmodel-2.0-fast',
  image: 'imgmodel-2',
} as const;

/** One of the phase-1 model ids. */
export type ModelId = (typeof MODEL_IDS)[keyof typeof MODEL_IDS];

/** Display names, which job reads answer in `model` (docs/api.md, The Job object). */
export const MODEL_NAMES: Readonly<Record<ModelId, string>> = {
  'vidmodel-2.0': 'VidModel 2.0',
  'vidmodel-2.0-fast': 'VidModel 2.0 Fast',
  'imgmodel-2': 'ImgModel 2',
};

/** Label of the configured media provider. */
export type ProviderLabel = 'sandbox' | 'fal';

/** Upstream endpoint id per capability; the webhook body's `model` is the one that served the job. */
export interface ProviderEndpoints {
  textToVideo: string;
  imageToVideo: string;
  fastTextToVideo: string;
  textToImage: string;
  imageEdit: string;
}

/** Endpoint ids used unless a deployment overrides them (`FAL_ENDPOINT_<CAPABILITY>`). */
export const DEFAULT_PROVIDER_ENDPOINTS: Readonly<ProviderEndpoints> = {
  textToVideo: 'fal-ai/vidmodel-2.0/text-to-video',
  imageToVideo: 'fal-ai/vidmodel-2.0/image-to-video',
  fastTextToVideo: 'fal-ai/vidmodel-2.0/fast/text-to-video',
  textToImage: 'fal-ai/nano-banana',
  imageEdit: 'fal-ai/nano-banana/edit',
};

// The request-field rules of the generate routes (docs/api.md, Routes) live here, so the catalogue and the
// request schemas agree.

/** Longest accepted prompt, in characters (both routes). */
export const PROMPT_MAX_LENGTH = 4000;
/** Accepted `duration_seconds` values, in the order docs/api.md lists them (the error message repeats it). */
export const VIDEO_DURATIONS_SECONDS = [4, 5, 6, 8, 10, 15] as const;
/** Accepted video `aspect_ratio` values, in the order docs/api.md lists them. */
export const VIDEO_ASPECT_RATIOS = ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'] as const;
/** Accepted video `resolution` values. */
export const VIDEO_RESOLUTIONS = ['480p', '720p'] as const;
/** Accepted image `aspect_ratio` values, in the order docs/api.md lists them. */
export const IMAGE_ASPECT_RATIOS = ['1:1', '16:9', '9:16', '4:3', '3:4'] as const;
/** Most reference images an image request may carry. */
export const IMAGE_REFERENCE_URLS_MAX = 9;
/** Most images one image request may ask for. */
export const IMAGES_PER_REQUEST_MAX = 4;

/** A video `resolution` value. */
export type VideoResolution = (typeof VIDEO_RESOLUTIONS)[number];

/**
 * Credits per second of video, audio included (docs/api.md, Pricing). The fast 480p rate, 81, is the
 * standard 480p/720p ratio applied to 181, rounded.
 */
export const VIDEO_CREDITS_PER_SECOND: Readonly<
  Record<'standard' | 'fast', Record<VideoResolution, number>>
> = {
  standard: { '480p': 101, '720p': 227 },
  fast: { '480p': 81, '720p': 181 },
};

/** Extra credits per second when audio is generated: zero, since the rates above already include it. */
export const VIDEO_AUDIO_SURCHARGE_PER_SECOND = 0;

/** Credits per generated image (docs/api.md, Pricing). */
export const IMAGE_CREDITS_PER_IMAGE = 50;

/** What a video request is priced on. */
export interface VideoPriceInput {
  fast: boolean;
  resolution: VideoResolution;
  durationSeconds: number;
  /** Defaults to true, as the request field does. */
  generateAudio?: boolean;
}

/** Credits per second of one video model at one resolution, audio surcharge excluded. */
export function videoCreditsPerSecond(fast: boolean, resolution: VideoResolution): number {
  return VIDEO_CREDITS_PER_SECOND[fast ? 'fast' : 'standard'][resolution];
}

/** The full credit cost of a video request. */
export function videoCost(input: VideoPriceInput): number {
  const surcharge = (input.generateAudio ?? true) ? VIDEO_AUDIO_SURCHARGE_PER_SECOND : 0;
  return (videoCreditsPerSecond(input.fast, input.resolution) + surcharge) * input.durationSeconds;
}

/** The credit cost of an image request. */
export function imageCost(numImages: number): number {
  return IMAGE_CREDITS_PER_IMAGE * numImages;
}
