// The one set of codec parameters every picture segment of an export is encoded with (segments.ts), so that
// the segments can be joined by stream copy into one valid H.264 stream. Pure: arguments only.
//
// Why each one: the concat demuxer keeps the first file's decoder configuration (avcC: SPS/PPS) for the
// whole stream, so every segment must produce the same parameter sets — same size, rate, pixel format,
// profile and level, B-frames and reference structure — and x264's `stitchable` stops it from tuning headers
// to a segment's content. Each segment starts on an IDR frame and its GOPs are closed, so no frame refers
// across a join. A fixed track timescale (90 kHz, a whole number of ticks per frame at the usual rates) keeps
// every segment's timestamps on the same grid.
import { videoEncoderArgs } from './command.ts';
import type { ExportPlan } from './work-order.ts';

/** The mp4 track timescale of every segment: ticks per second. */
export const SEGMENT_TIMESCALE = 90_000;

/** Whether `fps` frames fall on whole ticks of the segments' timescale (30, 25, 24, 60… yes; 29.97 no). */
export const fitsTimescale = (fps: number): boolean => fps > 0 && Number.isInteger(SEGMENT_TIMESCALE / fps);

/**
 * The video encoder arguments of a segment: the export's own encoder, preset and CRF for its quality
 * (`videoEncoderArgs`, so a segment looks like the whole-timeline render), plus what pins the stream's
 * parameter sets and GOP structure. `final`: High profile with x264 veryfast's 3 B-frames; `preview`:
 * ultrafast's Constrained Baseline features (no B-frames, no CABAC), stated as Baseline. Level 4.0 holds
 * 1080p30 and 720p60, the largest outputs the export makes.
 */
export function segmentCodecArgs(plan: Pick<ExportPlan, 'output'>): string[] {
  const { fps, quality } = plan.output;
  const preview = quality === 'preview';
  return [
    ...videoEncoderArgs(plan),
    ...['-profile:v', preview ? 'baseline' : 'high', '-level:v', '4.0'],
    ...['-bf', preview ? '0' : '3'],
    // Closed GOPs of at most 10 s; the first frame of every segment is a key frame (x264 always opens with an
    // IDR; the forced key frame says so where it is decided).
    ...['-flags', '+cgop', '-g', String(Math.round(fps * 10)), '-force_key_frames', 'expr:eq(n,0)'],
    ...['-x264-params', 'stitchable=1'],
    ...['-video_track_timescale', String(SEGMENT_TIMESCALE)],
  ];
}
