import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { imageDimensions, videoDimensions } from '../../src/jobs/providers/sandbox/dimensions.ts';

describe('videoDimensions', () => {
  it('gives the short side of the resolution and the long side from the ratio', () => {
    assert.deepEqual(videoDimensions('720p', '16:9'), { width: 1280, height: 720 });
    assert.deepEqual(videoDimensions('720p', '9:16'), { width: 720, height: 1280 });
    assert.deepEqual(videoDimensions('720p', '1:1'), { width: 720, height: 720 });
    assert.deepEqual(videoDimensions('720p', '4:3'), { width: 960, height: 720 });
    assert.deepEqual(videoDimensions('720p', '3:4'), { width: 720, height: 960 });
    assert.deepEqual(videoDimensions('720p', '21:9'), { width: 1680, height: 720 });
    assert.deepEqual(videoDimensions('480p', '4:3'), { width: 640, height: 480 });
    assert.deepEqual(videoDimensions('480p', '21:9'), { width: 1120, height: 480 });
  });

  it('rounds an odd long side to an even one (853.3 → 854 at 480p 16:9)', () => {
    assert.deepEqual(videoDimensions('480p', '16:9'), { width: 854, height: 480 });
    assert.deepEqual(videoDimensions('480p', '9:16'), { width: 480, height: 854 });
  });

  it('gives even sizes for every supported ratio and resolution', () => {
    for (const resolution of ['480p', '720p'] as const) {
      for (const ratio of ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9']) {
        const { width, height } = videoDimensions(resolution, ratio);
        assert.equal(width % 2, 0, `${resolution} ${ratio} width ${width}`);
        assert.equal(height % 2, 0, `${resolution} ${ratio} height ${height}`);
        assert.equal(Math.min(width, height), resolution === '720p' ? 720 : 480);
      }
    }
  });

  it('refuses malformed aspect ratios and resolutions', () => {
    for (const ratio of ['16x9', '0:9', '16:0', '', ' 16:9', '16:9:1', '-16:9', '20:1']) {
      assert.throws(() => videoDimensions('720p', ratio), RangeError, ratio);
    }
    assert.throws(() => videoDimensions('1080p' as '720p', '16:9'), RangeError);
  });
});

describe('imageDimensions', () => {
  it('gives a 1024 long side and the short side from the ratio', () => {
    assert.deepEqual(imageDimensions('1:1'), { width: 1024, height: 1024 });
    assert.deepEqual(imageDimensions('16:9'), { width: 1024, height: 576 });
    assert.deepEqual(imageDimensions('9:16'), { width: 576, height: 1024 });
    assert.deepEqual(imageDimensions('4:3'), { width: 1024, height: 768 });
    assert.deepEqual(imageDimensions('3:4'), { width: 768, height: 1024 });
  });

  it('makes a ratio that does not divide evenly give an even side', () => {
    const { width, height } = imageDimensions('21:9');
    assert.deepEqual([width, height], [1024, 438]);
  });

  it('refuses malformed aspect ratios', () => {
    assert.throws(() => imageDimensions('square'), RangeError);
  });
});
