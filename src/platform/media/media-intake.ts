import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../core/errors.ts';
import { extensionFor } from '../storage/media-id.ts';
import type { IntakeResult, MediaIntake } from './media-intake-port.ts';
import type { MediaStore } from '../storage/media-store.ts';
import { FetchRefused } from '../net/fetch-refused.ts';
import { HttpStatusRefused, type GuardedFetch } from '../net/guarded-fetch.ts';
import {
  probeFile,
  SNIFF_BYTES,
  sniffContainer,
  unsupportedMedia,
  type MediaLimits,
} from '../../../workers/index.ts';

/** What the intake needs; `app.ts` wires the real ones, tests pass the same factory their own. */
export interface MediaIntakeDeps {
  store: MediaStore;
  /** From `resolveFfmpeg`. */
  ffmpegPath: string;
  ffprobePath: string;
  /** The guarded client (`createGuardedFetch()`): SSRF rules, redirects re-checked, size and time limits. */
  fetch: Pick<GuardedFetch, 'getStream'>;
  /** Allow http and loopback/private hosts (tests only). */
  allowPrivate: boolean;
  /** The whole download, body included. */
  fetchTimeoutMs: number;
  newMediaId(extension: string): string;
  /**
   * The media id one of the service's own media URLs names, `undefined` for any other URL, `null` for an own
   * URL that cannot be decoded: `ownMediaId(url, publicBaseUrl)` from the services layer, passed in because
   * adapters do not import services.
   */
  resolveOwn(url: string): string | null | undefined;
  /** Where private scratch copies go (default: the OS temp dir). */
  tmpDir?: string;
  /** Per ffprobe/ffmpeg child (default 30 s). */
  probeTimeoutMs?: number;
  /** What media from users may be (docs/editor.md "Media limits"): past them, 415 `MediaOverLimit`. */
  limits: MediaLimits;
}

/** The `MediaIntake` port over a media store, ffprobe/ffmpeg and the guarded fetch. */
export function createMediaIntake(deps: MediaIntakeDeps): MediaIntake {
  const storedProbeOptions = {
    ffmpegPath: deps.ffmpegPath,
    ffprobePath: deps.ffprobePath,
    ...(deps.probeTimeoutMs !== undefined ? { timeoutMs: deps.probeTimeoutMs } : {}),
  };
  // What users send is held to the limits; what is already stored came through them or from a provider.
  const probeOptions = { ...storedProbeOptions, limits: deps.limits };

  /** Runs `work` on a fresh file path in a private (0700) directory that is removed whatever happens. */
  async function withScratch<T>(work: (file: string) => Promise<T>): Promise<T> {
    const root = deps.tmpDir ?? tmpdir();
    await mkdir(root, { recursive: true });
    const dir = await mkdtemp(join(root, 'mf-intake-'));
    try {
      // No extension: nothing downstream may guess the type from a name.
      return await work(join(dir, 'media'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async function fromStream(source: Readable, options: { maxBytes: number }): Promise<IntakeResult> {
    return withScratch(async (file) => {
      await pipeline(source, new IntakeMeter(options.maxBytes), privateFile(file));
      const probed = await probeFile(file, probeOptions);
      const id = deps.newMediaId(extensionFor(probed.contentType));
      const media = await deps.store.put(id, createReadStream(file), probed.contentType);
      return { media, probed };
    });
  }

  async function probeStored(mediaId: string) {
    return withScratch(async (file) => {
      await pipeline(await deps.store.open(mediaId), privateFile(file));
      return probeFile(file, storedProbeOptions);
    });
  }

  async function fromUrl(url: string, options: { maxBytes: number; field: string }): Promise<IntakeResult> {
    const { field, maxBytes } = options;
    const notHttps = () => new AppError('bad_request', `${field} must be a https URL`);
    const own = deps.resolveOwn(url);
    if (own === null) throw notHttps();
    if (own !== undefined) {
      // Our own media are read straight from the store and copied: the new asset owns its file, so removing
      // it (with its project) never removes a file a job or another project still serves.
      const stored = await deps.store.stat(own).catch(() => null);
      if (!stored) throw new AppError('bad_request', `${field} is not a file in this service's media`);
      return fromStream(await deps.store.open(own), { maxBytes });
    }
    if (!acceptedScheme(url, deps.allowPrivate)) throw notHttps();
    try {
      const fetched = await deps.fetch.getStream(url, {
        allowPrivate: deps.allowPrivate,
        timeoutMs: deps.fetchTimeoutMs,
        maxBytes,
      });
      return await fromStream(fetched.stream, { maxBytes });
    } catch (error) {
      throw error instanceof FetchRefused ? notFetched(field, error) : error;
    }
  }

  return { fromStream, fromUrl, probeStored };
}

/** The scratch copy: created here (never an existing file), readable by the service's user only. */
function privateFile(path: string) {
  return createWriteStream(path, { flags: 'wx', mode: 0o600 });
}

function acceptedScheme(url: string, allowPrivate: boolean): boolean {
  try {
    const { protocol, hostname } = new URL(url);
    return hostname.length > 0 && (protocol === 'https:' || (allowPrivate && protocol === 'http:'));
  } catch {
    return false;
  }
}

/** A refused or failed download, worded for the client (refusal messages are written to be safe to show). */
function notFetched(field: string, error: FetchRefused): AppError {
  const reason = error instanceof HttpStatusRefused ? `HTTP ${error.status}` : error.message;
  return new AppError('bad_request', `${field} could not be fetched: ${reason}`);
}

/**
 * Counts the bytes on their way to the scratch file, failing the copy (and so the source) past `maxBytes`,
 * and judges the first bytes as soon as they are in: a text file or playlist is refused before the rest of
 * it is written anywhere.
 */
class IntakeMeter extends Transform {
  private size = 0;
  private head: Buffer | undefined = Buffer.alloc(0);

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      return callback(new AppError('payload_too_large', `File too large (max ${this.maxBytes} bytes)`));
    }
    if (this.head) {
      this.head = Buffer.concat([this.head, chunk]);
      if (this.head.length >= SNIFF_BYTES && !this.sniffed()) return callback(this.refused());
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    callback(this.head && !this.sniffed() ? this.refused() : null);
  }

  private sniffed(): boolean {
    const known = sniffContainer(this.head!.subarray(0, SNIFF_BYTES)) !== null;
    this.head = undefined;
    return known;
  }

  private refused(): AppError {
    return unsupportedMedia('no accepted container signature');
  }
}
