// The editor's vocabulary (docs/editor.md): pure constants and rules, no I/O.

/** Aspect ratios a project or video may have (docs/editor.md, Project). */
export const PROJECT_ASPECT_RATIOS = ['9:16', '1:1', '4:5', '16:9', '4:3'] as const;
export type ProjectAspectRatio = (typeof PROJECT_ASPECT_RATIOS)[number];

/** The five tracks of a video's timeline (docs/editor.md, Concepts): pictures, three of sound, text. */
export const TRACKS = ['video', 'voice', 'sfx', 'music', 'text'] as const;
export type Track = (typeof TRACKS)[number];

export const ASSET_KINDS = ['image', 'video', 'audio'] as const;
export type AssetKind = (typeof ASSET_KINDS)[number];

/** Where an asset came from (docs/editor.md, Asset). */
export const ASSET_SOURCES = ['agent_generate', 'import', 'upload', 'export'] as const;
export type AssetSource = (typeof ASSET_SOURCES)[number];

export const PROJECT_NAME_MAX = 120;
export const PROJECT_DESCRIPTION_MAX = 1000;
export const CONTEXT_MD_MAX = 100_000;
export const INSTRUCTION_MAX = 8000;
export const TURN_IMAGE_URLS_MAX = 10;
/** The charge of one agent turn (docs/api.md, Pricing), never refunded once begun (docs/api.md, Refunds). */
export const TURN_CREDITS = 5;
/** How long an image clip on the video track shows when no `duration_sec` is given (docs/editor.md, Clip). */
export const IMAGE_CLIP_DEFAULT_SEC = 5;
export const CLIP_VOLUME_MAX = 2;

export const DEFAULT_PROJECT_NAME = 'Untitled project';
export const DEFAULT_VIDEO_NAME = 'Main video';

/**
 * Which asset kinds a track takes (docs/editor.md, Routes): pictures on the video track, sound on the voice,
 * sfx and music tracks, none on the text track (its clips have no asset).
 */
export function trackAccepts(track: Track, kind: AssetKind): boolean {
  if (track === 'text') return false;
  return track === 'video' ? kind === 'image' || kind === 'video' : kind === 'audio' || kind === 'video';
}

/**
 * The ratio to generate in for a video whose ratio a model lacks: the model's ratio nearest in shape
 * (`4:5` → `3:4`, docs/editor.md, The tools); export then fits or fills it.
 */
export function nearestAspectRatio(wanted: string, available: readonly string[]): string {
  if (available.includes(wanted)) return wanted;
  const value = (ratio: string) => {
    const [w, h] = ratio.split(':').map(Number);
    return Math.log(w! / h!);
  };
  const target = value(wanted);
  let best = available[0]!;
  for (const ratio of available) {
    if (Math.abs(value(ratio) - target) < Math.abs(value(best) - target)) best = ratio;
  }
  return best;
}
