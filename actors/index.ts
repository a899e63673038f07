export type { AssetRecord, AssetsRepository } from './ports/assets-repository.ts';
export type { CreditChangeResult, CreditLedger, LedgerEntry } from './ports/credit-ledger.ts';
export type { EventHistory, EventsSince, ProjectEvent } from './ports/event-history.ts';
export type {
  ClipRecord,
  ProjectRecord,
  ProjectsRepository,
  ProjectSummary,
  VideoRecord,
} from './ports/projects-repository.ts';
export type { MessageRecord, ThreadRepository } from './ports/thread-repository.ts';
export {
  orderedClips,
  toAssetView,
  toClipView,
  toClipViews,
  toProjectView,
  toVideoView,
  type AssetView,
  type ClipView,
  type ProjectView,
  type VideoView,
} from './project-views.ts';
export { projectActor, projectCommands, type ProjectCommands } from './project.ts';
export { createInProcessEventBus } from './runtime/event-bus.ts';
export { createInProcessTransport } from './runtime/in-process.ts';
export { createActorSystem, type ActorSystem } from './runtime/system.ts';
export { userActor, userCredits, type UserCredits } from './user.ts';
