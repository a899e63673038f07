// Export workspaces against the real fs media store: sources copied into the export's own folder, each stored
// file probed once across exports, and every failure named by its export error (docs/errors.md, Export errors).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createExportWorkspaces } from '../../src/export/workspace.ts';
import { unsupportedMedia } from '../../workers/probe/probe.ts';
import { createFsMediaStore } from '../../src/platform/storage/fs-store.ts';
import { AppError } from '../../src/platform/core/errors.ts';
import { newMediaId } from '../../src/platform/storage/media-id.ts';
import type { ExportSource } from '../../workers/export/work-order.ts';
import type { MediaStore } from '../../src/platform/storage/media-store.ts';

const described: Omit<ExportSource, 'path'> = { demuxer: 'png_pipe', kind: 'image', durationSec: null };

let dir: string;
let store: MediaStore;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mf-export-workspace-'));
  store = await createFsMediaStore({ dir: join(dir, 'media') });
});
after(() => rm(dir, { recursive: true, force: true }));

/** Workspaces whose probe answers with `answer` and counts its calls. */
function workspaces(
  answer: (path: string) => Promise<ExportSource> = async (path) => ({ ...described, path }),
) {
  const probes: string[] = [];
  const made = createExportWorkspaces({
    root: join(dir, 'exports'),
    store,
    probe: (path) => {
      probes.push(path);
      return answer(path);
    },
    leftoverAgeMs: 60_000,
    logger: pino({ level: 'silent' }),
  });
  return { made, probes };
}

async function rejects(promise: Promise<unknown>, status: number, code: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof AppError, String(error));
    assert.equal(error.status, status);
    assert.equal(error.message, code);
    return true;
  });
}

describe('export workspaces', () => {
  it('copies each source into the export folder and probes a stored file once across exports', async () => {
    const mediaId = newMediaId('png');
    await store.put(mediaId, Buffer.from('the bytes of a picture'), 'image/png');
    const { made, probes } = workspaces();
    const first = await made.open('ex_first');
    const second = await made.open('ex_second');
    const a = await first.stage(mediaId);
    const again = await first.stage(mediaId);
    const b = await second.stage(mediaId);
    assert.equal(probes.length, 1, 'one probe for the file, whatever the exports');
    assert.equal(again, a);
    assert.notEqual(a.path, b.path);
    assert.ok(b.path.startsWith(join(dir, 'exports', 'ex_second')), b.path);
    const stored = await store.stat(mediaId);
    // The content identity a segment's key counts: the media id and the store's validator of its bytes.
    assert.deepEqual({ ...b, path: '' }, { ...described, path: '', contentId: `${mediaId} ${stored!.etag}` });
    assert.equal(a.contentId, b.contentId, 'the same file, the same identity in every export');
    assert.equal(readFileSync(b.path, 'utf8'), 'the bytes of a picture');
    await first.remove();
    assert.equal(existsSync(join(dir, 'exports', 'ex_first')), false);
    assert.equal(existsSync(b.path), true, 'another export keeps its copy');
    await second.remove();
  });

  it('names each failure: missing file 502, refused file 422 (not remembered), probe that cannot run 500', async () => {
    await rejects(
      (await workspaces().made.open('ex_missing')).stage(newMediaId('mp4')),
      502,
      'source_fetch_failed',
    );
    const mediaId = newMediaId('mp4');
    await store.put(mediaId, Buffer.from('not really an mp4'), 'video/mp4');
    let refuse = true;
    const { made, probes } = workspaces(async (path) => {
      if (refuse) throw unsupportedMedia('no accepted container signature');
      return { ...described, path };
    });
    await rejects((await made.open('ex_refused')).stage(mediaId), 422, 'corrupt_source');
    refuse = false;
    await (await made.open('ex_accepted')).stage(mediaId);
    assert.equal(probes.length, 2, 'a refusal is not remembered');
    const broken = workspaces(() => Promise.reject(new Error('spawn ffprobe ENOENT')));
    await rejects((await broken.made.open('ex_broken')).stage(mediaId), 500, 'export_failed');
  });

  it('stores the output, or answers storage_unconfigured when the store cannot take it', async () => {
    const { made } = workspaces();
    const workspace = await made.open('ex_output');
    await writeFile(workspace.outputPath, 'an mp4');
    const mediaId = newMediaId('mp4');
    await workspace.storeOutput(mediaId);
    assert.equal((await store.stat(mediaId))?.contentType, 'video/mp4');
    const full: MediaStore = { ...store, put: () => Promise.reject(new Error('ENOSPC')) };
    const refusing = createExportWorkspaces({
      root: join(dir, 'exports'),
      store: full,
      probe: async (path) => ({ ...described, path }),
      leftoverAgeMs: 60_000,
      logger: pino({ level: 'silent' }),
    });
    const other = await refusing.open('ex_full');
    await writeFile(other.outputPath, 'an mp4');
    await rejects(other.storeOutput(newMediaId('mp4')), 503, 'storage_unconfigured');
  });

  it('removes only folders older than the leftover age at start-up', async () => {
    const old = join(dir, 'exports', 'ex_old');
    const recent = join(dir, 'exports', 'ex_recent');
    await mkdir(old, { recursive: true });
    await mkdir(recent, { recursive: true });
    const anHourAgo = new Date(Date.now() - 3_600_000);
    await utimes(old, anHourAgo, anHourAgo);
    await workspaces().made.removeLeftovers();
    assert.equal(existsSync(old), false);
    assert.equal(existsSync(recent), true);
  });
});
