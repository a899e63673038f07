import { clipKind, fieldApplies, type ApplicableField } from '../schemas/clip-applies.ts';
import type { AssetKind } from '../schemas/editor-terms.ts';
import {
  TEXT_COLOR_DEFAULT,
  TEXT_DURATION_DEFAULT_SEC,
  TEXT_FADE_DEFAULT_SEC,
  TEXT_STYLE_DEFAULTS,
  type Motion,
  type TextBackground,
  type TextPosition,
  type TextStyle,
  type TransitionIn,
} from '../schemas/timeline-terms.ts';
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

/**
 * A clip as it reads back (docs/editor.md, Clip): every field, each new-edition field at its default where it
 * applies and is unset — `transition_in` null, `motion` `none`, `speed` 1, fades 0; a text clip's style
 * `title`, its position and background the style's, colour white, fades 0.3 s cut to half the clip — and null
 * where it does not apply (clip-applies.ts). `assetKind` is the kind of the clip's asset (text clips have
 * none; undefined when it is not known: the stored values then read as they are). `start_sec` null means the
 * clip follows the previous clip of its track.
 */
export function toClipView(clip: ClipRecord, assetKind: AssetKind | undefined) {
  const kind = clipKind(clip.track, assetKind);
  const text = kind === 'text';
  /** The field's value: stored, else `fallback` where it applies; null where it does not. */
  const shown = <T>(field: ApplicableField, stored: T | undefined, fallback: T): T | null => {
    if (kind === undefined) return stored ?? null;
    return fieldApplies(field, clip.track, kind) ? (stored ?? fallback) : null;
  };
  const style = clip.style ?? 'title';
  const looks = TEXT_STYLE_DEFAULTS[style];
  const fade = text
    ? Math.min(TEXT_FADE_DEFAULT_SEC, (clip.duration_sec ?? TEXT_DURATION_DEFAULT_SEC) / 2)
    : 0;
  return {
    id: clip.id,
    video_id: clip.video_id,
    track: clip.track,
    idx: clip.idx,
    asset_id: clip.asset_id,
    start_sec: clip.start_sec,
    trim_start_sec: shown('trim_start_sec', clip.trim_start_sec, 0),
    duration_sec: clip.duration_sec,
    volume: shown('volume', clip.volume, 1),
    text: shown('text', clip.text, ''),
    style: shown<TextStyle>('style', clip.style, style),
    position: shown<TextPosition>('position', clip.position ?? undefined, looks.position),
    color: shown('color', clip.color, TEXT_COLOR_DEFAULT),
    background: shown<TextBackground>('background', clip.background ?? undefined, looks.background),
    transition_in: shown<TransitionIn | null>('transition_in', clip.transition_in, null),
    motion: shown<Motion>('motion', clip.motion, 'none'),
    speed: shown('speed', clip.speed, 1),
    fade_in_sec: shown('fade_in_sec', clip.fade_in_sec, fade),
    fade_out_sec: shown('fade_out_sec', clip.fade_out_sec, fade),
  };
}
export type ClipView = ReturnType<typeof toClipView>;

/** The views of `clips`, each with its asset's kind from `assets` (the project's library). */
export function toClipViews(
  clips: readonly ClipRecord[],
  assets: readonly Pick<AssetRecord, 'id' | 'kind'>[],
): ClipView[] {
  const kinds = new Map(assets.map((asset) => [asset.id, asset.kind]));
  return clips.map((clip) => toClipView(clip, clip.asset_id === null ? undefined : kinds.get(clip.asset_id)));
}

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
  const trackRank = { video: 0, voice: 1, sfx: 2, music: 3, text: 4 } as const;
  return project.clips
    .filter((clip) => videoId === undefined || clip.video_id === videoId)
    .sort(
      (a, b) =>
        (videoRank.get(a.video_id) ?? 0) - (videoRank.get(b.video_id) ?? 0) ||
        trackRank[a.track] - trackRank[b.track] ||
        a.idx - b.idx,
    );
}
