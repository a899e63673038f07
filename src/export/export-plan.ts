import { IMAGE_CLIP_DEFAULT_SEC, type Track } from '../../schemas/editor-terms.ts';
import type {
  ExportPlan,
  ExportSource,
  FilterSupport,
  OutputSpec,
  PictureClip,
  SoundClip,
} from '../../workers/index.ts';
import type { ClipRecord, ProjectRecord } from '../../actors/index.ts';

// Turns a video's timeline (docs/editor.md, How the timeline is resolved) into the plain ExportPlan the
// export pool renders. Pure: the caller has already probed and staged every source, and chosen the output
// size (services may not import workers/export/output-size.ts), so this is only arithmetic on seconds.

/** The audio tracks, in the order their sounds are listed in the plan. */
const SOUND_TRACKS = ['voice', 'sfx', 'music'] as const satisfies readonly Track[];

export interface ExportPlanInput {
  project: ProjectRecord;
  videoId: string;
  /** Probed, staged sources by asset id. A clip whose asset has no source here is left out. */
  sources: Map<string, ExportSource>;
  output: OutputSpec;
  filters: FilterSupport;
}

/** The plan, with what was actually placed (the answer's counts: docs/editor.md, Routes). */
export interface ExportPlanResult {
  plan: ExportPlan;
  /** Picture clips placed on the video track. */
  videoClipCount: number;
  /** Sound clips placed on the voice, sfx and music tracks. */
  audioOverlayCount: number;
}

/**
 * Resolves the timeline of `videoId` into an ExportPlan: the video track in `idx` order as pictures, each
 * audio track in `idx` order as sounds placed on the timeline. Clips that cannot play (no source, a trim at
 * or past the source's end, a sound clip whose source has no audio) are left out and not counted.
 * Answers `no_video_clips` when the video track has no clip at all.
 */
export function exportPlan(input: ExportPlanInput): ExportPlanResult | { error: 'no_video_clips' } {
  const clips = input.project.clips.filter((clip) => clip.video_id === input.videoId);
  const videoTrack = byIdx(clips, 'video');
  if (videoTrack.length === 0) return { error: 'no_video_clips' };

  const picture: PictureClip[] = [];
  for (const clip of videoTrack) {
    const source = input.sources.get(clip.asset_id);
    if (!source) continue;
    if (source.kind === 'image') {
      // An image has no length of its own: it shows for what the clip says, or the default (docs/editor.md).
      const durationSec = clip.duration_sec ?? IMAGE_CLIP_DEFAULT_SEC;
      if (durationSec > 0) picture.push({ source, trimStartSec: 0, durationSec, volume: clip.volume });
    } else if (source.kind === 'video') {
      const span = playableSpan(clip, source);
      if (span) picture.push({ source, ...span, volume: clip.volume });
    }
    // An audio source on the video track has no picture (the editor refuses it anyway): nothing to show.
  }

  const sounds: SoundClip[] = [];
  for (const track of SOUND_TRACKS) {
    // Where the previous clip of this track ended: a clip without `start_sec` follows it (0 for the first).
    let cursor = 0;
    for (const clip of byIdx(clips, track)) {
      const source = input.sources.get(clip.asset_id);
      // Without a source its length is unknown, so it cannot move the cursor either.
      if (!source || source.kind === 'image') continue;
      const startSec = clip.start_sec ?? cursor;
      const span = playableSpan(clip, source);
      // A silent clip still takes its time on the track (the editor shows it there), so the next one follows
      // its end; it just adds nothing to the mix.
      cursor = startSec + (span?.durationSec ?? 0);
      if (span && source.audio) sounds.push({ source, track, startSec, ...span, volume: clip.volume });
    }
  }

  return {
    plan: { picture, sounds, output: input.output, filters: input.filters },
    videoClipCount: picture.length,
    audioOverlayCount: sounds.length,
  };
}

/** The clips of one track, in `idx` order (stored order is not promised). */
function byIdx(clips: ClipRecord[], track: Track): ClipRecord[] {
  return clips.filter((clip) => clip.track === track).sort((a, b) => a.idx - b.idx);
}

/**
 * What a timed source (video or audio) plays: from the trim for the clip's duration, or to its end, never past
 * its end — ffmpeg would otherwise pad a short source with a frozen frame or silence. Null when nothing is left
 * (a trim at or past the end), or when neither the clip nor the probe gives a length.
 */
function playableSpan(
  clip: ClipRecord,
  source: ExportSource,
): { trimStartSec: number; durationSec: number } | null {
  const trimStartSec = Math.max(0, clip.trim_start_sec);
  const remaining = source.durationSec === null ? null : source.durationSec - trimStartSec;
  if (remaining !== null && remaining <= 0) return null;
  const wanted = clip.duration_sec ?? remaining;
  if (wanted === null) return null;
  const durationSec = remaining === null ? wanted : Math.min(wanted, remaining);
  return durationSec > 0 ? { trimStartSec, durationSec } : null;
}
