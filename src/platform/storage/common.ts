import { createHash, type Hash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { AppError } from '../core/errors.ts';
import { isMediaId } from './media-id.ts';

/**
 * Counts and hashes the bytes of a write, and fails with a 413 AppError as soon as more than `maxBytes`
 * arrive — before the chunk that crosses the limit is stored, so a store can give up mid-write.
 */
export class ByteMeter {
  size = 0;
  private readonly hash: Hash = createHash('sha256');

  constructor(private readonly maxBytes = Number.POSITIVE_INFINITY) {}

  add(chunk: Buffer): void {
    this.size += chunk.byteLength;
    if (this.size > this.maxBytes) throw tooLarge(this.maxBytes);
    this.hash.update(chunk);
  }

  /** The strong ETag of what went through (quoted base64url SHA-256); call once, at the end. */
  etag(): string {
    return `"${this.hash.digest('base64url')}"`;
  }
}

/**
 * Feeds `data` chunk by chunk through `meter` to `write`, one write at a time: when it fails, no write is
 * still in flight, so the caller's clean-up cannot race one (a pipe to a stream could).
 */
export async function copyMetered(
  data: Readable | Buffer,
  meter: ByteMeter,
  write: (chunk: Buffer) => Promise<void>,
): Promise<void> {
  const source = Buffer.isBuffer(data) ? [data] : data;
  for await (const chunk of source as AsyncIterable<Buffer | string>) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    meter.add(bytes);
    if (bytes.byteLength > 0) await write(bytes);
  }
}

/** The error every store raises past `maxBytes`. */
export function tooLarge(maxBytes: number): AppError {
  return new AppError('payload_too_large', `Media larger than ${maxBytes} bytes`);
}

/** The error every store raises when asked to read a file it does not have. */
export function mediaNotFound(): AppError {
  return new AppError('not_found', 'Media not found');
}

/** Refuses ids that `newMediaId` could not have produced (they would name other files). */
export function assertMediaId(id: string): void {
  if (!isMediaId(id)) throw new AppError('bad_request', `Invalid media id: ${JSON.stringify(id)}`);
}

/** Checks an inclusive range against the file size (both stores accept exactly the same ranges). */
export function assertRange(range: { start: number; end: number }, size: number): void {
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start || end >= size) {
    throw new AppError('bad_request', `Byte range ${start}-${end} is outside the file (size ${size})`);
  }
}
