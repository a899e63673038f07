import type { AssetKind, AssetSource } from '../../schemas/editor-terms.ts';

/** A project's library item (docs/editor.md, Asset); its file is `media_id` in the media store. */
export interface AssetRecord {
  id: string;
  project_id: string;
  user_id: string;
  kind: AssetKind;
  source: AssetSource;
  /** The stored file, served at `/media/<media_id>`. */
  media_id: string;
  /** From the probe, never from an upload header or a remote server (docs/editor.md, Uploads and imports). */
  content_type: string;
  /** `prompt` and `model` for generated assets; `duration_sec`, `width`, `height` where they apply; `name`. */
  metadata: Record<string, unknown>;
  created_at: Date;
}

/** Assets storage (port). Writes come from the project actor, so `put` is idempotent by id. */
export interface AssetsRepository {
  /** Stores the asset; storing an id again changes nothing. */
  put(asset: AssetRecord): Promise<void>;
  get(id: string): Promise<AssetRecord | null>;
  /**
   * Sets the given keys of the asset's `metadata` (the others stay) and answers the asset as stored after it,
   * or null when there is no such asset. Setting the same values again changes nothing.
   */
  updateMetadata(id: string, metadata: Record<string, unknown>): Promise<AssetRecord | null>;
  /** The project's assets, oldest first. */
  listByProject(projectId: string): Promise<AssetRecord[]>;
  /** Removes the project's assets and answers what was removed (their files are the caller's). */
  deleteByProject(projectId: string): Promise<AssetRecord[]>;
}
