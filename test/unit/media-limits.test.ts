// The media limits (docs/editor.md "Media limits", docs/errors.md): each limit at its edge, the words of each
// breach, and the two answers a breach gives (415 for uploads and imports, 400 naming a request's field).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  imageLimitBreach,
  mediaLimits,
  MediaOverLimit,
  probeMaxPixels,
  videoLimitBreach,
} from '../../workers/probe/media-limits.ts';

const limits = mediaLimits(40_000_000);

describe('media limits', () => {
  it('holds images to IMAGE_MAX_PIXELS and a side of 16384, each at its edge', () => {
    assert.equal(imageLimitBreach({ width: 8000, height: 5000 }, limits), null, 'exactly 40 000 000 pixels');
    assert.equal(imageLimitBreach({ width: 16_384, height: 2441 }, limits), null);
    assert.deepEqual(imageLimitBreach({ width: 15_000, height: 15_000 }, limits), {
      problem: 'is too large',
      detail: '15000×15000 pixels is more than IMAGE_MAX_PIXELS (40000000)',
    });
    assert.deepEqual(
      imageLimitBreach({ width: 8001, height: 5000 }, limits)?.detail,
      '8001×5000 pixels is more than IMAGE_MAX_PIXELS (40000000)',
    );
    assert.deepEqual(imageLimitBreach({ width: 16_385, height: 1 }, limits), {
      problem: 'is too large',
      detail: '16385×1 has a side over 16384 pixels',
    });
    assert.equal(
      imageLimitBreach({ width: 1, height: 16_385 }, limits)?.detail,
      '1×16385 has a side over 16384 pixels',
    );
    assert.equal(
      imageLimitBreach({ width: 100, height: 100 }, mediaLimits(9999))?.detail,
      '100×100 pixels is more than IMAGE_MAX_PIXELS (9999)',
    );
  });

  it('holds videos to a side of 4096, 120 frames per second and 3600 seconds, each at its edge', () => {
    assert.equal(videoLimitBreach({ width: 4096, height: 4096, fps: 120, durationSec: 3600 }, limits), null);
    assert.deepEqual(videoLimitBreach({ width: 4097, height: 64 }, limits), {
      problem: 'is too large',
      detail: '4097×64 has a side over 4096 pixels',
    });
    assert.equal(
      videoLimitBreach({ width: 64, height: 4097 }, limits)?.detail,
      '64×4097 has a side over 4096 pixels',
    );
    assert.deepEqual(videoLimitBreach({ width: 64, height: 64, fps: 121 }, limits), {
      problem: 'has too high a frame rate',
      detail: '121 frames per second is more than 120',
    });
    assert.equal(
      videoLimitBreach({ fps: 14_641 / 122 }, limits)?.detail,
      '120.008 frames per second is more than 120',
    );
    assert.deepEqual(videoLimitBreach({ durationSec: 3602 }, limits), {
      problem: 'is too long',
      detail: '3602 seconds is more than 3600',
    });
    assert.equal(
      videoLimitBreach({ durationSec: 3600.0004 }, limits),
      null,
      'judged to the thousandth, as shown',
    );
    assert.equal(
      videoLimitBreach({ durationSec: 3600.001 }, limits)?.detail,
      '3600.001 seconds is more than 3600',
    );
    assert.equal(videoLimitBreach({}, limits), null, 'what a header does not say is not judged here');
  });

  it('lets a probe decode any image within the limits and any video frame, nothing larger', () => {
    assert.equal(probeMaxPixels(limits), 40_000_000);
    assert.equal(probeMaxPixels(mediaLimits(1000)), 4096 * 4096);
  });

  it('answers 415 unsupported_media to an upload, and 400 naming the field to a request', () => {
    const error = new MediaOverLimit('image', imageLimitBreach({ width: 15_000, height: 15_000 }, limits)!);
    assert.equal(error.status, 415);
    assert.deepEqual(error.toBody(), {
      error: 'unsupported_media',
      message: 'The image is too large: 15000×15000 pixels is more than IMAGE_MAX_PIXELS (40000000)',
    });
    const field = error.forField('image_urls[1]');
    assert.equal(field.status, 400);
    assert.deepEqual(field.toBody(), {
      error: 'image_urls[1] is too large: 15000×15000 pixels is more than IMAGE_MAX_PIXELS (40000000)',
    });
    const video = new MediaOverLimit('video', videoLimitBreach({ fps: 121 }, limits)!);
    assert.equal(
      video.toBody().message,
      'The video has too high a frame rate: 121 frames per second is more than 120',
    );
  });
});
