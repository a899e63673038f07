import { defineActor } from './runtime/define.ts';
import { actorClient, type ActorClient } from './runtime/client.ts';
import type { ActorSystem } from './runtime/system.ts';
import type { ProjectActorPorts } from './project-commit.ts';
import { AssetCommands, assetHandlers } from './project-assets.ts';
import { EditCommands, editHandlers } from './project-edits.ts';
import { ExportCommands, exportHandlers } from './project-exports.ts';
import { DeleteProjectCommand, TurnCommands, turnHandlers } from './project-turns.ts';

/**
 * The project actor (key: project id) owns a project's timeline, library, context and turn queue
 * (docs/architecture.md, Actors): every change, an agent's or a direct edit, is one of its commands, applied
 * in order on any node; it bumps `revision` and gives each event its `seq` (docs/editor.md, Events).
 * Handlers only record: the agent, the provider and ffmpeg run outside it.
 */
export const PROJECT_ACTOR = 'project';

export const projectActor = defineActor<ProjectActorPorts>()({
  kind: PROJECT_ACTOR,
  commands: {
    ...EditCommands,
    ...TurnCommands,
    ...ExportCommands,
    ...AssetCommands,
    delete_project: DeleteProjectCommand,
  },
  handlers: { ...editHandlers, ...turnHandlers, ...exportHandlers, ...assetHandlers },
});

/**
 * The typed way services talk to project actors. Mapped over the handlers so that each method keeps its
 * handler's declaration: "go to definition" on `commands.add_clip(…)` lands on `add_clip` in `editHandlers`.
 */
export type ProjectCommands = {
  [Name in keyof typeof projectActor.handlers]: ActorClient<typeof projectActor>[Name];
};

export const projectCommands = (system: ActorSystem): ProjectCommands => actorClient(system, projectActor);
