import { IMAGE_CLIP_DEFAULT_SEC, type Track } from '../../schemas/editor-terms.ts';
import {
  TEXT_COLOR_DEFAULT,
  TEXT_DURATION_DEFAULT_SEC,
  TEXT_FADE_DEFAULT_SEC,
  TEXT_STYLE_DEFAULTS,
} from '../../schemas/timeline-terms.ts';
import type {
  ExportPlan,
  ExportSource,
  FilterSupport,
  OutputSpec,
  PictureClip,
  SoundClip,
  TextOverlay,
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
  const sourceOf = (clip: ClipRecord): ExportSource | undefined => {
    // A text clip has no asset (null); every other clip names one, whose source may be gone.
    const assetId: string | null = clip.asset_id;
    return assetId === null ? undefined : input.sources.get(assetId);
  };

  const picture: PictureClip[] = [];
  for (const clip of videoTrack) {
    const source = sourceOf(clip);
    if (!source) continue;
    if (source.kind === 'image') {
      // An image has no length of its own: it shows for what the clip says, or the default (docs/editor.md).
      const durationSec = clip.duration_sec ?? IMAGE_CLIP_DEFAULT_SEC;
      const motion = clip.motion !== undefined && clip.motion !== 'none' ? { motion: clip.motion } : {};
      if (durationSec > 0) {
        picture.push({
          source,
          trimStartSec: 0,
          durationSec,
          volume: clip.volume,
          ...motion,
          ...effects(clip),
        });
      }
    } else if (source.kind === 'video') {
      const speed = clip.speed !== undefined && clip.speed > 0 ? clip.speed : 1;
      const span = playableSpan(clip, source, speed);
      if (span) {
        const faster = speed !== 1 ? { speed } : {};
        picture.push({ source, ...span, volume: clip.volume, ...faster, ...effects(clip) });
      }
    }
    // An audio source on the video track has no picture (the editor refuses it anyway): nothing to show.
  }
  fitTransitions(picture);

  const sounds: SoundClip[] = [];
  for (const track of SOUND_TRACKS) {
    // Where the previous clip of this track ended: a clip without `start_sec` follows it (0 for the first).
    let cursor = 0;
    for (const clip of byIdx(clips, track)) {
      const source = sourceOf(clip);
      // Without a source its length is unknown, so it cannot move the cursor either.
      if (!source || source.kind === 'image') continue;
      const startSec = clip.start_sec ?? cursor;
      const span = playableSpan(clip, source, 1);
      // A silent clip still takes its time on the track (the editor shows it there), so the next one follows
      // its end; it just adds nothing to the mix.
      cursor = startSec + (span?.durationSec ?? 0);
      if (span && source.audio) {
        sounds.push({ source, track, startSec, ...span, volume: clip.volume, ...soundFades(clip) });
      }
    }
  }

  const texts = textOverlays(clips);
  return {
    plan: {
      picture,
      sounds,
      ...(texts.length > 0 ? { texts } : {}),
      output: input.output,
      filters: input.filters,
    },
    videoClipCount: picture.length,
    audioOverlayCount: sounds.length,
  };
}

/** A clip's sound fades, when it has any (a plan leaves out what is at its default). */
function soundFades(clip: ClipRecord): { fadeInSec?: number; fadeOutSec?: number } {
  return {
    ...(clip.fade_in_sec !== undefined && clip.fade_in_sec > 0 ? { fadeInSec: clip.fade_in_sec } : {}),
    ...(clip.fade_out_sec !== undefined && clip.fade_out_sec > 0 ? { fadeOutSec: clip.fade_out_sec } : {}),
  };
}

/** A video-track clip's transition and sound fades, when it has them. */
function effects(clip: ClipRecord): Pick<PictureClip, 'transitionIn' | 'fadeInSec' | 'fadeOutSec'> {
  const transition = clip.transition_in;
  return {
    ...(transition ? { transitionIn: { type: transition.type, durationSec: transition.duration_sec } } : {}),
    ...soundFades(clip),
  };
}

/**
 * Keeps every transition within half of each clip it joins as placed: the editor checks that against the
 * timeline, but a clip whose source is gone is left out here and its neighbours then meet. A transition that
 * no longer fits is shortened to fit (at least a frame is the picture graph's business).
 */
function fitTransitions(picture: PictureClip[]): void {
  picture.forEach((clip, i) => {
    const transition = clip.transitionIn;
    if (!transition) return;
    const before = i > 0 ? picture[i - 1]!.durationSec / 2 : Infinity;
    const limit = Math.min(before, clip.durationSec / 2);
    if (transition.durationSec > limit) clip.transitionIn = { ...transition, durationSec: limit };
  });
}

/** Whether a clip is on the text track (the track's name is compared as text: older records have no such track). */
function onTextTrack(clip: ClipRecord): boolean {
  const track: string = clip.track;
  return track === 'text';
}

/**
 * The text track's clips, in `idx` order, with every default resolved (docs/editor.md, Text): the style's
 * position and background, white, 3 s, right after the previous text clip when `start_sec` is null, fades of
 * 0.3 s unless set, each cut to half the clip's duration. A clip without words is left out.
 */
function textOverlays(clips: ClipRecord[]): TextOverlay[] {
  const overlays: TextOverlay[] = [];
  let cursor = 0;
  const track = clips.filter(onTextTrack).sort((a, b) => a.idx - b.idx);
  for (const clip of track) {
    const style = clip.style ?? 'title';
    const defaults = TEXT_STYLE_DEFAULTS[style];
    const durationSec = clip.duration_sec ?? TEXT_DURATION_DEFAULT_SEC;
    const startSec = clip.start_sec ?? cursor;
    cursor = startSec + durationSec;
    const text = clip.text ?? '';
    if (text.trim() === '' || durationSec <= 0) continue;
    const fade = (value: number | undefined) => Math.min(value ?? TEXT_FADE_DEFAULT_SEC, durationSec / 2);
    overlays.push({
      text,
      style,
      position: clip.position ?? defaults.position,
      color: clip.color ?? TEXT_COLOR_DEFAULT,
      background: clip.background ?? defaults.background,
      startSec,
      durationSec,
      fadeInSec: fade(clip.fade_in_sec),
      fadeOutSec: fade(clip.fade_out_sec),
    });
  }
  return overlays;
}

/** The clips of one track, in `idx` order (stored order is not promised). */
function byIdx(clips: ClipRecord[], track: Track): ClipRecord[] {
  return clips.filter((clip) => clip.track === track).sort((a, b) => a.idx - b.idx);
}

/**
 * What a timed source (video or audio) plays: from the trim for the clip's duration, or to its end, never past
 * its end — ffmpeg would otherwise pad a short source with a frozen frame or silence. At `speed` s the clip
 * reads s seconds of source per second of timeline, so its end comes s times sooner (`durationSec` is always
 * timeline time). Null when nothing is left (a trim at or past the end), or when neither the clip nor the
 * probe gives a length.
 */
function playableSpan(
  clip: ClipRecord,
  source: ExportSource,
  speed: number,
): { trimStartSec: number; durationSec: number } | null {
  const trimStartSec = Math.max(0, clip.trim_start_sec);
  const remaining = source.durationSec === null ? null : (source.durationSec - trimStartSec) / speed;
  if (remaining !== null && remaining <= 0) return null;
  const wanted = clip.duration_sec ?? remaining;
  if (wanted === null) return null;
  const durationSec = remaining === null ? wanted : Math.min(wanted, remaining);
  return durationSec > 0 ? { trimStartSec, durationSec } : null;
}
