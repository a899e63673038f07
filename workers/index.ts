export { detectFilterSupport } from './export/filter-support.ts';
export { outputSize } from './export/output-size.ts';
export type {
  ExportPlan,
  ExportSource,
  FilterSupport,
  OutputSpec,
  PictureClip,
  SoundClip,
} from './export/plan.ts';
export type { RunResult } from './export/runner.ts';
export type {
  ExportChildren,
  ExportPool,
  ExportRunOptions,
  ExportWorkspace,
  ExportWorkspaces,
} from './export/work-order.ts';
export type { ExportPoolMessage, ExportTask, ExportWorkerMessage } from './export/worker.ts';
