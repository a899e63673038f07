import { Readable } from 'node:stream';
import { ErrorSchema } from '../../schemas/common.ts';
import {
  AppError,
  type ByteRange,
  type MediaStore,
  type StoredMedia,
  StreamedBody,
  RawText,
  defineRoute,
  reply,
  type RouteDefinition,
} from '../platform/index.ts';
import { MediaParams } from '../../schemas/media.ts';

/** What a `Range` header asks of a file of a given size. */
export type RangeRequest =
  { kind: 'whole' } | { kind: 'range'; range: ByteRange } | { kind: 'unsatisfiable' };

const SINGLE_RANGE = /^bytes=(\d*)-(\d*)$/;

/**
 * Reads a `Range` header (RFC 9110 §14.2) for a file of `size` bytes: `bytes=a-b`, `a-` and `-n`.
 * Anything else — no header, another unit, bad syntax, `b < a`, several ranges — is answered with the
 * whole file, as the RFC allows (several ranges would need multipart/byteranges: a documented simplification).
 */
export function parseRange(header: string | undefined, size: number): RangeRequest {
  const match = header === undefined ? null : SINGLE_RANGE.exec(header.replace(/\s+/g, ''));
  if (!match) return { kind: 'whole' };
  const [, first, last] = match as unknown as [string, string, string];
  if (first === '' && last === '') return { kind: 'whole' };
  if (first === '') {
    // Suffix: the last n bytes (all of them when n exceeds the size).
    const length = Number(last);
    if (length === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'range', range: { start: Math.max(0, size - length), end: size - 1 } };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Number(last);
  if (last !== '' && end < start) return { kind: 'whole' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'range', range: { start, end: Math.min(end, size - 1) } };
}

/** Weak comparison of an `If-None-Match` list with the file's ETag (`*` matches any file). */
function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim() === '*' || opaque(tag) === opaque(etag));
}

const CACHE_CONTROL = 'public, max-age=31536000, immutable'; // ids are never reused: content never changes

function mediaHeaders(media: StoredMedia): Record<string, string> {
  return {
    'content-type': media.contentType,
    etag: media.etag,
    'last-modified': media.createdAt.toUTCString(),
    'cache-control': CACHE_CONTROL,
    'accept-ranges': 'bytes',
    'x-content-type-options': 'nosniff',
  };
}

/**
 * `GET /media/:file` (and HEAD) — no auth: ids are unguessable. Streams the file with its ETag; `Range`
 * → 206 or 416; a matching `If-None-Match` → 304; an `If-Range` that is not the current ETag → the whole
 * file. Anything that is not a media id is a 404 before the store is asked (no path reaches a disk).
 */
export function mediaRoute(store: MediaStore): RouteDefinition {
  return defineRoute({
    method: 'GET',
    path: '/media/:file',
    params: MediaParams,
    auth: { kind: 'none' },
    tags: ['media'],
    summary: 'Download stored media (supports Range requests)',
    responses: {
      200: { description: 'The whole file' },
      206: { description: 'The requested byte range' },
      304: { description: 'Not modified (If-None-Match matched the ETag)' },
      404: { description: 'Media not found', schema: ErrorSchema },
      416: { description: 'Range not satisfiable', schema: ErrorSchema },
    },
    handle: async (ctx) => {
      const id = ctx.params.file;
      const media = await store.stat(id);
      if (!media) throw new AppError('not_found', 'Media not found');
      const headers = mediaHeaders(media);
      if (noneMatch(ctx.headers['if-none-match'], media.etag)) return reply(304, new RawText(''), headers);

      const ifRange = ctx.headers['if-range'];
      const asked =
        ifRange === undefined || ifRange.trim() === media.etag
          ? parseRange(ctx.headers.range, media.size)
          : { kind: 'whole' as const };
      if (asked.kind === 'unsatisfiable') {
        return reply(416, { error: 'Range not satisfiable' }, { 'content-range': `bytes */${media.size}` });
      }
      const range = asked.kind === 'range' ? asked.range : undefined;
      const length = range ? range.end - range.start + 1 : media.size;
      if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${media.size}`;
      // HEAD needs the headers only: no file is opened.
      const skip = ctx.method === 'HEAD' || length === 0;
      const body = new StreamedBody(skip ? Readable.from([]) : await store.open(id, range), length);
      return reply(range ? 206 : 200, body, headers);
    },
  });
}
