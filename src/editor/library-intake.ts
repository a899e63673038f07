import type { Readable } from 'node:stream';
import type { AssetView, ProjectCommands, ProjectRecord } from '../../actors/index.ts';
import { newId, type IntakeResult, type MediaIntake, type MediaStore } from '../platform/index.ts';
import { metadataOf } from './turns/turn-references.ts';
import { editOp } from './direct-edit.ts';

/** Media a user adds to a project's library directly. */
export interface LibraryIntake {
  /** An upload: the raw file, streamed to a private file, probed, then stored (docs/editor.md, uploads and imports). */
  upload(project: ProjectRecord, body: Readable, name: string | undefined): Promise<{ asset: AssetView }>;
  /** An import by URL, through the guarded fetch. */
  importUrl(project: ProjectRecord, url: string, name: string | undefined): Promise<{ asset: AssetView }>;
}

/** What the library intake works with. */
export interface LibraryIntakeDeps {
  commands: ProjectCommands;
  store: MediaStore;
  intake: MediaIntake;
  uploadMaxBytes: number;
}

/** Takes media in (size-limited, probed, stored), then records each as an asset through the project's actor. */
export function createLibraryIntake(deps: LibraryIntakeDeps): LibraryIntake {
  /** Records stored media as an asset; media whose recording failed are deleted again. */
  async function addTaken(
    userId: string,
    projectId: string,
    taken: IntakeResult,
    source: 'upload' | 'import',
    extra: Record<string, unknown>,
  ) {
    try {
      const answer = await deps.commands.add_asset(projectId, {
        op_id: editOp(),
        asset: {
          id: newId('va', 16),
          user_id: userId,
          kind: taken.probed.kind,
          source,
          media_id: taken.media.id,
          content_type: taken.probed.contentType,
          metadata: metadataOf(taken.probed, extra),
        },
      });
      return { asset: answer.asset };
    } catch (error) {
      await deps.store.delete(taken.media.id).catch(() => undefined);
      throw error;
    }
  }

  return {
    async upload(project, body, name) {
      const taken = await deps.intake.fromStream(body, { maxBytes: deps.uploadMaxBytes });
      return addTaken(project.user_id, project.id, taken, 'upload', name ? { name } : {});
    },

    async importUrl(project, url, name) {
      const taken = await deps.intake.fromUrl(url, { maxBytes: deps.uploadMaxBytes, field: 'url' });
      return addTaken(project.user_id, project.id, taken, 'import', {
        source_url: url,
        ...(name ? { name } : {}),
      });
    },
  };
}
