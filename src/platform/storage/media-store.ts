import type { Readable } from 'node:stream';

// Where media are kept. Adapters: storage/fs, storage/gridfs.

/** What the store knows of one file. */
export interface StoredMedia {
  id: string;
  size: number;
  contentType: string;
  /** A strong validator derived from the content (quoted, as sent in `ETag`). */
  etag: string;
  createdAt: Date;
}

/** An inclusive byte range, as `Range: bytes=start-end` asks. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * Durable media (`MEDIA_STORE`: fs or gridfs). Ids are the file names served at `/media/<id>`, e.g.
 * `med_<random>.mp4`; they are unguessable and never reused.
 */
export interface MediaStore {
  /** Writes a whole file; resolves once it is durable. Rejects (and keeps nothing) past `maxBytes`. */
  put(
    id: string,
    data: Readable | Buffer,
    contentType: string,
    options?: { maxBytes?: number },
  ): Promise<StoredMedia>;
  stat(id: string): Promise<StoredMedia | null>;
  /** Streams the file, or the given inclusive range of it. */
  open(id: string, range?: ByteRange): Promise<Readable>;
  /** Removes the file; removing a missing file is not an error. */
  delete(id: string): Promise<void>;
  /**
   * Where the stored file lies on this machine, for a reader that needs a file (ffmpeg), when the store keeps
   * plain files (fs); null when it does not, or there is no such file. Only to be read: never written, moved
   * or removed past the store.
   */
  localPath?(id: string): Promise<string | null>;
}
