import type { AssetView, ProjectCommands, ProjectEvent, ProjectsRepository } from '../../actors/index.ts';
import { AppError, derivedMediaId, extensionFor, NotHandledYet, type MediaStore } from '../platform/index.ts';
import type { JobRecord } from '../jobs/index.ts';
import type { TurnEventDraft } from './turns/turn-session.ts';

/** The asset id a job's media get: one job, one asset, however often it is added. */
export const generatedAssetId = (jobId: string) => `va_${jobId.replace(/^job_/, '')}`;

/** A generated asset as its project answered the add. */
export interface AddedAsset {
  asset: AssetView;
  /** The events the add committed: the turn's noted events, then `asset.created` unless it was there already. */
  events: ProjectEvent[];
  /** The project's revision after the add. */
  revision: number;
}

/** The assets of editor jobs: a job's delivered media, added to the project it was generated for. */
export interface GeneratedAssets {
  /**
   * Adds the completed job's media to its project as an asset (null when the job has no origin, did not
   * complete, or its file is gone). `turnId` and `before`: the turn adding it while it holds the project,
   * and its noted events, committed with the asset (turn-session.ts). 404 when the project is gone (the copy
   * of the file is removed).
   */
  add(job: JobRecord, turnId?: string, before?: TurnEventDraft[]): Promise<AddedAsset | null>;
  /**
   * The safety net, subscribed to the jobs' `job.finished` (on whichever node ends the job, and again by
   * their outbox until it succeeds): a completed editor job's media join its project. While the job's turn
   * still holds the project, the turn adds them itself — its command's answer then carries the
   * `asset.created` it answers with (`agent_events`) — so this leaves them to it (`NotHandledYet`: the
   * outbox asks again later, and by then the turn has added them, or has ended without: its node died, it
   * lost the project). A deleted project needs nothing.
   */
  addDelivered(job: JobRecord): Promise<void>;
}

/**
 * Turns the media of a completed editor job into a project asset (docs/editor.md, Agent turns). Called by the turn that
 * waits for the job and by the editor's `job.finished` subscriber (`addDelivered`: media delivered after their
 * turn ended), on any node: the asset id, its file and the actor op id all derive from the job id, so adding
 * twice changes nothing. The asset gets its own copy of the file: the job's copy goes with the job at
 * retention, the asset's with the project.
 */
export function createGeneratedAssets(deps: {
  store: MediaStore;
  commands: ProjectCommands;
  projects: Pick<ProjectsRepository, 'get'>;
}): GeneratedAssets {
  const generated: GeneratedAssets = {
    async add(job, turnId, before = []) {
      const origin = job.origin;
      const source = job.media_ids[0];
      if (!origin || job.status !== 'completed' || !source) return null;
      const stored = await deps.store.stat(source);
      if (!stored) return null;
      const mediaId = derivedMediaId(`asset:${job.id}`, extensionFor(stored.contentType));
      if (!(await deps.store.stat(mediaId))) {
        // The turn and the job's completion hook may copy at once: the loser finds the winner's file.
        await deps.store
          .put(mediaId, await deps.store.open(source), stored.contentType)
          .catch(async (error) => {
            if (!(await deps.store.stat(mediaId))) throw error;
          });
      }
      const generation = job.generation;
      const forgetCopy = async (error: unknown) => {
        // The project is gone (deleted while the job ran): the copy would belong to nothing.
        if (error instanceof AppError && error.code === 'not_found') {
          await deps.store.delete(mediaId).catch(() => undefined);
        }
        throw error;
      };
      return deps.commands
        .add_asset(origin.project_id, {
          op_id: `asset:${job.id}`,
          ...(turnId ? { turn_id: turnId, before_events: before } : {}),
          asset: {
            id: generatedAssetId(job.id),
            user_id: job.user_id,
            kind: job.type,
            source: 'agent_generate',
            media_id: mediaId,
            content_type: stored.contentType,
            metadata: {
              prompt: generation.prompt,
              model: job.model,
              job_id: job.id,
              ...('duration_seconds' in generation ? { duration_sec: generation.duration_seconds } : {}),
            },
          },
        })
        .catch(forgetCopy);
    },

    async addDelivered(job) {
      if (!job.origin || job.status !== 'completed') return;
      const project = await deps.projects.get(job.origin.project_id);
      if (!project) return;
      if (project.turn?.turn_id === job.origin.turn_id) {
        throw new NotHandledYet('the turn that generated it still holds the project and adds it');
      }
      await generated.add(job, job.origin.turn_id).catch((error: unknown) => {
        if (!(error instanceof AppError && error.code === 'not_found')) throw error;
      });
    },
  };
  return generated;
}
