// Media for the export tests that render with real ffmpeg: stills and a test video made from ffmpeg's lavfi
// sources, the `ExportSource` of each as the export's probe would describe it, and a picture clip of one with
// the plan's defaults.
import type { ExportSource, PictureClip } from '../../workers/export/work-order.ts';
import { ffmpegRun } from './media-analysis.ts';

/** A one-frame picture at `path` (a PNG) from the lavfi `source`, e.g. `color=c=red:s=320x180`. */
export const makeStill = (source: string, path: string) =>
  ffmpegRun(['-v', 'error', '-f', 'lavfi', '-i', source, '-frames:v', '1', path]);

/**
 * A 320×180 30 fps h264 test picture (`testsrc2`) with a 440 Hz tone of its own, `seconds` long, at `path`;
 * `soundArgs` choose how the tone is encoded (codec, channels, `-shortest`).
 */
export const makeTestVideo = (path: string, seconds: number, soundArgs: string[]) =>
  ffmpegRun([
    ...['-v', 'error', '-f', 'lavfi', '-i', `testsrc2=s=320x180:r=30:d=${seconds}`],
    ...['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${seconds}`],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', ...soundArgs, path],
  ]);

/** A still (made by `makeStill`) as an export source. */
export const stillSource = (path: string, contentId: string): ExportSource => ({
  path,
  contentId,
  demuxer: 'png_pipe',
  kind: 'image',
  durationSec: null,
});

/** A video made by `makeTestVideo` as an export source: its picture as made, its sound as `audio` says. */
export const videoSource = (
  path: string,
  contentId: string,
  durationSec: number,
  audio: { codec: string; channels: number },
): ExportSource => ({
  path,
  contentId,
  demuxer: 'mov',
  kind: 'video',
  durationSec,
  video: { codec: 'h264', width: 320, height: 180, fps: 30, pixFmt: 'yuv420p' },
  audio: { codec: audio.codec, sampleRate: 48_000, channels: audio.channels },
});

/** A clip of `source` from its start, at full volume; `more` sets the rest (speed, transition, trim…). */
export const pictureClip = (
  source: ExportSource,
  durationSec: number,
  more: Partial<PictureClip> = {},
): PictureClip => ({
  source,
  trimStartSec: 0,
  durationSec,
  volume: 1,
  ...more,
});
