import type { Readable } from 'node:stream';
import {
  AppError,
  readImageSize,
  type ImageSize,
  sniffImageType,
  imageLimitBreach,
  MediaOverLimit,
  type MediaLimits,
  type MediaStore,
} from '../platform/index.ts';
import { inputImages, type Generation, type InputImage } from './ports/media-provider.ts';

/** The extension a stored copy gets, by the image type its bytes show. */
const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
};

/** Largest inbound image we fetch (spec and contract are silent; providers cap inputs at about this size). */
export const INBOUND_IMAGE_MAX_BYTES = 20 * 1024 * 1024;

export interface InboundImagesDeps {
  store: MediaStore;
  /** Fetches an external URL with the SSRF guard, size cap and time-out; rejects with a readable message. */
  fetchImage(url: string): Promise<{ contentType: string; data: Buffer }>;
  newMediaId(extension: string): string;
  /** `PUBLIC_BASE_URL` (known once the server listens). */
  publicBaseUrl: string;
  /** What an input image may be (docs/api.md "Input images"): past it, 400 naming the field and the limit. */
  limits: MediaLimits;
}

/** Our own media URL prefix: such URLs are read from the store, whatever their scheme (docs/api.md). */
export function ownMediaPrefix(publicBaseUrl: string): string {
  return `${publicBaseUrl}/media/`;
}

/**
 * The media id an own media URL names (its path after the prefix, percent-decoded, without query or
 * fragment); `undefined` for any other URL; `null` when the path cannot be decoded (`%E0%A4%A`): such a URL
 * is not a URL we could have handed out, so it is refused like any other unusable URL.
 */
export function ownMediaId(url: string, publicBaseUrl: string): string | null | undefined {
  const prefix = ownMediaPrefix(publicBaseUrl);
  if (!url.startsWith(prefix)) return undefined;
  try {
    return decodeURIComponent(url.slice(prefix.length).split(/[?#]/)[0]!);
  } catch {
    return null;
  }
}

/** True when `url` may be given as an input image: https, or one of our own media URLs that decodes. */
export function isAcceptedImageUrl(url: string, publicBaseUrl: string): boolean {
  const own = ownMediaId(url, publicBaseUrl);
  if (own !== undefined) return own !== null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' && parsed.hostname.length > 0;
  } catch {
    return false;
  }
}

/** An input checked but not stored yet: one of our media, or fetched bytes. */
type Loaded = { own: InputImage } | { data: Buffer; contentType: string };

/**
 * Turns the URLs of a request into input images in our store, so the provider (and a restart) always finds
 * them: our own media by id, anything else fetched once and judged by its bytes. Every URL of a request is
 * checked before any copy is stored, so a refused request leaves no file behind. `field` names the request
 * field in messages.
 */
export interface InboundImages {
  /**
   * One URL as an input image in our store; a 400 naming `field` when the URL is unusable, cannot be
   * fetched, is not an image or is past the limits.
   */
  resolve(url: string, field: string): Promise<InputImage>;
  /** Resolves several URLs at once; `field` gets the index, e.g. `image_urls[2]`. */
  resolveAll(urls: string[], field: string): Promise<InputImage[]>;
}

/** Inbound images checked against `deps.limits` and kept in `deps.store`. */
export function createInboundImages(deps: InboundImagesDeps): InboundImages {
  /**
   * Refuses an image whose header declares no size, or a size past the limits: before the image is kept, so
   * nothing downstream (the provider, the sandbox's compositing) ever decodes it.
   */
  function checkSize(size: ImageSize, field: string): void {
    if (size.status !== 'size') throw notAnImage(field);
    const breach = imageLimitBreach(size, deps.limits);
    if (breach) throw new MediaOverLimit('image', breach).forField(field);
  }

  /** `urlMessage`: the field's URL message (docs/errors.md), for a URL that is not usable at all. */
  async function load(url: string, field: string, urlMessage: string): Promise<Loaded> {
    const prefix = ownMediaPrefix(deps.publicBaseUrl);
    const mediaId = ownMediaId(url, deps.publicBaseUrl);
    if (mediaId === null) throw new AppError('bad_request', urlMessage);
    if (mediaId !== undefined) {
      const stored = await deps.store.stat(mediaId).catch(() => null);
      if (!stored || !EXTENSIONS[stored.contentType]) {
        throw new AppError('bad_request', `${field} is not an image in this service's media`);
      }
      // Our media came in through these limits or from a provider, but perhaps under a higher limit.
      checkSize(await headerSize(await deps.store.open(mediaId)), field);
      return { own: { mediaId, url: prefix + mediaId, contentType: stored.contentType } };
    }
    let fetched: { contentType: string; data: Buffer };
    try {
      fetched = await deps.fetchImage(url);
    } catch (error) {
      throw new AppError('bad_request', `${field} could not be fetched: ${(error as Error).message}`);
    }
    const contentType = sniffImageType(fetched.data);
    if (!contentType) throw notAnImage(field);
    // The whole file is here: a header that needs more bytes is cut short.
    checkSize(readImageSize(fetched.data), field);
    return { data: fetched.data, contentType };
  }

  async function keep(loaded: Loaded): Promise<InputImage> {
    if ('own' in loaded) return loaded.own;
    const mediaId = deps.newMediaId(EXTENSIONS[loaded.contentType]!);
    await deps.store.put(mediaId, loaded.data, loaded.contentType);
    const url = ownMediaPrefix(deps.publicBaseUrl) + mediaId;
    return { mediaId, url, contentType: loaded.contentType, fetched: true };
  }

  return {
    resolve: async (url, field) => keep(await load(url, field, `${field} must be a https URL`)),
    async resolveAll(urls, field) {
      const message = `${field} items must be https URLs`;
      const loaded = await Promise.all(urls.map((url, index) => load(url, `${field}[${index}]`, message)));
      return Promise.all(loaded.map(keep));
    },
  };
}

function notAnImage(field: string): AppError {
  return new AppError('bad_request', `${field} is not a PNG, JPEG, WebP or GIF image`);
}

/**
 * The size an image's header declares, reading `stream` only as far as the header goes (never past
 * `INBOUND_IMAGE_MAX_BYTES`); the stream is closed after.
 */
async function headerSize(stream: Readable): Promise<ImageSize> {
  const chunks: Buffer[] = [];
  let read = 0;
  let wanted = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      read += chunk.length;
      if (read < wanted) continue;
      const size = readImageSize(Buffer.concat(chunks));
      if (size.status !== 'need') return size;
      wanted = size.bytes;
      if (wanted > INBOUND_IMAGE_MAX_BYTES) break;
    }
    return { status: 'invalid' };
  } finally {
    stream.destroy();
  }
}

/** Removes the input copies fetched for a job (it was refused, abandoned or expired); our own media stay. */
export async function discardFetchedInputs(store: MediaStore, generation: Generation): Promise<void> {
  const copies = inputImages(generation).filter((image) => image.fetched);
  await Promise.all(copies.map((image) => store.delete(image.mediaId).catch(() => undefined)));
}
