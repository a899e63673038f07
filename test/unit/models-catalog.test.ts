import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Compile } from 'typebox/compile';
import { ModelsResponseSchema, type Model } from '../../schemas/models.ts';
import {
  DEFAULT_PROVIDER_ENDPOINTS,
  MODEL_NAMES,
  imageCost,
  videoCost,
  videoCreditsPerSecond,
  type ProviderEndpoints,
} from '../../schemas/models-catalog.ts';
import { buildModelsCatalog } from '../../src/jobs/models-catalog.ts';

const catalog = buildModelsCatalog({ provider: 'sandbox', endpoints: DEFAULT_PROVIDER_ENDPOINTS });

function entry(id: string): Model {
  const model = catalog.find((candidate) => candidate.id === id);
  assert.ok(model, `catalogue has ${id}`);
  return model;
}

describe('models catalogue', () => {
  it('lists exactly the three phase-1 models in order', () => {
    assert.deepEqual(
      catalog.map((model) => model.id),
      ['vidmodel-2.0', 'vidmodel-2.0-fast', 'imgmodel-2'],
    );
  });

  it('describes the standard video model: name, capabilities, credits per second by resolution, endpoints', () => {
    const model = entry('vidmodel-2.0');
    assert.equal(model.type, 'video');
    assert.equal(model.name, 'VidModel 2.0');
    assert.deepEqual(model.capabilities, ['text-to-video', 'image-to-video']);
    assert.deepEqual(model.credits, {
      base_per_second: 227,
      per_second_by_resolution: { '480p': 101, '720p': 227 },
      audio_surcharge_per_second: 0,
      example_5s_with_audio: 1135,
    });
    assert.deepEqual(model.provider_endpoints, {
      'text-to-video': 'fal-ai/vidmodel-2.0/text-to-video',
      'image-to-video': 'fal-ai/vidmodel-2.0/image-to-video',
    });
  });

  it('describes the fast video model: name, text-to-video only, credits per second by resolution, endpoint', () => {
    const model = entry('vidmodel-2.0-fast');
    assert.equal(model.type, 'video');
    assert.equal(model.name, 'VidModel 2.0 Fast');
    assert.deepEqual(model.capabilities, ['text-to-video']);
    assert.deepEqual(model.credits, {
      base_per_second: 181,
      per_second_by_resolution: { '480p': 81, '720p': 181 },
      audio_surcharge_per_second: 0,
      example_5s_with_audio: 905,
    });
    assert.deepEqual(model.provider_endpoints, { 'text-to-video': 'fal-ai/vidmodel-2.0/fast/text-to-video' });
  });

  it('describes the image model: name, capabilities, 50 credits per image, endpoints', () => {
    const model = entry('imgmodel-2');
    assert.equal(model.type, 'image');
    assert.equal(model.name, 'ImgModel 2');
    assert.deepEqual(model.capabilities, ['text-to-image', 'image-edit']);
    assert.deepEqual(model.credits, { per_image: 50 });
    assert.deepEqual(model.provider_endpoints, {
      'text-to-image': 'fal-ai/nano-banana',
      'image-edit': 'fal-ai/nano-banana/edit',
    });
  });

  it('gives every model a one-sentence description', () => {
    for (const model of catalog) {
      assert.match(model.description, /^[A-Z][^.]*(\.[^ .][^.]*)*\.$/, model.id);
    }
  });

  it('maps every capability, and only those, to an upstream endpoint', () => {
    for (const model of catalog) {
      assert.deepEqual(
        Object.keys(model.provider_endpoints).sort(),
        [...model.capabilities].sort(),
        model.id,
      );
    }
  });

  it('labels every entry with the configured provider and its endpoint overrides', () => {
    const endpoints: ProviderEndpoints = {
      textToVideo: 't2v',
      imageToVideo: 'i2v',
      fastTextToVideo: 'fast-t2v',
      textToImage: 't2i',
      imageEdit: 'edit',
    };
    const fal = buildModelsCatalog({ provider: 'fal', endpoints });
    assert.deepEqual(
      fal.map((model) => model.provider),
      ['fal', 'fal', 'fal'],
    );
    assert.deepEqual(
      fal.map((model) => model.provider_endpoints),
      [
        { 'text-to-video': 't2v', 'image-to-video': 'i2v' },
        { 'text-to-video': 'fast-t2v' },
        { 'text-to-image': 't2i', 'image-edit': 'edit' },
      ],
    );
  });

  it('lists the video request fields with their defaults and allowed values', () => {
    const { params } = entry('vidmodel-2.0');
    assert.deepEqual(Object.keys(params), [
      'prompt',
      'image_url',
      'fast',
      'duration_seconds',
      'aspect_ratio',
      'resolution',
      'generate_audio',
      'seed',
    ]);
    assert.deepEqual(params.prompt, { type: 'string', required: true, min_length: 1, max_length: 4000 });
    assert.deepEqual(params.duration_seconds, { type: 'integer', default: 5, allowed: [4, 5, 6, 8, 10, 15] });
    assert.deepEqual(params.aspect_ratio, {
      type: 'string',
      default: '16:9',
      allowed: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
    });
    assert.deepEqual(params.resolution, { type: 'string', default: '720p', allowed: ['480p', '720p'] });
    assert.equal(params.generate_audio?.default, true);
    assert.equal(params.fast?.default, false);
    assert.equal(params.seed?.type, 'integer');
  });

  it('marks the fast model as selected by fast: true and taking no image_url', () => {
    const { params } = entry('vidmodel-2.0-fast');
    assert.equal(params.image_url, undefined);
    assert.deepEqual(params.fast?.allowed, [true]);
    assert.equal(params.fast?.required, true);
  });

  it('lists the image request fields with their defaults and limits', () => {
    const { params } = entry('imgmodel-2');
    assert.deepEqual(Object.keys(params), ['prompt', 'image_urls', 'num_images', 'aspect_ratio', 'seed']);
    assert.deepEqual(params.num_images, { type: 'integer', default: 1, min: 1, max: 4 });
    assert.deepEqual(params.aspect_ratio, {
      type: 'string',
      default: '1:1',
      allowed: ['1:1', '16:9', '9:16', '4:3', '3:4'],
    });
    assert.deepEqual(params.image_urls?.default, []);
    assert.equal(params.image_urls?.max_items, 9);
  });

  it('validates against ModelsResponseSchema', () => {
    const validator = Compile(ModelsResponseSchema);
    assert.equal(validator.Check({ models: catalog }), true);
    assert.equal(validator.Check({ models: [{ ...catalog[0], credits: { per_image: '50' } }] }), false);
  });

  it('builds fresh objects on every call so callers cannot corrupt the next answer', () => {
    const first = buildModelsCatalog({ provider: 'sandbox', endpoints: DEFAULT_PROVIDER_ENDPOINTS });
    const prompt = first[0]?.params.prompt;
    assert.ok(prompt);
    prompt.max_length = 1;
    const second = buildModelsCatalog({ provider: 'sandbox', endpoints: DEFAULT_PROVIDER_ENDPOINTS });
    assert.equal(second[0]?.params.prompt?.max_length, 4000);
    assert.equal(second[2]?.params.prompt?.max_length, 4000);
  });

  it('names each model id with its display name', () => {
    for (const model of catalog) assert.equal(MODEL_NAMES[model.id as keyof typeof MODEL_NAMES], model.name);
  });
});

