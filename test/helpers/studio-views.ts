// Assets and clips as the API answers them (docs/editor.md, Asset and Clip), for the studio's pure tests: every
// field present, null where nothing was set, `fields` on top.
import type { Asset, Clip } from '../../web/src/api-types.ts';

/** An uploaded asset with `metadata`. */
export const assetView = (
  id: string,
  kind: Asset['kind'],
  metadata: Record<string, unknown> = {},
): Asset => ({
  id,
  kind,
  source: 'upload',
  url: `/media/${id}`,
  metadata,
  created_at: '2026-11-29T00:00:00.000Z',
});

/** A clip of video `vv_1` with every optional field null, then `fields`. */
export const clipView = (fields: Partial<Clip> & Pick<Clip, 'id' | 'track' | 'idx'>): Clip => ({
  video_id: 'vv_1',
  asset_id: null,
  start_sec: null,
  trim_start_sec: null,
  duration_sec: null,
  volume: null,
  text: null,
  style: null,
  position: null,
  color: null,
  background: null,
  transition_in: null,
  motion: null,
  speed: null,
  fade_in_sec: null,
  fade_out_sec: null,
  ...fields,
});
