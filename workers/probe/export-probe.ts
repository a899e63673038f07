// The probe of an export's sources: the same checks and single ffprobe run as an upload's probe (probe.ts:
// magic bytes, completeness, forced demuxer, file/pipe protocols only, niced and time-limited), read for what
// the render needs to plan its filters: codecs, stored size, frame rate, pixel format, rotation.
import type { ExportSource } from '../export/plan.ts';
import { frameRate } from './header-limits.ts';
import {
  interpretProbe,
  mainStreams,
  probeChecked,
  unsupportedMedia,
  type MediaProbeOptions,
} from './probe.ts';
import type { ProbeJson, ProbeStream } from './probe-json.ts';
import type { SniffedContainer } from './sniff.ts';

/**
 * What the staged source file at `path` is, for an export, or the 415 `AppError` of `unsupportedMedia` (the
 * workspace turns it into 422 `corrupt_source`). Kinds follow `probeFile`: cover art does not make a video.
 */
export async function probeExportSource(path: string, options: MediaProbeOptions): Promise<ExportSource> {
  return probeChecked(path, options, (json, sniffed) => exportSource(path, json, sniffed));
}

function exportSource(path: string, json: ProbeJson, sniffed: SniffedContainer): ExportSource {
  // The upload's rules decide the kind and refuse what has no picture, no sound or no duration.
  const { kind } = interpretProbe(json, sniffed);
  const { demuxer } = sniffed;
  if (kind === 'image') return { path, demuxer, kind, durationSec: null };
  const { video, audio } = mainStreams(json);
  return {
    path,
    demuxer,
    kind,
    // interpretProbe has refused a missing, zero or unreadable duration.
    durationSec: Number(json.format?.duration),
    ...(kind === 'video' && video ? { video: videoOf(video) } : {}),
    ...(audio ? { audio: audioOf(audio) } : {}),
  };
}

function videoOf(stream: ProbeStream): NonNullable<ExportSource['video']> {
  const { width, height } = stream;
  if (!isPositiveInteger(width) || !isPositiveInteger(height))
    throw unsupportedMedia('a video without a size');
  const fps = frameRate(stream.avg_frame_rate) ?? frameRate(stream.r_frame_rate);
  if (fps === undefined) throw unsupportedMedia('a video without a frame rate');
  return {
    codec: named(stream.codec_name, 'a video without a codec'),
    width,
    height,
    fps,
    pixFmt: named(stream.pix_fmt, 'a video without a pixel format'),
    rotation: rotationOf(stream),
  };
}

function audioOf(stream: ProbeStream): NonNullable<ExportSource['audio']> {
  const sampleRate = Number(stream.sample_rate);
  if (!isPositiveInteger(sampleRate)) throw unsupportedMedia('audio without a sample rate');
  if (!isPositiveInteger(stream.channels)) throw unsupportedMedia('audio without channels');
  return {
    codec: named(stream.codec_name, 'audio without a codec'),
    sampleRate,
    channels: stream.channels,
  };
}

/**
 * Display rotation, 0/90/180/270, in the display matrix's counter-clockwise sense (what ffprobe prints as the
 * side data's `rotation` and `-display_rotation` sets). Old ffprobe builds print only the `rotate` tag, which
 * counts clockwise, so it is negated; anything between right angles goes to the nearest one.
 */
function rotationOf(stream: Pick<ProbeStream, 'side_data_list' | 'tags'>): number {
  const matrix = stream.side_data_list?.find((data) => data.rotation !== undefined)?.rotation;
  const degrees = matrix !== undefined ? Number(matrix) : -Number(stream.tags?.rotate ?? 0);
  if (!Number.isFinite(degrees)) return 0;
  const quarter = ((Math.round(degrees / 90) % 4) + 4) % 4;
  return quarter * 90;
}

function named(value: string | undefined, missing: string): string {
  if (typeof value !== 'string' || value === '' || value === 'unknown') throw unsupportedMedia(missing);
  return value;
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}