describe('pricing', () => {
  it('prices a 5 s 720p standard video at 1135 credits', () => {
    assert.equal(videoCost({ fast: false, resolution: '720p', durationSeconds: 5 }), 1135);
  });

  it('prices a 5 s 720p fast video at 905 credits', () => {
    assert.equal(videoCost({ fast: true, resolution: '720p', durationSeconds: 5 }), 905);
  });

  it('charges 101 credits per second for a 480p standard video', () => {
    for (const seconds of [4, 5, 6, 8, 10, 15]) {
      assert.equal(videoCost({ fast: false, resolution: '480p', durationSeconds: seconds }), 101 * seconds);
    }
  });

  it('charges 81 credits per second for a 480p fast video', () => {
    for (const seconds of [4, 5, 6, 8, 10, 15]) {
      assert.equal(videoCost({ fast: true, resolution: '480p', durationSeconds: seconds }), 81 * seconds);
    }
  });

  it('charges 227 credits per second for a 720p standard video', () => {
    assert.equal(videoCost({ fast: false, resolution: '720p', durationSeconds: 15 }), 227 * 15);
  });

  it('costs the same with or without audio, since the surcharge is zero', () => {
    const input = { fast: false, resolution: '720p', durationSeconds: 8 } as const;
    assert.equal(videoCost({ ...input, generateAudio: false }), videoCost({ ...input, generateAudio: true }));
  });

  it('exposes the per-second rates the catalogue publishes', () => {
    assert.equal(videoCreditsPerSecond(false, '720p'), 227);
    assert.equal(videoCreditsPerSecond(false, '480p'), 101);
    assert.equal(videoCreditsPerSecond(true, '720p'), 181);
    assert.equal(videoCreditsPerSecond(true, '480p'), 81);
  });

  it('prices images at 50 credits each', () => {
    for (const count of [1, 2, 3, 4]) assert.equal(imageCost(count), 50 * count);
  });
});
