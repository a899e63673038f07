import type { Readable } from 'node:stream';

// Where generation requests go (a port: docs/architecture.md). Adapters: providers/sandbox, providers/fal.

/**
 * What a generation asks a provider for; one value per upstream endpoint (docs/api.md, GET /api/v1/models).
 */
export type Capability =
  'text-to-video' | 'image-to-video' | 'fast-text-to-video' | 'text-to-image' | 'image-edit';

/** An input image already in our media store: `url` is its public URL (what fal fetches). */
export interface InputImage {
  mediaId: string;
  url: string;
  contentType: string;
  /** A copy fetched from elsewhere for this job alone (removed with it), not one of our own media. */
  fetched?: boolean;
}

/** A video generation as the provider receives it (defaults already applied). */
export interface VideoGeneration {
  capability: 'text-to-video' | 'image-to-video' | 'fast-text-to-video';
  prompt: string;
  duration_seconds: number;
  aspect_ratio: string;
  resolution: '480p' | '720p';
  generate_audio: boolean;
  seed: number;
  /** Present exactly when `capability` is `image-to-video`. */
  image?: InputImage;
}

/** An image generation as the provider receives it (defaults already applied). */
export interface ImageGeneration {
  capability: 'text-to-image' | 'image-edit';
  prompt: string;
  num_images: number;
  aspect_ratio: string;
  seed: number;
  /** Reference images; non-empty exactly when `capability` is `image-edit`. */
  images: InputImage[];
}

export type Generation = VideoGeneration | ImageGeneration;

/** The input images of a generation. */
export function inputImages(generation: Generation): InputImage[] {
  if ('images' in generation) return generation.images;
  return generation.image ? [generation.image] : [];
}

/** A provider's handle on a submitted request: everything later calls need, safe to store in a job. */
export interface ProviderHandle {
  /** The upstream endpoint id that serves the request (the webhook body's `model`). */
  endpoint: string;
  requestId: string;
  /** Provider-specific URLs or notes (fal: status, response and cancel URLs). */
  data?: Record<string, string>;
}

/** Where a request stands upstream. `failed` carries a readable reason. */
export type ProviderStatus =
  { state: 'queued' | 'running' } | { state: 'completed' } | { state: 'failed'; error: string };

/** One produced file, readable once by the caller (who copies it into the media store). */
export interface ProviderOutput {
  contentType: string;
  open(): Promise<Readable>;
}

/** The outcome of a finished request: its files (empty means the provider delivered nothing). */
export type ProviderResult = { ok: true; outputs: ProviderOutput[] } | { ok: false; error: string };

/**
 * An upstream model provider. Calls may fail with any error (network, 5xx): `submit` failures are answered
 * 502 and refunded; `status`/`result` failures are retried at the next poll until the job's time-out.
 * A `ProviderRejection` from `submit` is the provider refusing the request itself (its message is readable).
 */
export interface MediaProvider {
  readonly label: 'sandbox' | 'fal';
  submit(generation: Generation): Promise<ProviderHandle>;
  status(handle: ProviderHandle): Promise<ProviderStatus>;
  result(handle: ProviderHandle): Promise<ProviderResult>;
  /** Asks the provider to stop; true when it accepted (fal only while queued). Never throws for a refusal. */
  cancel(handle: ProviderHandle): Promise<boolean>;
}

/** A provider said no to a submission (validation, quota): the message is safe to show. */
export class ProviderRejection extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ProviderRejection';
  }
}
