import Type from 'typebox';

// The only shape a media id may have: no separators, no dots but the one before the extension, so an id is
// always a plain file name (no path traversal) and never collides with a store's own files (`*.meta.json`).
export const MEDIA_ID_PATTERN = '^med_[0-9A-Za-z]{24}\\.[a-z0-9]{1,8}$';

/** `GET /media/:file`: anything that is not a media id is not found before the store is asked. */
export const MediaParams = Type.Object({
  file: Type.String({ pattern: MEDIA_ID_PATTERN, errorMessage: 'Media not found' }),
});
