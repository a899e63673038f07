// The editor's `job.finished` subscriber (generated-assets.ts `addDelivered`): a completed editor job's
// media become an asset of its project, named for its turn; while that turn still holds the project the turn
// adds them itself, so the subscriber answers NotHandledYet (the jobs' outbox tells it again later); other
// jobs, failed jobs and deleted projects need nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import type { ProjectCommands, ProjectRecord } from '../../actors/index.ts';
import { AppError } from '../../src/platform/core/errors.ts';
import { NotHandledYet } from '../../src/platform/core/domain-events.ts';
import type { MediaStore } from '../../src/platform/storage/media-store.ts';
import type { JobRecord } from '../../src/jobs/ports/jobs-repository.ts';
import { createGeneratedAssets, generatedAssetId } from '../../src/editor/generated-assets.ts';
import { imageJobRecord } from '../helpers/job-records.ts';

function setUp(project: Partial<ProjectRecord> | null, addAsset?: () => Promise<unknown>) {
  const files = new Map<string, string>([['med_src.png', 'image/png']]);
  const store = {
    stat: async (id: string) => (files.has(id) ? { size: 4, contentType: files.get(id)! } : null),
    open: async () => Readable.from([Buffer.from('png!')]),
    put: async (id: string, _body: unknown, contentType: string) => void files.set(id, contentType),
    delete: async (id: string) => void files.delete(id),
  } as unknown as MediaStore;
  const commands: Array<{ projectId: string; message: Record<string, unknown> }> = [];
  const generated = createGeneratedAssets({
    store,
    commands: {
      add_asset: async (projectId: string, message: Record<string, unknown>) => {
        commands.push({ projectId, message });
        return addAsset ? addAsset() : { asset: { id: 'va_x' }, events: [] };
      },
    } as unknown as ProjectCommands,
    projects: {
      get: async () => (project ? ({ id: 'vp_1', turn: null, ...project } as ProjectRecord) : null),
    },
  });
  return { generated, commands, files };
}

function editorJob(fields: Partial<JobRecord> = {}): JobRecord {
  return {
    ...imageJobRecord({ id: 'job_gen1', userId: 'usr_1', keyId: 'key_1', now: new Date() }),
    status: 'completed',
    media_ids: ['med_src.png'],
    origin: { project_id: 'vp_1', video_id: 'vv_1', turn_id: 'turn_1' },
    ...fields,
  };
}

describe('generated assets: the job.finished safety net', () => {
  it('adds a completed editor job’s media to its project once its turn no longer holds it', async () => {
    const t = setUp({ turn: null });
    await t.generated.addDelivered(editorJob());
    assert.equal(t.commands.length, 1);
    const { projectId, message } = t.commands[0]!;
    assert.equal(projectId, 'vp_1');
    assert.equal(message.op_id, 'asset:job_gen1');
    assert.equal(message.turn_id, 'turn_1');
    assert.equal((message.asset as { id: string }).id, generatedAssetId('job_gen1'));
  });

  it('leaves them to the turn while it holds the project: NotHandledYet, nothing added', async () => {
    const t = setUp({ turn: { turn_id: 'turn_1' } as ProjectRecord['turn'] });
    await assert.rejects(t.generated.addDelivered(editorJob()), NotHandledYet);
    assert.equal(t.commands.length, 0);
    assert.equal(t.files.size, 1, 'no copy made');
  });

  it('adds them while another turn holds the project', async () => {
    const t = setUp({ turn: { turn_id: 'turn_2' } as ProjectRecord['turn'] });
    await t.generated.addDelivered(editorJob());
    assert.equal(t.commands.length, 1);
  });

  it('needs nothing for a job of no turn, a job that did not complete, or a deleted project', async () => {
    const t = setUp({ turn: null });
    const { origin: _origin, ...plain } = editorJob();
    await t.generated.addDelivered(plain);
    await t.generated.addDelivered(editorJob({ status: 'failed' }));
    assert.equal(t.commands.length, 0);
    const gone = setUp(null);
    await gone.generated.addDelivered(editorJob());
    assert.equal(gone.commands.length, 0);
  });

  it('takes a project deleted meanwhile (404 from its actor) as done, and rejects on any other failure', async () => {
    const deleted = setUp({ turn: null }, () =>
      Promise.reject(new AppError('not_found', 'Project not found')),
    );
    await deleted.generated.addDelivered(editorJob());
    const down = setUp({ turn: null }, () => Promise.reject(new AppError('unavailable', 'try again')));
    await assert.rejects(down.generated.addDelivered(editorJob()), /try again/);
  });
});
