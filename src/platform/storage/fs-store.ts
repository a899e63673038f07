import { createReadStream } from 'node:fs';
import {
  link,
  mkdir,
  open,
  readFile,
  rename,
  rm,
  unlink,
  writeFile,
  type FileHandle,
} from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { AppError } from '../core/errors.ts';
import { isMediaId } from './media-id.ts';
import type { MediaStore, StoredMedia } from './media-store.ts';
import { assertMediaId, assertRange, ByteMeter, copyMetered, mediaNotFound } from './common.ts';

/** The sidecar next to each file: what `stat` answers without reading (or hashing) the file. */
interface Sidecar {
  id: string;
  size: number;
  content_type: string;
  etag: string;
  created_at: string;
}

const SIDECAR_SUFFIX = '.meta.json';
const TEMP_PREFIX = '.tmp-'; // never a media id, so never served

/**
 * Media as plain files in one folder: `<dir>/<id>` holds the bytes, `<dir>/<id>.meta.json` the content
 * type, size, ETag (SHA-256 of the bytes) and creation time. A write goes to temporary files in the same
 * folder, is fsynced, then published: the data file by `link` (which refuses an existing id), the sidecar
 * by `rename`. The sidecar is the commit point — a file without one is invisible — so a failed, oversized
 * or interrupted write is never served; a crash between the two steps can leave an unreferenced data file.
 */
export async function createFsMediaStore(options: { dir: string }): Promise<MediaStore> {
  const { dir } = options;
  await mkdir(dir, { recursive: true });
  const dataPath = (id: string) => join(dir, id);
  const sidecarPath = (id: string) => join(dir, id + SIDECAR_SUFFIX);

  async function readSidecar(id: string): Promise<Sidecar | null> {
    if (!isMediaId(id)) return null; // the id becomes a path: nothing else may reach the file system
    try {
      return JSON.parse(await readFile(sidecarPath(id), 'utf8')) as Sidecar;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  return {
    async put(id, data, contentType, putOptions = {}) {
      assertMediaId(id);
      const temp = join(dir, `${TEMP_PREFIX}${randomBytes(9).toString('base64url')}`);
      const meter = new ByteMeter(putOptions.maxBytes);
      try {
        const file = await open(temp, 'wx');
        try {
          await copyMetered(data, meter, (chunk) => writeAll(file, chunk));
          await file.sync();
        } finally {
          await file.close();
        }
        const stored: StoredMedia = {
          id,
          size: meter.size,
          contentType,
          etag: meter.etag(),
          createdAt: new Date(),
        };
        const sidecar: Sidecar = {
          id,
          size: stored.size,
          content_type: contentType,
          etag: stored.etag,
          created_at: stored.createdAt.toISOString(),
        };
        await writeFile(`${temp}${SIDECAR_SUFFIX}`, JSON.stringify(sidecar), { flag: 'wx' });
        await fsync(`${temp}${SIDECAR_SUFFIX}`);
        try {
          await link(temp, dataPath(id));
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
            throw new AppError('conflict', `Media ${id} already exists`);
          }
          throw error;
        }
        await rename(`${temp}${SIDECAR_SUFFIX}`, sidecarPath(id));
        await fsync(dir);
        return stored;
      } finally {
        await rm(temp, { force: true });
        await rm(`${temp}${SIDECAR_SUFFIX}`, { force: true });
      }
    },

    async stat(id) {
      const sidecar = await readSidecar(id);
      return sidecar && toStored(sidecar);
    },

    async open(id, range) {
      const sidecar = await readSidecar(id);
      if (!sidecar) throw mediaNotFound();
      if (range) assertRange(range, sidecar.size);
      // Opened before returning, so a file deleted meanwhile is a 404 here rather than a broken stream later.
      const handle = await open(dataPath(id), 'r').catch((error: NodeJS.ErrnoException) => {
        throw error.code === 'ENOENT' ? mediaNotFound() : error;
      });
      return createReadStream('', { fd: handle, ...(range ?? {}) });
    },

    async localPath(id) {
      return (await readSidecar(id)) ? dataPath(id) : null;
    },

    async delete(id) {
      if (!isMediaId(id)) return;
      // Sidecar first: once it is gone the file is invisible, whatever happens to the data file after.
      await rm(sidecarPath(id), { force: true });
      await unlink(dataPath(id)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
    },
  };
}

function toStored(sidecar: Sidecar): StoredMedia {
  return {
    id: sidecar.id,
    size: sidecar.size,
    contentType: sidecar.content_type,
    etag: sidecar.etag,
    createdAt: new Date(sidecar.created_at),
  };
}

/** Flushes a file (or a folder's entries) to disk: `put` resolves only once the media is durable. */
async function fsync(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes the whole chunk (a single `write` may take only part of it). */
async function writeAll(file: FileHandle, chunk: Buffer): Promise<void> {
  let offset = 0;
  while (offset < chunk.byteLength) {
    const { bytesWritten } = await file.write(chunk, offset, chunk.byteLength - offset, null);
    offset += bytesWritten;
  }
}
