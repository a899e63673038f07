import { AppError } from '../../src/platform/core/index.ts';

// How large media from users may be (docs/editor.md "Media limits"): the work and memory a file costs grow
// with its pixels, frames and length, and a few hundred kilobytes can declare a picture of gigabytes. Files
// past these limits are refused from their headers, before anything decodes them.

/** The limits media from users must keep to. */
export interface MediaLimits {
  /** Width × height of an image (`IMAGE_MAX_PIXELS`). */
  imageMaxPixels: number;
  /** Longest side of an image, in pixels. */
  imageMaxSide: number;
  /** Longest side of a video, in pixels. */
  videoMaxSide: number;
  /** Highest frame rate of a video, in frames per second. */
  videoMaxFps: number;
  /** Longest video, in seconds. */
  videoMaxDurationSec: number;
}

/** The fixed limits, with `IMAGE_MAX_PIXELS` from the configuration. */
export function mediaLimits(imageMaxPixels: number): MediaLimits {
  return {
    imageMaxPixels,
    imageMaxSide: 16_384,
    videoMaxSide: 4_096,
    videoMaxFps: 120,
    videoMaxDurationSec: 3_600,
  };
}

/**
 * The largest picture (in pixels) a probe of user media may decode: any image within the limits, and any
 * video frame. A file whose header understates its picture fails its decode rather than allocating more.
 */
export function probeMaxPixels(limits: MediaLimits): number {
  return Math.max(limits.imageMaxPixels, limits.videoMaxSide ** 2);
}

/** Which limit a file breaks, in words: `<subject> <problem>: <detail>` (`image_url is too large: …`). */
export interface LimitBreach {
  problem: 'is too large' | 'has too high a frame rate' | 'is too long';
  detail: string;
}

/** The limit an image of `width` × `height` breaks, or null. */
export function imageLimitBreach(
  size: { width: number; height: number },
  limits: MediaLimits,
): LimitBreach | null {
  const { width, height } = size;
  if (width > limits.imageMaxSide || height > limits.imageMaxSide)
    return {
      problem: 'is too large',
      detail: `${width}×${height} has a side over ${limits.imageMaxSide} pixels`,
    };
  if (width * height > limits.imageMaxPixels) {
    const detail = `${width}×${height} pixels is more than IMAGE_MAX_PIXELS (${limits.imageMaxPixels})`;
    return { problem: 'is too large', detail };
  }
  return null;
}

/**
 * The limit a video breaks, or null; values its header does not give are not judged here. Rates and durations
 * are judged as shown, to the thousandth, so a message never reads "3600 seconds is more than 3600".
 */
export function videoLimitBreach(
  video: { width?: number; height?: number; fps?: number; durationSec?: number },
  limits: MediaLimits,
): LimitBreach | null {
  const { width = 0, height = 0 } = video;
  if (width > limits.videoMaxSide || height > limits.videoMaxSide)
    return {
      problem: 'is too large',
      detail: `${width}×${height} has a side over ${limits.videoMaxSide} pixels`,
    };
  const fps = video.fps === undefined ? 0 : thousandths(video.fps);
  if (fps > limits.videoMaxFps)
    return {
      problem: 'has too high a frame rate',
      detail: `${fps} frames per second is more than ${limits.videoMaxFps}`,
    };
  const seconds = video.durationSec === undefined ? 0 : thousandths(video.durationSec);
  if (seconds > limits.videoMaxDurationSec)
    return {
      problem: 'is too long',
      detail: `${seconds} seconds is more than ${limits.videoMaxDurationSec}`,
    };
  return null;
}

/** Rounded to the thousandth: `119.88`, `3602`. */
function thousandths(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/**
 * Media past a limit: as it is, the 415 answer of uploads and imports
 * (`{ error: "unsupported_media", message: "The image is too large: …" }`); `forField` gives the 400 of a
 * request field (`image_url is too large: …`).
 */
export class MediaOverLimit extends AppError {
  constructor(
    readonly kind: 'image' | 'video',
    readonly breach: LimitBreach,
  ) {
    super('unsupported_media', 'unsupported_media', {
      message: `The ${kind} ${breach.problem}: ${breach.detail}`,
    });
  }

  /** The 400 of the request field the file came from. */
  forField(field: string): AppError {
    return new AppError('bad_request', `${field} ${this.breach.problem}: ${this.breach.detail}`);
  }
}
