// The export worker: its builders, the runner and the Piscina task (DESIGN.md §5.1: named exports only).
export { NO_USER_METADATA, RENDER_GLOBALS, exportCommand, soundAndFileArgs } from './command.ts';
export {
  concatList,
  concatQuote,
  fastPathBlockers,
  fastPathCommands,
  fastPathEligible,
  type FastPathCommands,
  type FastPathFiles,
} from './fast-path.ts';
export {
  OPTIONAL_FILTERS,
  REQUIRED_FILTERS,
  detectFilterSupport,
  filterSupport,
  parseFilterList,
} from './filter-support.ts';
export { ffmpegSeconds, inputArgs } from './input-args.ts';
export { SHORT_SIDE_PX, outputSize } from './output-size.ts';
export { placementFilters } from './placement.ts';
export { clipFrames, pictureDurationSec, pictureGraph } from './picture-graph.ts';
export {
  PICTURE_SOUND,
  pictureCarriesSound,
  pictureInput,
  pictureSoundLabel,
  pictureTimeline,
  soundInput,
  type ExportPlan,
  type ExportSource,
  type FilterSupport,
  type OutputSpec,
  type PictureClip,
  type SoundClip,
} from './plan.ts';
export { ProgressParser, parseProgress, type ProgressUpdate } from './progress.ts';
export { LOUDNESS, SOUND_OUT, SOUND_SAMPLE_RATE, soundGraph, type PictureSound } from './sound-graph.ts';
export {
  DEFAULT_NICENESS,
  STDERR_TAIL_BYTES,
  runFfmpeg,
  type RunFfmpegOptions,
  type RunResult,
} from './runner.ts';
export { exportTask, type ExportPoolMessage, type ExportTask, type ExportWorkerMessage } from './worker.ts';
