export { exportFiles } from './export/command.ts';
export {
  listFilters,
  missingFeatureFilters,
  soundFilterReport,
  unsupportedFeatures,
  type UnsupportedFeature,
} from './export/filter-support.ts';
export { outputSize } from './export/output-size.ts';
export { fastPathEligible } from './export/fast-path.ts';
export { canSegment, planSegments } from './export/segments.ts';
export { soundKey } from './export/segment-command.ts';
export type {
  ExportPlan,
  ExportSource,
  FilterSupport,
  OutputSpec,
  PictureClip,
  SoundClip,
  TextOverlay,
} from './export/plan.ts';
export type {
  ExportChildren,
  ExportPool,
  ExportRunOptions,
  ExportWorkspace,
  ExportWorkspaces,
  SegmentedWork,
} from './export/work-order.ts';
export type { ExportPoolMessage, ExportTask, ExportWorkerMessage } from './export/worker.ts';
export { runFfmpeg, spawnFailure, type RunFfmpegOptions, type RunResult } from './ffmpeg/runner.ts';
export type { Waveform } from './pictures/peaks.ts';
export { renderPictures, type RenderedPictures, type RenderPicturesOptions } from './pictures/render.ts';
export { probeExportSource } from './probe/export-probe.ts';
export { frameRate } from './probe/header-limits.ts';
export { readImageSize, type ImageSize } from './probe/image-size.ts';
export { sniffImageType } from './probe/image-type.ts';
export { imageLimitBreach, mediaLimits, MediaOverLimit, type MediaLimits } from './probe/media-limits.ts';
export {
  interpretProbe,
  mainStreams,
  probeChecked,
  probeFile,
  unsupportedMedia,
  type MediaProbeOptions,
  type ProbedMedia,
} from './probe/probe.ts';
export type { ProbeJson, ProbeStream } from './probe/probe-json.ts';
export type { ProbeOutcome, ProbeTask } from './probe/probe-worker.ts';
export { SNIFF_BYTES, sniffContainer, type SniffedContainer } from './probe/sniff.ts';
