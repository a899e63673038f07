// Input image URLs (docs/api.md, Input images and own-media URLs): https URLs, or the service's own media URLs (any scheme),
// whose path must decode; an own media URL with broken percent-encoding is refused with the field's URL message
// and never reaches the store or a fetch.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createInboundImages, isAcceptedImageUrl, ownMediaId } from '../../src/jobs/inbound-images.ts';
import { Readable } from 'node:stream';
import { AppError } from '../../src/platform/core/errors.ts';
import { mediaLimits } from '../../workers/probe/media-limits.ts';
import type { MediaStore, StoredMedia } from '../../src/platform/storage/media-store.ts';

const BASE = 'http://127.0.0.1:8080';
const PNG_HEADER = '89504e470d0a1a0a0000000d494844520000001000000010080000003a98a0bd';
const OWN = `${BASE}/media/med_0123456789abcdefghijABCD.png`;
const BROKEN = [
  `${BASE}/media/%E0%A4%A`, // truncated sequence
  `${BASE}/media/%`,
  `${BASE}/media/%zz`,
  `${BASE}/media/%C3`, // lead byte alone
  `${BASE}/media/%ED%A0%80`, // an encoded surrogate
  `${BASE}/media/med_x%FF.png?x=1`,
];

describe('ownMediaId', () => {
  it('decodes the id of an own media URL, without query or fragment', () => {
    assert.equal(ownMediaId(OWN, BASE), 'med_0123456789abcdefghijABCD.png');
    assert.equal(ownMediaId(`${OWN}?download=1#top`, BASE), 'med_0123456789abcdefghijABCD.png');
    assert.equal(ownMediaId(`${BASE}/media/med_%41.png`, BASE), 'med_A.png');
    // Only the path must decode: the query is not part of the id.
    assert.equal(ownMediaId(`${OWN}?q=%zz`, BASE), 'med_0123456789abcdefghijABCD.png');
  });

  it('is undefined for other URLs and null for an own media path that does not decode', () => {
    assert.equal(ownMediaId('https://example.com/media/%E0%A4%A', BASE), undefined);
    assert.equal(ownMediaId(`${BASE}/other/x.png`, BASE), undefined);
    for (const url of BROKEN) assert.equal(ownMediaId(url, BASE), null, url);
  });
});

describe('isAcceptedImageUrl', () => {
  it('accepts https URLs and own media URLs of any scheme', () => {
    for (const url of [OWN, 'https://example.com/a.png', 'https://example.com/%E0%A4%A.png'])
      assert.equal(isAcceptedImageUrl(url, BASE), true, url);
  });

  it('refuses own media URLs whose path does not decode, and anything not https', () => {
    for (const url of [...BROKEN, 'http://example.com/a.png', 'ftp://x/y', 'not a url', '', 'https://'])
      assert.equal(isAcceptedImageUrl(url, BASE), false, url);
  });
});

describe('createInboundImages', () => {
  const stored: StoredMedia = {
    id: 'med_0123456789abcdefghijABCD.png',
    size: 10,
    contentType: 'image/png',
    etag: '"x"',
    createdAt: new Date(0),
  };
  let fetches = 0;
  let stats = 0;
  const store: MediaStore = {
    put: () => Promise.reject(new Error('not expected')),
    stat: (id) => {
      stats++;
      return Promise.resolve(id === stored.id ? stored : null);
    },
    // The header of a 16 × 16 PNG: an own image's size is read before it is used.
    open: () => Promise.resolve(Readable.from([Buffer.from(PNG_HEADER, 'hex')])),
    delete: () => Promise.resolve(),
  };
  const inbound = createInboundImages({
    store,
    fetchImage: () => {
      fetches++;
      return Promise.reject(new Error('not expected'));
    },
    newMediaId: () => 'med_new',
    publicBaseUrl: BASE,
    limits: mediaLimits(40_000_000),
  });

  /** The 400 message a resolve rejects with. */
  async function refusal(promise: Promise<unknown>): Promise<string> {
    try {
      await promise;
    } catch (error) {
      assert.ok(error instanceof AppError, String(error));
      assert.equal(error.status, 400);
      return error.message;
    }
    assert.fail('resolved');
  }

  it("refuses a broken own media URL with the field's URL message, before the store or a fetch", async () => {
    for (const url of BROKEN) {
      assert.equal(await refusal(inbound.resolve(url, 'image_url')), 'image_url must be a https URL', url);
      assert.equal(
        await refusal(inbound.resolveAll([OWN, url], 'image_urls')),
        'image_urls items must be https URLs',
        url,
      );
    }
    assert.equal(fetches, 0);
    assert.equal(stats, BROKEN.length, 'only the good URL of each list was looked up');
  });

  it('still reads a good own media URL from the store', async () => {
    const image = await inbound.resolve(OWN, 'image_url');
    assert.deepEqual(image, { mediaId: stored.id, url: OWN, contentType: 'image/png' });
  });
});
