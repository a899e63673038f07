import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import type { AssetRecord, AssetsRepository, ProjectCommands } from '../../actors/index.ts';
import { AppError, derivedMediaId, newId, type MediaStore } from '../platform/index.ts';
import { renderPictures, type RenderedPictures } from '../../workers/index.ts';
import { createPictureSlots, type PictureLane } from './picture-slots.ts';

/** What an asset's pictures add to its `metadata` (docs/editor.md, Pictures of assets). */
export interface PictureMetadata {
  /** Set once the pictures were made; its absence marks an asset whose pictures are still to come. */
  has_sound?: boolean;
  poster_url?: string;
  filmstrip_url?: string;
  filmstrip_frames?: number;
  waveform_url?: string;
}

/** How long the creation of an asset waits for its pictures before it answers without them. */
export const PICTURES_WAIT_MS = 10_000;
/** Assets whose pictures are made at once, per process (each: a probe, then one to three ffmpeg children). */
const PICTURES_CONCURRENCY = 2;
/** Older assets waiting for their pictures, per process: past it, a later read asks again. */
const BACKFILL_QUEUE_MAX = 500;
/**
 * Niceness of the ffmpeg children: pictures an answer waits for yield to the API but come before exports and
 * probes (10); the rest wait like them.
 */
const NICENESS: Record<PictureLane, number> = { new: 5, backfill: 10 };
/** Per child (the probe, each picture): an hour of sound is decoded in well under a minute. */
const PICTURE_CHILD_TIMEOUT_MS = 120_000;
/** Assets remembered as tried already (a failure is not retried on every read). */
const TRIED_MAX = 10_000;

/**
 * The stored files of a media file's pictures. Their ids derive from its own id: the same file always names
 * the same pictures, so making them twice (two nodes, a repeated add) overwrites nothing and leaves no orphan,
 * and they are as unguessable as the file they show.
 */
export function pictureMediaIds(mediaId: string) {
  return {
    poster: derivedMediaId(`poster:${mediaId}`, 'jpg'),
    filmstrip: derivedMediaId(`filmstrip:${mediaId}`, 'jpg'),
    waveform: derivedMediaId(`waveform:${mediaId}`, 'json'),
  };
}

/** Whether an asset's pictures were made (an older asset has none yet). */
export const hasPictures = (metadata: Record<string, unknown>): boolean =>
  typeof metadata.has_sound === 'boolean';

/** The pictures of assets: made at creation, and for older assets when they are read. */
export interface AssetPictures {
  /**
   * `commands` with pictures: `add_asset` waits up to `PICTURES_WAIT_MS` for the new asset's pictures and adds
   * them with it; `export_completed` adds the export at once. Pictures that come later (or an export's) are
   * merged by `asset_updated` (event `asset.updated`). A failure never fails the creation: it is logged.
   */
  readonly commands: ProjectCommands;
  /** Makes the missing pictures of older assets in the background; each is announced by `asset.updated`. */
  backfill(projectId: string, assets: readonly AssetRecord[]): void;
  /** The picture files an asset may have (for removal with its file). */
  mediaIdsOf(asset: Pick<AssetRecord, 'media_id'>): string[];
  /** Stops: running children are killed, nothing more is started, and what runs is awaited. */
  stop(): Promise<void>;
}

/** What the pictures are made with. */
export interface AssetPicturesDeps {
  /** The project actor's commands, as they are: the ones answered by `commands` wrap these. */
  commands: ProjectCommands;
  assets: Pick<AssetsRepository, 'get'>;
  store: MediaStore;
  mediaUrl(mediaId: string): string;
  ffmpegPath: string;
  ffprobePath: string;
  log: Logger;
  /** Default `PICTURES_WAIT_MS`. */
  waitMs?: number;
  /** Where scratch copies go (default: the OS temp dir). */
  tmpDir?: string;
}

