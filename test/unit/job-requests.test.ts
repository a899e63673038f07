// The submit bodies' checks (docs/errors.md, Validation): one message per request, for the first failing field in
// the documented order, word for word; defaults filled in; unknown fields ignored.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createChecker } from '../../schemas/validate.ts';
import {
  ImageGenerateBody,
  VideoGenerateBody,
  imageGenerateRules,
  videoGenerateRules,
} from '../../schemas/jobs.ts';
import { sandboxBehaviour } from '../../src/jobs/providers/sandbox/markers.ts';

const video = createChecker(VideoGenerateBody);
const image = createChecker(ImageGenerateBody);
const messageOf = (checked: ReturnType<typeof video.check> | ReturnType<typeof image.check>) =>
  checked.ok ? 'ok' : checked.message;

describe('video generate body', () => {
  it('fills in the documented defaults and ignores unknown fields', () => {
    const checked = video.check({ prompt: 'a lighthouse', colour: 'red' });
    assert.equal(checked.ok, true);
    assert.deepEqual(checked.ok && { ...checked.value, colour: undefined }, {
      prompt: 'a lighthouse',
      colour: undefined,
      fast: false,
      duration_seconds: 5,
      aspect_ratio: '16:9',
      resolution: '720p',
      generate_audio: true,
    });
  });

  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['missing prompt', {}, 'prompt is required (non-empty string)'],
    ['empty prompt', { prompt: '' }, 'prompt is required (non-empty string)'],
    ['prompt of another type', { prompt: 42 }, 'prompt is required (non-empty string)'],
    ['prompt too long', { prompt: 'x'.repeat(4001) }, 'prompt too long (max 4000 chars)'],
    ['image_url not a string', { prompt: 'p', image_url: 3 }, 'image_url must be a https URL'],
    ['fast not a boolean', { prompt: 'p', fast: 'yes' }, 'fast must be a boolean'],
    [
      'duration not allowed',
      { prompt: 'p', duration_seconds: 7 },
      'duration_seconds must be one of 4, 5, 6, 8, 10, 15',
    ],
    [
      'duration not an integer',
      { prompt: 'p', duration_seconds: 5.5 },
      'duration_seconds must be one of 4, 5, 6, 8, 10, 15',
    ],
    [
      'duration as a string',
      { prompt: 'p', duration_seconds: '5' },
      'duration_seconds must be one of 4, 5, 6, 8, 10, 15',
    ],
    [
      'aspect ratio',
      { prompt: 'p', aspect_ratio: '5:4' },
      'aspect_ratio must be one of 16:9, 9:16, 1:1, 4:3, 3:4, 21:9',
    ],
    ['resolution', { prompt: 'p', resolution: '1080p' }, 'resolution must be one of 480p, 720p'],
    ['generate_audio', { prompt: 'p', generate_audio: 1 }, 'generate_audio must be a boolean'],
    ['seed not an integer', { prompt: 'p', seed: 1.5 }, 'seed must be an integer'],
    ['seed as a string', { prompt: 'p', seed: '7' }, 'seed must be an integer'],
    [
      'first field wins',
      { prompt: '', duration_seconds: 7, resolution: 'x' },
      'prompt is required (non-empty string)',
    ],
    [
      'table order, not body order',
      { resolution: 'x', prompt: 'p', duration_seconds: 7 },
      'duration_seconds must be one of 4, 5, 6, 8, 10, 15',
    ],
  ];
  for (const [name, body, message] of cases) {
    it(`answers "${message}" for ${name}`, () => assert.equal(messageOf(video.check(body)), message));
  }
});

describe('image generate body', () => {
  it('fills in the documented defaults', () => {
    const checked = image.check({ prompt: 'a cat' });
    assert.deepEqual(checked.ok && checked.value, {
      prompt: 'a cat',
      image_urls: [],
      num_images: 1,
      aspect_ratio: '1:1',
    });
  });

  const tenUrls = Array.from({ length: 10 }, (_, i) => `https://x.test/${i}.png`);
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['missing prompt', { num_images: 2 }, 'prompt is required (non-empty string)'],
    [
      'image_urls not an array',
      { prompt: 'p', image_urls: 'https://x.test/a.png' },
      'image_urls must be an array of 1 to 9 https URLs',
    ],
    [
      'more than 9 image_urls',
      { prompt: 'p', image_urls: tenUrls },
      'image_urls must be an array of 1 to 9 https URLs',
    ],
    [
      'an image_urls item of another type',
      { prompt: 'p', image_urls: ['https://x.test/a.png', 5] },
      'image_urls items must be https URLs',
    ],
    ['num_images 0', { prompt: 'p', num_images: 0 }, 'num_images must be 1-4'],
    ['num_images 5', { prompt: 'p', num_images: 5 }, 'num_images must be 1-4'],
    ['num_images not an integer', { prompt: 'p', num_images: 'two' }, 'num_images must be 1-4'],
    [
      'aspect ratio of the video route',
      { prompt: 'p', aspect_ratio: '21:9' },
      'aspect_ratio must be one of 1:1, 16:9, 9:16, 4:3, 3:4',
    ],
    ['seed', { prompt: 'p', seed: null }, 'seed must be an integer'],
  ];
  for (const [name, body, message] of cases) {
    it(`answers "${message}" for ${name}`, () => assert.equal(messageOf(image.check(body)), message));
  }
});

describe('sandbox markers', () => {
  it('reads each sandbox marker ([sandbox:fail-submit], fail, hang, empty...) and ignores everything else', () => {
    assert.deepEqual(sandboxBehaviour('a cat [sandbox:fail-submit]'), { kind: 'fail-submit' });
    assert.deepEqual(sandboxBehaviour('[sandbox:fail] a cat'), { kind: 'fail' });
    assert.deepEqual(sandboxBehaviour('[sandbox:hang]'), { kind: 'hang' });
    assert.deepEqual(sandboxBehaviour('[sandbox:empty]'), { kind: 'empty' });
    assert.deepEqual(sandboxBehaviour('x [sandbox:delay=250]'), { kind: 'normal', delayMs: 250 });
    assert.deepEqual(sandboxBehaviour('[sandbox:delay=99999999999]'), { kind: 'normal' });
    assert.deepEqual(sandboxBehaviour('[sandbox:explode]'), { kind: 'normal' });
    assert.deepEqual(sandboxBehaviour('a plain prompt'), { kind: 'normal' });
  });
});

describe('a number too large for a double (JSON 1e309) where a rule expects another type', () => {
  const accepts = () => true;
  const imageWithRules = createChecker(ImageGenerateBody, { rules: imageGenerateRules(accepts) });
  const videoWithRules = createChecker(VideoGenerateBody, { rules: videoGenerateRules(accepts) });

  it("answers the field's message, never running the rule on it (the fuzz run's 500)", () => {
    const parsed = JSON.parse('{"prompt":"p","image_urls":1e309}') as Record<string, unknown>;
    assert.equal(messageOf(imageWithRules.check(parsed)), 'image_urls must be an array of 1 to 9 https URLs');
    assert.equal(
      messageOf(videoWithRules.check({ prompt: 'p', image_url: Infinity })),
      'image_url must be a https URL',
    );
  });
});
