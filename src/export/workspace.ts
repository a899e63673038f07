// Export workspaces: one private folder per export under EXPORT_WORK_DIR, where the sources are copied out of
// the media store and probed — ffmpeg reads local files only, whatever store holds the media — and where the
// output is written before it is stored. Each failure is named by the export's error codes.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import { AppError, type MediaStore } from '../platform/index.ts';
import { exportError } from './export-errors.ts';
import type { ExportSource, ExportWorkspace, ExportWorkspaces } from '../../workers/index.ts';

export interface ExportWorkspacesOptions {
  /** EXPORT_WORK_DIR/exports: shared by the nodes of one machine, so folder names are unique ids. */
  root: string;
  store: MediaStore;
  /** Probes a local source file (export-probe.ts); rejects for a file we cannot read safely. */
  probe(path: string): Promise<ExportSource>;
  /** Folders older than this belong to no running export (EXPORT_TIMEOUT_MS plus a margin). */
  leftoverAgeMs: number;
  logger: Logger;
}

/** Probes remembered (a few hundred bytes each). */
const PROBES_KEPT = 2000;

export function createExportWorkspaces(options: ExportWorkspacesOptions): ExportWorkspaces {
  const { root, store, probe, logger } = options;
  // What each stored file probed as. A media id names the same bytes for ever (ids are never reused, files
  // never rewritten), so a source needs one ffprobe — 170 ms of CPU for Debian's build, most of it loading its
  // libraries — however often its project is exported. Keyed with the store's ETag as well, so bytes that did
  // change in the store are probed again. Oldest first out.
  const probed = new Map<string, Omit<ExportSource, 'path'>>();
  const remember = (key: string, source: ExportSource) => {
    const { path: _path, ...described } = source;
    probed.set(key, described);
    if (probed.size > PROBES_KEPT) probed.delete(probed.keys().next().value!);
  };

  async function open(exportId: string): Promise<ExportWorkspace> {
    const dir = join(root, exportId);
    await mkdir(dir, { recursive: true });
    const outputPath = join(dir, 'output.mp4');
    const staged = new Map<string, Promise<ExportSource>>();

    async function copyIn(mediaId: string): Promise<ExportSource> {
      // The media id is a plain file name (media-id.ts), so it is safe as one here too.
      const path = join(dir, `source-${mediaId}`);
      let key: string;
      try {
        const stored = await store.stat(mediaId);
        if (!stored) throw new Error(`${mediaId} is not in the media store`);
        key = `${mediaId} ${stored.etag}`;
        await pipeline(await store.open(mediaId), createWriteStream(path, { flags: 'wx' }));
      } catch (error) {
        throw exportError(
          'source_fetch_failed',
          'A source of the timeline could not be read from the media store',
          error,
        );
      }
      // The stored file's id and content validator name what it holds (a segment's key counts it: segments.ts).
      const known = probed.get(key);
      if (known) return { ...known, path, contentId: key };
      let source: ExportSource;
      try {
        source = await probe(path);
      } catch (error) {
        // The probe refuses a file with a 415; anything else (ffprobe cannot run) is ours, not the source's.
        if (!(error instanceof AppError && error.status === 415)) {
          throw exportError('export_failed', 'The export could not be completed', error);
        }
        throw exportError(
          'corrupt_source',
          'A source of the timeline cannot be decoded; replace or remove its clip',
          error,
        );
      }
      remember(key, source);
      return { ...source, contentId: key };
    }

    return {
      outputPath,
      stage(mediaId) {
        let source = staged.get(mediaId);
        if (!source) staged.set(mediaId, (source = copyIn(mediaId)));
        return source;
      },
      async probeOutput() {
        try {
          return await probe(outputPath);
        } catch (error) {
          throw exportError('export_failed', 'The export could not be completed', error);
        }
      },
      async storeOutput(mediaId) {
        try {
          await store.put(mediaId, createReadStream(outputPath), 'video/mp4');
        } catch (error) {
          throw exportError(
            'storage_unconfigured',
            'The media store cannot take the export right now',
            error,
          );
        }
      },
      remove: () => rm(dir, { recursive: true, force: true }),
    };
  }

  async function removeLeftovers(): Promise<void> {
    const names = await readdir(root).catch(() => [] as string[]);
    const now = Date.now();
    for (const name of names) {
      const path = join(root, name);
      const info = await stat(path).catch(() => null);
      if (!info || now - info.mtimeMs < options.leftoverAgeMs) continue;
      await rm(path, { recursive: true, force: true });
      logger.info({ path }, 'removed an export folder left by a stopped process');
    }
  }

  return { open, removeLeftovers };
}
