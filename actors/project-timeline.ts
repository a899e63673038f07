import type { ClipRecord } from './ports/projects-repository.ts';

// Pure operations on a project's clips. Every track of every video keeps its clips at idx 0..n-1 without
// gaps or repeats: each operation re-numbers the one track it touches.

const sameTrack = (a: Pick<ClipRecord, 'video_id' | 'track'>) => (b: ClipRecord) =>
  b.video_id === a.video_id && b.track === a.track;

/** The clips of one track in timeline order. */
export function trackClips(clips: readonly ClipRecord[], videoId: string, track: ClipRecord['track']) {
  return clips.filter(sameTrack({ video_id: videoId, track })).sort((a, b) => a.idx - b.idx);
}

/** `clips` with `track`'s clips replaced by `ordered`, re-numbered from 0. */
function withTrack(clips: readonly ClipRecord[], key: ClipRecord, ordered: ClipRecord[]): ClipRecord[] {
  const others = clips.filter((clip) => !sameTrack(key)(clip));
  return [...others, ...ordered.map((clip, idx) => (clip.idx === idx ? clip : { ...clip, idx }))];
}

const clamp = (value: number, max: number) => Math.max(0, Math.min(value, max));

/** Inserts `clip` at `idx` (clamped; default: the end); later clips move one place on. */
export function insertClip(clips: readonly ClipRecord[], clip: ClipRecord, idx?: number): ClipRecord[] {
  const track = trackClips(clips, clip.video_id, clip.track);
  const at = clamp(idx ?? track.length, track.length);
  track.splice(at, 0, clip);
  return withTrack(clips, clip, track);
}

/** Moves a clip to `idx` (clamped) on its track; the clips between close up. */
export function moveClip(clips: readonly ClipRecord[], clip: ClipRecord, idx: number): ClipRecord[] {
  const track = trackClips(clips, clip.video_id, clip.track).filter((other) => other.id !== clip.id);
  track.splice(clamp(idx, track.length), 0, clip);
  return withTrack(clips, clip, track);
}

/** Removes a clip; the rest of its track closes up. */
export function removeClip(clips: readonly ClipRecord[], clip: ClipRecord): ClipRecord[] {
  const track = trackClips(clips, clip.video_id, clip.track).filter((other) => other.id !== clip.id);
  return withTrack(
    clips.filter((other) => other.id !== clip.id),
    clip,
    track,
  );
}
