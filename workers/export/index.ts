// The export worker's builders (DESIGN.md §5.1: named exports only). The runner and the pool arrive later.
export { exportCommand } from './command.ts';
export {
  OPTIONAL_FILTERS,
  REQUIRED_FILTERS,
  detectFilterSupport,
  filterSupport,
  parseFilterList,
} from './filter-support.ts';
export { ffmpegSeconds, inputArgs } from './input-args.ts';
export { SHORT_SIDE_PX, outputSize } from './output-size.ts';
export { clipFrames, pictureDurationSec, pictureGraph } from './picture-graph.ts';
export {
  pictureInput,
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
export { LOUDNESS, SOUND_OUT, SOUND_SAMPLE_RATE, soundGraph } from './sound-graph.ts';
