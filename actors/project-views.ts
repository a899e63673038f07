import type { AssetRecord } from './ports/assets-repository.ts';
import type { ClipRecord, ProjectRecord, VideoRecord } from './ports/projects-repository.ts';

// The public shapes of the editor's documents (docs/editor.md, Objects), built in one place
// for the routes, the events and the agent alike.

export function toProjectView(project: ProjectRecord) {
  return {
    id: project.id,
    name: project.name,
    description: project.description,
    aspect_ratio: project.aspect_ratio,
    context_md: project.context_md,
    revision: project.revision,
    created_at: project.created_at.toISOString(),
    updated_at: project.updated_at.toISOString(),
  };
}
export type ProjectView = ReturnType<typeof toProjectView>;

export function toVideoView(video: VideoRecord) {
  return {
    id: video.id,
    name: video.name,
    aspect_ratio: video.aspect_ratio,
    created_at: video.created_at.toISOString(),
  };
}
export type VideoView = ReturnType<typeof toVideoView>;

/** A clip; `start_sec` null means it follows the previous clip of its track. */
export function toClipView(clip: ClipRecord) {
  return {
    id: clip.id,
    video_id: clip.video_id,
    track: clip.track,
    idx: clip.idx,
    asset_id: clip.asset_id,
    start_sec: clip.start_sec,
    trim_start_sec: clip.trim_start_sec,
    duration_sec: clip.duration_sec,
    volume: clip.volume,
  };
}
export type ClipView = ReturnType<typeof toClipView>;

/** An asset, with its file's public URL (`mediaUrl`: `<PUBLIC_BASE_URL>/media/<id>`). */
export function toAssetView(asset: AssetRecord, mediaUrl: (mediaId: string) => string) {
  return {
    id: asset.id,
    kind: asset.kind,
    source: asset.source,
    url: mediaUrl(asset.media_id),
    metadata: asset.metadata,
    created_at: asset.created_at.toISOString(),
  };
}
export type AssetView = ReturnType<typeof toAssetView>;

/** Clips in timeline order: by video, track (spec order), then idx. */
export function orderedClips(project: ProjectRecord, videoId?: string): ClipRecord[] {
  const videoRank = new Map(project.videos.map((video, rank) => [video.id, rank]));
  const trackRank = { video: 0, voice: 1, sfx: 2, music: 3 } as const;
  return project.clips
    .filter((clip) => videoId === undefined || clip.video_id === videoId)
    .sort(
      (a, b) =>
        (videoRank.get(a.video_id) ?? 0) - (videoRank.get(b.video_id) ?? 0) ||
        trackRank[a.track] - trackRank[b.track] ||
        a.idx - b.idx,
    );
}
