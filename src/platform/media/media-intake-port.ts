import type { Readable } from 'node:stream';
import type { AssetKind } from '../../../schemas/editor-terms.ts';
import type { StoredMedia } from '../storage/media-store.ts';

// Media the service reads from users (uploads, imports, reference images) are hostile input
// (docs/architecture.md, Dependencies): they are probed before anything keeps them, and what they are is
// taken from the probe, never from a header.

/** What the probe found. */
export interface ProbedMedia {
  kind: AssetKind;
  /** From the probe: `image/png`, `image/jpeg`, `image/webp`, `video/mp4`, `video/quicktime`, `audio/mpeg`, `audio/wav`, `audio/aac`, `audio/mp4`. */
  contentType: string;
  /** The demuxer that read it (`mov`, `mp3`, `wav`, `aac`, `png_pipe`, `jpeg_pipe`, `webp_pipe`, ...). */
  format: string;
  duration_sec?: number;
  width?: number;
  height?: number;
}

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
