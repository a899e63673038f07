import { createHash } from 'node:crypto';
import { randomBase62 } from '../core/ids.ts';
import { MEDIA_ID_PATTERN } from '../../../schemas/media.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

const RANDOM_LENGTH = 24; // 24 base62 characters ≈ 143 random bits: unguessable
const EXTENSION = /^[a-z0-9]{1,8}$/;
const MEDIA_ID = new RegExp(MEDIA_ID_PATTERN);

/** A fresh media id such as `med_<24 base62>.mp4`; `extension` is lower-case letters and digits (a dot is dropped). */
export function newMediaId(extension: string): string {
  const ext = extension.replace(/^\./, '').toLowerCase();
  if (!EXTENSION.test(ext)) throw new Error(`invalid media extension: ${JSON.stringify(extension)}`);
  return `med_${randomBase62(RANDOM_LENGTH)}.${ext}`;
}

/** True exactly for text shaped like an id from `newMediaId`. */
export function isMediaId(text: string): boolean {
  return MEDIA_ID.test(text);
}

/**
 * A media id derived from `seed` (say, the job an asset copies): the same seed always names the same file, so
 * a repeated copy overwrites instead of leaving an orphan. As unguessable as the seed (a random job id).
 */
export function derivedMediaId(seed: string, extension: string): string {
  const ext = extension.replace(/^\./, '').toLowerCase();
  if (!EXTENSION.test(ext)) throw new Error(`invalid media extension: ${JSON.stringify(extension)}`);
  const digest = createHash('sha256').update(`media:${seed}`).digest();
  let id = '';
  for (const byte of digest) {
    if (byte < 248) id += BASE62[byte % 62];
    if (id.length === RANDOM_LENGTH) break;
  }
  return `med_${id}.${ext}`;
}

/** The extension a stored file gets by its content type (what the bytes were judged to be), else `bin`. */
const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'video/mp4': 'mp4',
  'video/quicktime': 'mov',
  'audio/mpeg': 'mp3',
  'audio/wav': 'wav',
  'audio/aac': 'aac',
  'audio/mp4': 'm4a',
};

export const extensionFor = (contentType: string): string => EXTENSIONS[contentType] ?? 'bin';
