import Type, { type Static } from 'typebox';
import { literalUnion } from '../schemas/common.ts';
import { AppError } from '../src/platform/core/index.ts';
import type { AssetRecord } from './ports/assets-repository.ts';
import { commit, loadProject, replayed, type Committed, type ProjectContext } from './project-commit.ts';
import { toAssetView } from './project-views.ts';

// The project actor's export commands (the `export.*` events: docs/editor.md, Export events). An export reads
// the timeline and renders outside the actor; it only announces itself here, so its events take their place
// in the project's seq among edits and turns. None of them changes the timeline, so none bumps `revision`: an
// unchanged `(video, revision, fit)` is still recognised after its own export was added to the library.

const opId = Type.String({ minLength: 1, maxLength: 200 });

export const ExportCommands = {
  /** `export.started`, `export.progress` or `export.failed` (`data` carries `export_id`). */
  export_event: Type.Object({
    op_id: opId,
    video_id: Type.String(),
    event: literalUnion(['export.started', 'export.progress', 'export.failed'] as const),
    data: Type.Record(Type.String(), Type.Unknown()),
  }),
  /** The stored result: its asset (`source: export`), `asset.created` and `export.completed`. */
  export_completed: Type.Object({
    op_id: opId,
    video_id: Type.String(),
    export_id: Type.String(),
    duration_sec: Type.Number(),
    asset: Type.Object({
      id: Type.String(),
      user_id: Type.String(),
      media_id: Type.String(),
      metadata: Type.Record(Type.String(), Type.Unknown()),
    }),
  }),
};

type Msg<Name extends keyof typeof ExportCommands> = Static<(typeof ExportCommands)[Name]>;

export const exportHandlers = {
  export_event: async (context: ProjectContext, message: Msg<'export_event'>) => {
    const project = await loadProject(context);
    const again = replayed<Committed<{ ok: true }>>(project, context.opId);
    if (again) return again;
    return commit(context, project, {
      next: project,
      turnId: null,
      bumpsRevision: false,
      events: [{ type: message.event, video_id: message.video_id, data: message.data }],
      result: { ok: true as const },
    });
  },

  export_completed: async (context: ProjectContext, message: Msg<'export_completed'>) => {
    const project = await loadProject(context);
    const again = replayed<Committed<{ asset: ReturnType<typeof toAssetView> }>>(project, context.opId);
    if (again) return again;
    const existing = await context.ports.assets.get(message.asset.id);
    if (existing && existing.project_id !== project.id) {
      throw new AppError('conflict', 'Asset id belongs to another project');
    }
    const asset: AssetRecord = existing ?? {
      ...message.asset,
      project_id: project.id,
      kind: 'video',
      source: 'export',
      content_type: 'video/mp4',
      created_at: new Date(context.clock.now()),
    };
    const view = toAssetView(asset, context.ports.mediaUrl);
    return commit(context, project, {
      next: project,
      turnId: null,
      bumpsRevision: false,
      assets: [asset],
      events: [
        // No `revision`: it is unchanged, and a client that read the state at it may not have this asset yet
        // (docs/editor.md: add an export's asset by id).
        { type: 'asset.created', video_id: null, data: { asset: view } },
        {
          type: 'export.completed',
          video_id: message.video_id,
          data: {
            export_id: message.export_id,
            asset_id: asset.id,
            video_url: view.url,
            duration_sec: message.duration_sec,
          },
        },
      ],
      result: { asset: view },
    });
  },
};
