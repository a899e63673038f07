import type { Readable } from 'node:stream';
import type { StoredMedia } from '../storage/media-store.ts';
import type { ProbedMedia } from '../../../workers/index.ts';

// Media the service reads from users (uploads, imports, reference images) are hostile input
// (docs/architecture.md, Dependencies): they are probed before anything keeps them, and what they are is
// taken from the probe, never from a header.

/** A file taken in: stored under its probed content type. */
export interface IntakeResult {
  media: StoredMedia;
  probed: ProbedMedia;
}

/**
 * Takes media in (port). Every method stores nothing unless the bytes probe as allowed media; failures are
 * `AppError`s: 415 `unsupported_media` (not media we read, a playlist, a text file, a truncated file), 413
 * (more than `maxBytes`), 400 / 502 for a URL that is refused or cannot be fetched.
 */
export interface MediaIntake {
  /** Streams `source` (with backpressure, never whole in memory) to a private file, probes it, stores it. */
  fromStream(source: Readable, options: { maxBytes: number }): Promise<IntakeResult>;
  /** Fetches `url` through the guarded fetch (SSRF rules, size and time limits), then as `fromStream`. */
  fromUrl(url: string, options: { maxBytes: number; field: string }): Promise<IntakeResult>;
  /** Probes a file already in the media store (generated media, the service's own media URLs). */
  probeStored(mediaId: string): Promise<ProbedMedia>;
}
