// What an asset's pictures are made from: the same checks and single ffprobe run as an upload's probe
// (workers/probe/probe.ts: magic bytes, completeness, forced demuxer, file and pipe protocols only, niced and
// time-limited), read for the streams the pictures need.
import type { AssetKind } from '../../schemas/editor-terms.ts';
import { frameRate } from '../probe/header-limits.ts';
import { interpretProbe, mainStreams, probeChecked, type MediaProbeOptions } from '../probe/probe.ts';
import type { ProbeStream } from '../probe/probe-json.ts';
import type { SniffedContainer } from '../probe/sniff.ts';

/** The fields of a stream this probe reads besides the shared ones. */
type Stream = ProbeStream & { index?: number; duration?: string };

/** A file's picture and sound, as the pictures need them. */
export interface PictureSource {
  path: string;
  sniffed: SniffedContainer;
  /** As the upload's probe judges it: cover art in an audio file does not make a video. */
  kind: AssetKind;
  /** The picture: an image's, or a video's main stream (null for audio). */
  picture: { stream: number; durationSec: number | null; fps: number | undefined } | null;
  /** Whether the file has a sound stream at all. */
  hasSound: boolean;
  /** The first sound stream, when it can be sliced (a file without one has no waveform). */
  sound: { stream: number; durationSec: number; sampleRate: number } | null;
}

/**
 * Probes the local file at `path` (a 415 `AppError` when it is not media we read). `options.limits` is
 * usually left out: stored media went through the limits when they came in.
 */
export async function probePictureSource(path: string, options: MediaProbeOptions): Promise<PictureSource> {
  return probeChecked(path, options, (json, sniffed) => {
    const { kind } = interpretProbe(json, sniffed);
    const { video, audio } = mainStreams(json) as { video?: Stream; audio?: Stream };
    const formatSec = positive(json.format?.duration);
    const picture =
      kind !== 'audio' && video && Number.isInteger(video.index)
        ? {
            stream: video.index!,
            // A video stream may end before the file (longer sound): its frames are taken within its own.
            durationSec: kind === 'image' ? null : (positive(video.duration) ?? formatSec ?? null),
            fps: frameRate(video.avg_frame_rate) ?? frameRate(video.r_frame_rate),
          }
        : null;
    const sampleRate = Number(audio?.sample_rate);
    const soundSec = positive(audio?.duration) ?? formatSec;
    const sound =
      audio && Number.isInteger(audio.index) && Number.isInteger(sampleRate) && sampleRate > 0 && soundSec
        ? { stream: audio.index!, durationSec: soundSec, sampleRate }
        : null;
    return { path, sniffed, kind, picture, hasSound: audio !== undefined, sound };
  });
}

function positive(text: string | undefined): number | undefined {
  const value = Number(text);
  return text !== undefined && Number.isFinite(value) && value > 0 ? value : undefined;
}
