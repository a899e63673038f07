import { randomBase62 } from './ids.ts';

const RANDOM_LENGTH = 24; // 24 base62 characters ≈ 143 random bits: unguessable
const EXTENSION = /^[a-z0-9]{1,8}$/;
// The only shape a media id may have: no separators, no dots but the one before the extension, so an id is
// always a plain file name (no path traversal) and never collides with a store's own files (`*.meta.json`).
export const MEDIA_ID_PATTERN = '^med_[0-9A-Za-z]{24}\\.[a-z0-9]{1,8}$';
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
