import { AppError, type MetricsRegistry } from '../platform/index.ts';
import type { ExportQuality } from '../../schemas/timeline-terms.ts';
import { exportErrorCode } from './export-errors.ts';

// What exports count on /metrics (docs/operator.md, Metrics): how each export call ended, and the encoder's
// time against the video it made, whose ratio (encode seconds per output second) is what an export costs.

/** How an export call ended: made, answered from the stored export of an unchanged timeline, or an error. */
export type ExportOutcome = 'completed' | 'reused' | 'project_gone' | 'failed' | ExportErrorCodeLabel;
type ExportErrorCodeLabel = NonNullable<ReturnType<typeof exportErrorCode>>;

export interface ExportMetrics {
  /** One export call answered, by its quality and outcome. */
  answered(quality: ExportQuality, outcome: ExportOutcome): void;
  /** One render that made a video: the seconds its encoding ran, and the seconds of video it made. */
  encoded(quality: ExportQuality, encodeSec: number, outputSec: number): void;
  /** A segmented render's segments: those it encoded, and those the cache gave it. */
  segments(encoded: number, reused: number): void;
  /** A segmented render's sound: mixed, or given by the cache (the picture alone changed). */
  sound(reused: boolean): void;
}

export function createExportMetrics(metrics: MetricsRegistry): ExportMetrics {
  const exports = metrics.counter({
    name: 'mf_exports_total',
    help: 'Export calls answered by this process, by quality and outcome (completed, reused or the error code).',
    labels: ['quality', 'outcome'],
  });
  const encodeSeconds = metrics.counter({
    name: 'mf_export_encode_seconds_total',
    help: 'Seconds exports spent encoding on this process (wall time of the ffmpeg run, queue wait excluded).',
    labels: ['quality'],
  });
  const outputSeconds = metrics.counter({
    name: 'mf_export_output_seconds_total',
    help: 'Seconds of video the exports of this process made.',
    labels: ['quality'],
  });
  const segments = metrics.counter({
    name: 'mf_export_segments_total',
    help: 'Picture segments of segmented exports on this process: encoded, or reused from the segment cache.',
    labels: ['result'],
  });
  const sounds = metrics.counter({
    name: 'mf_export_sounds_total',
    help: 'Sounds of segmented exports on this process: mixed, or reused from the segment cache.',
    labels: ['result'],
  });
  return {
    answered: (quality, outcome) => exports.inc([quality, outcome]),
    sound: (reused) => sounds.inc([reused ? 'reused' : 'mixed']),
    segments(encoded, reused) {
      segments.inc(['encoded'], encoded);
      segments.inc(['reused'], reused);
    },
    encoded(quality, encodeSec, outputSec) {
      encodeSeconds.inc([quality], encodeSec);
      outputSeconds.inc([quality], outputSec);
    },
  };
}

/** The outcome label of a failed export call: its export error code, a deleted project, or `failed`. */
export function failedOutcome(error: unknown): ExportOutcome {
  const code = exportErrorCode(error);
  if (code) return code;
  return error instanceof AppError && error.code === 'not_found' ? 'project_gone' : 'failed';
}
