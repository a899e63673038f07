import type { ProviderEndpoints } from '../../../schemas/models-catalog.ts';
import type { Capability, Generation, ImageGeneration } from '../ports/media-provider.ts';

/** Which configured endpoint serves each capability (docs/api.md, GET /api/v1/models). */
export const ENDPOINT_OF_CAPABILITY: Readonly<Record<Capability, keyof ProviderEndpoints>> = {
  'text-to-video': 'textToVideo',
  'image-to-video': 'imageToVideo',
  'fast-text-to-video': 'fastTextToVideo',
  'text-to-image': 'textToImage',
  'image-edit': 'imageEdit',
};

/**
 * The model input fal receives for a generation.
 *
 * Video `duration` is sent as a string of whole seconds ("5"): fal's video models of this family (e.g.
 * bytedance/seedance-2.0, whose 4–15 s, 480p/720p and `generate_audio` surface VidModel 2.0 mirrors) declare
 * it as a string enum `"4"`…`"15"`, and Kling-style models do the same with `"5"`/`"10"`. Image references go
 * as `image_urls` only in edit mode, as fal's nano-banana/edit takes them; text-to-image sends none.
 */
export function falInput(generation: Generation): Record<string, unknown> {
  if (isImageGeneration(generation)) {
    const input: Record<string, unknown> = {
      prompt: generation.prompt,
      num_images: generation.num_images,
      aspect_ratio: generation.aspect_ratio,
      seed: generation.seed,
    };
    if (generation.capability === 'image-edit')
      input.image_urls = generation.images.map((image) => image.url);
    return input;
  }
  const input: Record<string, unknown> = {
    prompt: generation.prompt,
    duration: String(generation.duration_seconds),
    aspect_ratio: generation.aspect_ratio,
    resolution: generation.resolution,
    generate_audio: generation.generate_audio,
    seed: generation.seed,
  };
  if (generation.capability === 'image-to-video' && generation.image) input.image_url = generation.image.url;
  return input;
}

function isImageGeneration(generation: Generation): generation is ImageGeneration {
  return generation.capability === 'text-to-image' || generation.capability === 'image-edit';
}
