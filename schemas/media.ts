import Type from 'typebox';
import { MEDIA_ID_PATTERN } from '../src/domain/media-id.ts';

/** `GET /media/:file`: anything that is not a media id is not found before the store is asked. */
export const MediaParams = Type.Object({
  file: Type.String({ pattern: MEDIA_ID_PATTERN, errorMessage: 'Media not found' }),
});
