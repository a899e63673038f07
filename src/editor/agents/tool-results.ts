import type { AgentTools, ToolOutcome } from './agent-model.ts';
import type { AgentToolArgs, AgentToolName } from '../../../schemas/agent-tools.ts';

// The tool table fixes the tools' arguments, not the JSON they answer; these readers accept the plausible
// shapes (`{ clips }`, `{ tracks: { video } }`, `{ assets }`, bare arrays) so that the director keeps working
// whichever the runtime settles on, and treat anything unreadable as empty rather than failing the turn.

/** A clip of the target video's `video` track. */
export interface DirectorClip {
  id: string;
  idx: number;
  asset_id: string;
}

/** A clip of any track with what the look steps need: its timing, speed and transition. */
export interface DirectorTrackClip extends DirectorClip {
  start_sec: number | null;
  trim_start_sec: number;
  duration_sec: number | null;
  speed: number;
  transition_in: { type: string; duration_sec: number } | null;
}

/** A library item as `list_assets` lists it. */
export interface DirectorAsset {
  id: string;
  kind: string;
  source: string;
  prompt: string | null;
  duration_sec: number | null;
}

/** Runs a tool with arguments checked at compile time against `schemas/agent-tools.ts`. */
export function callAgentTool<Name extends AgentToolName>(
  tools: AgentTools,
  name: Name,
  args: AgentToolArgs<Name>,
): Promise<ToolOutcome> {
  return tools.call(name, args);
}

function record(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

function listIn(result: unknown, key: string): unknown[] {
  if (Array.isArray(result)) return result;
  const list = record(result)?.[key];
  return Array.isArray(list) ? list : [];
}

function trackOf(result: unknown, videoId: string, name: string): unknown[] {
  const root = record(result);
  const videos = root?.videos;
  if (Array.isArray(videos)) {
    const video = videos.map(record).find((v) => v?.id === videoId || v?.video_id === videoId);
    if (video) return trackOf(video, videoId, name);
  }
  const tracks = root?.tracks;
  if (Array.isArray(tracks)) {
    const track = tracks.map(record).find((t) => t?.track === name || t?.name === name);
    return Array.isArray(track?.clips) ? track.clips : [];
  }
  const listed = record(tracks)?.[name];
  if (Array.isArray(listed)) return listed;
  const nested = record(listed)?.clips;
  if (Array.isArray(nested)) return nested;
  return listIn(result, 'clips').filter((clip) => {
    const c = record(clip);
    return c !== null && (c.track ?? 'video') === name && (c.video_id ?? videoId) === videoId;
  });
}

const number = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/** The clips of `track` of `videoId` from a `get_timeline` result, in timeline order. */
export function readTrackResult(result: unknown, videoId: string, track: string): DirectorTrackClip[] {
  const clips: DirectorTrackClip[] = [];
  trackOf(result, videoId, track).forEach((item, order) => {
    const clip = record(item);
    const id = text(clip?.id) ?? text(clip?.clip_id);
    if (!clip || !id) return;
    const transition = record(clip.transition_in);
    clips.push({
      id,
      idx: typeof clip.idx === 'number' ? clip.idx : order,
      asset_id: text(clip.asset_id) ?? '',
      start_sec: number(clip.start_sec),
      trim_start_sec: number(clip.trim_start_sec) ?? 0,
      duration_sec: number(clip.duration_sec),
      speed: number(clip.speed) ?? 1,
      transition_in:
        transition && text(transition.type) && number(transition.duration_sec) !== null
          ? { type: String(transition.type), duration_sec: Number(transition.duration_sec) }
          : null,
    });
  });
  return clips.sort((a, b) => a.idx - b.idx);
}

/** The clips of the `video` track of `videoId` from a `get_timeline` result, in timeline order. */
export function readVideoTrackResult(result: unknown, videoId: string): DirectorClip[] {
  return readTrackResult(result, videoId, 'video').map(({ id, idx, asset_id }) => ({ id, idx, asset_id }));
}

/** The library from a `list_assets` result, in its order (oldest first). */
export function readLibraryResult(result: unknown): DirectorAsset[] {
  const items: DirectorAsset[] = [];
  for (const item of listIn(result, 'assets')) {
    const asset = record(item);
    const id = text(asset?.id) ?? text(asset?.asset_id);
    if (!asset || !id) continue;
    items.push({
      id,
      kind: text(asset.kind) ?? '',
      source: text(asset.source) ?? '',
      prompt: text(asset.prompt) ?? text(record(asset.metadata)?.prompt),
      duration_sec: number(asset.duration_sec) ?? number(record(asset.metadata)?.duration_sec),
    });
  }
  return items;
}

/** The new asset's id from a `generate_*` result (`{ asset: { id }, job_id, credits }`). */
export function readGeneratedAssetId(result: unknown): string | null {
  const root = record(result);
  return text(record(root?.asset)?.id) ?? text(root?.asset_id) ?? null;
}

/** The export an `export_video` result describes: its link, length and clip count (null when unreadable). */
export function readExportResult(
  result: unknown,
): { video_url: string; duration_sec: number | null; video_clip_count: number | null } | null {
  const root = record(result);
  const url = text(root?.video_url);
  if (!url) return null;
  return {
    video_url: url,
    duration_sec: number(root?.duration_sec),
    video_clip_count: number(root?.video_clip_count),
  };
}
