import Type, { type Static } from 'typebox';
import { AppError } from '../src/platform/core/index.ts';
import { commit, loadProject, replayed, type Committed, type ProjectContext } from './project-commit.ts';
import { toAssetView, type AssetView } from './project-views.ts';

// The project actor's command for what is learnt of an asset after it joined the library: its pictures
// (docs/editor.md, Pictures of assets), made outside the actor. Merging them is not an edit: the timeline and
// the library's members stay as they are, so the revision stays too (a client's `If-Match` is never made stale
// by pictures arriving), and `asset.updated` carries no `data.revision` (docs/editor.md, Events).

export const AssetCommands = {
  /** Sets the given keys of an asset's `metadata` and announces the asset (`asset.updated`). */
  asset_updated: Type.Object({
    op_id: Type.String({ minLength: 1, maxLength: 200 }),
    asset_id: Type.String(),
    metadata: Type.Record(Type.String(), Type.Unknown()),
  }),
};

type Msg<Name extends keyof typeof AssetCommands> = Static<(typeof AssetCommands)[Name]>;

/** Whether every given key already holds that value (a repeat changes nothing and announces nothing). */
function holds(metadata: Record<string, unknown>, additions: Record<string, unknown>): boolean {
  return Object.entries(additions).every(
    ([key, value]) => JSON.stringify(metadata[key]) === JSON.stringify(value),
  );
}

export const assetHandlers = {
  asset_updated: async (context: ProjectContext, message: Msg<'asset_updated'>) => {
    const project = await loadProject(context);
    const again = replayed<Committed<{ asset: AssetView }>>(project, context.opId);
    if (again) return again;
    const asset = await context.ports.assets.get(message.asset_id);
    if (!asset || asset.project_id !== project.id) throw new AppError('not_found', 'Asset not found');
    if (holds(asset.metadata, message.metadata)) {
      return { asset: toAssetView(asset, context.ports.mediaUrl), events: [], revision: project.revision };
    }
    // Stored before the commit point, like a new asset (project-commit.ts): a crash between the two leaves
    // the metadata set and unannounced, which a read shows all the same.
    const updated = await context.ports.assets.updateMetadata(asset.id, message.metadata);
    if (!updated) throw new AppError('not_found', 'Asset not found');
    const view = toAssetView(updated, context.ports.mediaUrl);
    return commit(context, project, {
      next: project,
      turnId: null,
      bumpsRevision: false,
      events: [{ type: 'asset.updated', video_id: null, data: { asset: view } }],
      result: { asset: view },
    });
  },
};
