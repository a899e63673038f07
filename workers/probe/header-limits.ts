import { open } from 'node:fs/promises';
import { readImageSize, type ImageSize } from './image-size.ts';
import { videoLimitBreach, type LimitBreach, type MediaLimits } from './media-limits.ts';
import type { ProbeJson, ProbeStream } from './probe-json.ts';

// What the probe of user media reads to hold files to the media limits (docs/editor.md "Media limits"): an
// image's header bytes, read here before any child process sees the file, and a video's stream values, as
// ffprobe prints them from the container.

/** The first read of an image file: every PNG, WebP and GIF header, and most JPEG ones, fit. */
const FIRST_READ_BYTES = 64 * 1024;
/**
 * How far into a JPEG its frame header is looked for (metadata segments come first, 64 KiB at most each):
 * one that is further than this is refused rather than read into memory.
 */
const MAX_HEADER_BYTES = 16 * 1024 * 1024;

/** The size the header of the image file at `path` declares (`readImageSize`, over as many bytes as it needs). */
export async function readImageFileSize(path: string): Promise<ImageSize> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const available = Math.min(size, MAX_HEADER_BYTES);
    let length = Math.min(available, FIRST_READ_BYTES);
    for (;;) {
      const head = Buffer.alloc(length);
      const { bytesRead } = await file.read(head, 0, length, 0);
      const result = readImageSize(head.subarray(0, bytesRead));
      if (result.status !== 'need') return result;
      if (result.bytes > available || bytesRead < length) return { status: 'invalid' };
      // Doubling keeps the re-reads of a long chain of metadata segments within twice the final length.
      length = Math.min(available, Math.max(result.bytes, length * 2));
    }
  } finally {
    await file.close();
  }
}

/** The video streams of a probe, cover art aside (one picture, judged like the file it came in). */
function videoStreams(json: ProbeJson): ProbeStream[] {
  return (json.streams ?? []).filter(
    (stream) => stream.codec_type === 'video' && stream.disposition?.attached_pic !== 1,
  );
}

/** The first video limit a probed file breaks: a stream's size or frame rate, or the file's duration. */
export function videoBreach(json: ProbeJson, limits: MediaLimits): LimitBreach | null {
  const streams = videoStreams(json);
  if (streams.length === 0) return null;
  for (const stream of streams) {
    const fps = frameRate(stream.avg_frame_rate) ?? frameRate(stream.r_frame_rate);
    const breach = videoLimitBreach(
      { width: stream.width, height: stream.height, ...(fps !== undefined ? { fps } : {}) },
      limits,
    );
    if (breach) return breach;
  }
  const durationSec = Number(json.format?.duration);
  return Number.isFinite(durationSec) ? videoLimitBreach({ durationSec }, limits) : null;
}

/**
 * Whether a video stream has no pixel format: ffprobe found none because no frame decoded, which under
 * `-max_pixels` is also what a container that understates its picture's size looks like.
 */
export function hasUndecodedVideo(json: ProbeJson): boolean {
  return videoStreams(json).some((stream) => !stream.pix_fmt || stream.pix_fmt === 'unknown');
}

/** A rate as ffprobe prints it: `30/1` → 30, `30000/1001` → 29.97…; `0/0` (unknown) and anything unreadable → undefined. */
export function frameRate(rate: string | undefined): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(?:\/(\d+))?$/.exec(rate?.trim() ?? '');
  if (!match) return undefined;
  const fps = Number(match[1]) / Number(match[2] ?? 1);
  return Number.isFinite(fps) && fps > 0 ? fps : undefined;
}
