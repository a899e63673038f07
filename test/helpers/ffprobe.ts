import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';

const run = promisify(execFile);

/** One decoded stream of a media file. */
export interface ProbedStream {
  codecType: string;
  codecName: string;
  width?: number;
  height?: number;
}

/** What ffprobe says about a media file. */
export interface ProbedMedia {
  /** The container's duration (0 for a still picture). */
  durationSeconds: number;
  /** The demuxer's name, e.g. `mov,mp4,m4a,3gp,3g2,mj2` or `png_pipe`. */
  format: string;
  streams: ProbedStream[];
}

let ffprobe: string | undefined;

/** Probes a file with the resolved ffprobe (`FFPROBE_PATH`/`FFMPEG_PATH` honoured); rejects if it cannot be decoded. */
export async function probeMedia(path: string): Promise<ProbedMedia> {
  ffprobe ??= resolveFfmpeg({
    ffmpegPath: process.env.FFMPEG_PATH,
    ffprobePath: process.env.FFPROBE_PATH,
  }).ffprobe;
  const { stdout } = await run(
    ffprobe,
    ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', `file:${path}`],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const parsed = JSON.parse(stdout) as {
    format?: { duration?: string; format_name?: string };
    streams?: Array<{ codec_type?: string; codec_name?: string; width?: number; height?: number }>;
  };
  return {
    durationSeconds: Number(parsed.format?.duration ?? 0) || 0,
    format: parsed.format?.format_name ?? '',
    streams: (parsed.streams ?? []).map((stream) => ({
      codecType: stream.codec_type ?? '',
      codecName: stream.codec_name ?? '',
      ...(stream.width !== undefined ? { width: stream.width } : {}),
      ...(stream.height !== undefined ? { height: stream.height } : {}),
    })),
  };
}
