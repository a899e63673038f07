import { randomBytes } from 'node:crypto';
import {
  GridFSBucket,
  MongoRuntimeError,
  type Db,
  type GridFSBucketWriteStream,
  type GridFSFile,
  type ObjectId,
} from 'mongodb';
import { AppError } from '../core/errors.ts';
import { isMediaId } from './media-id.ts';
import type { MediaStore, StoredMedia } from './media-store.ts';
import { isDuplicateKeyError } from '../mongo/connect.ts';
import { assertMediaId, assertRange, ByteMeter, copyMetered, mediaNotFound } from './common.ts';

/** What each files document carries in `metadata`. */
interface MediaMetadata {
  content_type: string;
  etag: string;
}

const TEMP_PREFIX = '.tmp-'; // never a media id, so never found by `stat`
// Bigger than the driver's 255 KiB default: fewer chunk documents per file, and jongodb's writes cost time
// in proportion to the documents already in a collection (docs/architecture.md, Dependencies).
const DEFAULT_CHUNK_BYTES = 1024 * 1024;

/**
 * Media in GridFS (bucket `media`: collections `media.files` and `media.chunks`), one file per id with
 * `filename` = the id (unique index). A write uploads under a temporary name, then renames the files
 * document to the id with its content type and ETag: that single-document update is the commit point, so
 * a failed or oversized write leaves nothing visible (the driver's `abort` removes the chunks written).
 */
export async function createGridFsMediaStore(
  db: Db,
  options: { bucketName?: string; chunkSizeBytes?: number } = {},
): Promise<MediaStore> {
  const bucketName = options.bucketName ?? 'media';
  const chunkSizeBytes = options.chunkSizeBytes ?? DEFAULT_CHUNK_BYTES;
  const bucket = new GridFSBucket(db, { bucketName, chunkSizeBytes });
  const files = db.collection<GridFSFile>(`${bucketName}.files`);
  const chunks = db.collection(`${bucketName}.chunks`);
  // Created here rather than left to the driver's first upload, which probes with a projection (not
  // supported by jongodb) and silently skips index creation when that fails.
  await files.createIndexes([{ key: { filename: 1 }, name: 'filename_unique', unique: true }]);
  await chunks.createIndexes([{ key: { files_id: 1, n: 1 }, name: 'files_id_1_n_1', unique: true }]);

  async function find(id: string): Promise<GridFSFile | null> {
    if (!isMediaId(id)) return null;
    return files.findOne({ filename: id });
  }

  return {
    async put(id, data, contentType, putOptions = {}) {
      assertMediaId(id);
      const meter = new ByteMeter(putOptions.maxBytes);
      const upload = bucket.openUploadStream(`${TEMP_PREFIX}${randomBytes(9).toString('base64url')}`);
      upload.on('error', () => undefined); // failures reach the write callbacks below; unheard, it would crash
      try {
        await copyMetered(data, meter, (chunk) => writeChunk(upload, chunk));
        await new Promise<void>((resolve, reject) =>
          upload.end((error?: Error | null) => (error ? reject(error) : resolve())),
        );
      } catch (error) {
        await upload.abort().catch(() => undefined); // already finished or aborted: nothing left to remove
        await bucket.delete(upload.id).catch(() => undefined); // a files document written just before failing
        throw error;
      }
      const metadata: MediaMetadata = { content_type: contentType, etag: meter.etag() };
      try {
        await files.updateOne({ _id: upload.id }, { $set: { filename: id, metadata } });
      } catch (error) {
        await bucket.delete(upload.id).catch(() => undefined);
        if (isDuplicateKeyError(error)) throw new AppError('conflict', `Media ${id} already exists`);
        throw error;
      }
      return toStored({ ...upload.gridFSFile!, filename: id, metadata });
    },

    async stat(id) {
      const file = await find(id);
      return file && toStored(file);
    },

    async open(id, range) {
      const file = await find(id);
      if (!file) throw mediaNotFound();
      if (!range) return bucket.openDownloadStream(file._id);
      assertRange(range, file.length);
      // The driver's `end` is exclusive; ours is inclusive.
      return bucket.openDownloadStream(file._id, { start: range.start, end: range.end + 1 });
    },

    async delete(id) {
      const file = await find(id);
      if (file) await removeFile(bucket, file._id);
    },
  };
}

/** Hands one chunk to the upload; resolves once the driver has stored it (or buffered it for the next). */
function writeChunk(upload: GridFSBucketWriteStream, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    upload.write(chunk, (error) => (error ? reject(error) : resolve()));
  });
}

/** Removes a files document and all its chunks; someone else removing it first is fine. */
async function removeFile(bucket: GridFSBucket, fileId: ObjectId): Promise<void> {
  try {
    await bucket.delete(fileId);
  } catch (error) {
    // The driver reports "File not found" only after deleting any orphaned chunks: the file is gone.
    if (!(error instanceof MongoRuntimeError && /File not found/.test(error.message))) throw error;
  }
}

function toStored(file: GridFSFile): StoredMedia {
  const metadata = file.metadata as MediaMetadata;
  return {
    id: file.filename,
    size: file.length,
    contentType: metadata.content_type,
    etag: metadata.etag,
    createdAt: file.uploadDate,
  };
}