/** Makes, stores and announces the pictures of assets (docs/editor.md, Pictures of assets). */
export function createAssetPictures(deps: AssetPicturesDeps): AssetPictures {
  const { store, log } = deps;
  const inner = deps.commands;
  const waitMs = deps.waitMs ?? PICTURES_WAIT_MS;
  const slots = createPictureSlots(PICTURES_CONCURRENCY);
  const stopping = new AbortController();
  const running = new Set<Promise<unknown>>();
  const making = new Map<string, Promise<PictureMetadata | null>>();
  const tried = new Set<string>();

  /** Keeps `work` in the set that `stop` awaits. */
  function track(work: Promise<unknown>): void {
    const settled = work.catch(() => undefined).finally(() => running.delete(settled));
    running.add(settled);
  }

  /** The pictures of one stored file, made once however many ask at the same time. */
  function picturesOf(mediaId: string, lane: PictureLane): Promise<PictureMetadata | null> {
    let made = making.get(mediaId);
    if (!made) {
      made = slots.run(lane, () => makePictures(mediaId, lane)).finally(() => making.delete(mediaId));
      making.set(mediaId, made);
      track(made);
    }
    return made;
  }

  /** Stages the file, renders its pictures, stores them; null when nothing could be made. Never rejects. */
  async function makePictures(mediaId: string, lane: PictureLane): Promise<PictureMetadata | null> {
    if (stopping.signal.aborted) return null;
    let dir: string | undefined;
    try {
      const root = deps.tmpDir ?? tmpdir();
      await mkdir(root, { recursive: true });
      dir = await mkdtemp(join(root, 'mf-pictures-'));
      // ffmpeg reads files: a store of plain files lends its own (read only; a copy of a large upload would
      // cost its size again in disk, time and garbage), any other store's is copied to a private one (0600).
      let file = (await store.localPath?.(mediaId)) ?? null;
      if (!file) {
        file = join(dir, 'media');
        await pipeline(await store.open(mediaId), createWriteStream(file, { flags: 'wx', mode: 0o600 }));
      }
      const rendered = await renderPictures(file, {
        ffmpegPath: deps.ffmpegPath,
        ffprobePath: deps.ffprobePath,
        workDir: dir,
        timeoutMs: PICTURE_CHILD_TIMEOUT_MS,
        signal: stopping.signal,
        niceness: NICENESS[lane],
      });
      if (stopping.signal.aborted) return null;
      if (rendered.failures.length > 0) {
        log.warn(
          { media_id: mediaId, failures: rendered.failures },
          'some pictures of an asset were not made',
        );
      }
      return await storePictures(mediaId, rendered);
    } catch (error) {
      log.warn({ err: error, media_id: mediaId }, 'the pictures of an asset could not be made');
      return null;
    } finally {
      if (dir) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  async function storePictures(mediaId: string, rendered: RenderedPictures): Promise<PictureMetadata> {
    const ids = pictureMediaIds(mediaId);
    const metadata: PictureMetadata = {};
    // A picture lost to a time-out or a failed store may come on a later read; one the file cannot give never
    // will, and then the asset is done with what it has (`has_sound` set).
    let complete = !rendered.retryable;
    const kept = async (id: string, data: string | Buffer, contentType: string) => {
      const ok = await keep(id, data, contentType);
      if (!ok) complete = false;
      return ok;
    };
    if (rendered.poster && (await kept(ids.poster, rendered.poster, 'image/jpeg'))) {
      metadata.poster_url = deps.mediaUrl(ids.poster);
    }
    if (rendered.filmstrip && (await kept(ids.filmstrip, rendered.filmstrip.path, 'image/jpeg'))) {
      metadata.filmstrip_url = deps.mediaUrl(ids.filmstrip);
      metadata.filmstrip_frames = rendered.filmstrip.frames;
    }
    const waveform = rendered.waveform && Buffer.from(JSON.stringify(rendered.waveform));
    if (waveform && (await kept(ids.waveform, waveform, 'application/json'))) {
      metadata.waveform_url = deps.mediaUrl(ids.waveform);
    }
    if (complete) metadata.has_sound = rendered.hasSound;
    return metadata;
  }

  /** Stores one picture; true when it is in the store (stored now, or by an earlier run: the same bytes). */
  async function keep(id: string, data: string | Buffer, contentType: string): Promise<boolean> {
    try {
      await store.put(id, typeof data === 'string' ? createReadStream(data) : data, contentType);
      return true;
    } catch (error) {
      if (error instanceof AppError && error.code === 'conflict') return true;
      log.warn({ err: error, media_id: id }, 'a picture of an asset could not be stored');
      return false;
    }
  }

  /** The pictures when they are ready within `ms`, else undefined (they go on being made). */
  async function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
    if (ms <= 0) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, ms, undefined)));
    try {
      return await Promise.race([work, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Merges pictures made after their asset was added, once that add has committed. */
  function announceLater(projectId: string, assetId: string, pictures: Promise<PictureMetadata | null>) {
    track(
      pictures
        .then(async (metadata) => {
          if (!metadata || Object.keys(metadata).length === 0) return;
          await inner
            .asset_updated(projectId, {
              op_id: newId('op', 16),
              asset_id: assetId,
              metadata: { ...metadata },
            })
            .catch((error: unknown) => {
              // The project (and with it the asset) may be gone by now: nothing is left to announce to.
              if (!(error instanceof AppError && error.code === 'not_found')) throw error;
            });
        })
        .catch((error: unknown) => log.warn({ err: error, asset_id: assetId }, 'pictures not announced')),
    );
  }

  /** Removes the pictures of a file whose asset could not be added. */
  function forget(mediaId: string, pictures: Promise<unknown>) {
    track(
      pictures.then(() =>
        Promise.all(
          Object.values(pictureMediaIds(mediaId)).map((id) => store.delete(id).catch(() => undefined)),
        ),
      ),
    );
  }

  /**
   * Adds an asset with its pictures: those ready within `wait` go in with it; the rest follow by
   * `asset_updated`. An asset that exists already (a repeated add) is added as it is.
   */
  async function withPictures<Answer>(
    projectId: string,
    asset: { id: string; media_id: string; metadata: Record<string, unknown> },
    wait: number,
    add: (metadata: Record<string, unknown>) => Promise<Answer>,
  ): Promise<Answer> {
    if (hasPictures(asset.metadata) || (await deps.assets.get(asset.id))) return add(asset.metadata);
    const pictures = picturesOf(asset.media_id, wait > 0 ? 'new' : 'backfill');
    const ready = await within(pictures, wait);
    let answer: Answer;
    try {
      answer = await add(ready ? { ...asset.metadata, ...ready } : asset.metadata);
    } catch (error) {
      // The project is gone (its file goes too, with whoever added it); any other failure may be retried.
      if (error instanceof AppError && error.code === 'not_found') forget(asset.media_id, pictures);
      throw error;
    }
    if (ready === undefined) announceLater(projectId, asset.id, pictures);
    return answer;
  }

  const commands: ProjectCommands = {
    ...inner,
    add_asset: async (projectId, message, options) => {
      // A turn's noted events ride with its next command and may wait at most 100 ms for it (docs/editor.md,
      // Events): they go ahead on their own, not after the pictures. A lost turn keeps them (the add ignores
      // them then, as it would have).
      const { turn_id, before_events } = message;
      const ahead =
        turn_id && before_events?.length
          ? await inner.turn_events(
              projectId,
              { op_id: newId('op', 16), turn_id, events: before_events },
              options,
            )
          : undefined;
      const sent = ahead && !('lost' in ahead && ahead.lost);
      const answer = await withPictures(projectId, message.asset, waitMs, (metadata) =>
        inner.add_asset(
          projectId,
          { ...message, ...(sent ? { before_events: [] } : {}), asset: { ...message.asset, metadata } },
          options,
        ),
      );
      return sent ? { ...answer, events: [...(ahead.events ?? []), ...answer.events] } : answer;
    },
    // An export answers with its URL, not its asset: it need not wait, and its pictures follow in the
    // background, like an older asset's.
    export_completed: (projectId, message, options) =>
      withPictures(projectId, message.asset, 0, (metadata) =>
        inner.export_completed(projectId, { ...message, asset: { ...message.asset, metadata } }, options),
      ),
  };

  return {
    commands,

    backfill(projectId, assets) {
      for (const asset of assets) {
        if (hasPictures(asset.metadata) || tried.has(asset.id) || stopping.signal.aborted) continue;
        if (slots.waiting('backfill') >= BACKFILL_QUEUE_MAX) return;
        if (tried.size >= TRIED_MAX) tried.clear();
        tried.add(asset.id);
        announceLater(projectId, asset.id, picturesOf(asset.media_id, 'backfill'));
      }
    },

    mediaIdsOf: (asset) => Object.values(pictureMediaIds(asset.media_id)),

    async stop() {
      stopping.abort();
      while (running.size > 0) await Promise.all([...running]);
    },
  };
}
