import { IMAGE_CLIP_DEFAULT_SEC } from '../../../schemas/editor-terms.ts';
import {
  TEXT_DURATION_DEFAULT_SEC,
  TRANSITION_DEFAULT_SEC,
  TRANSITION_MAX_SEC,
  TRANSITION_MIN_SEC,
  type Motion,
  type TextStyle,
  type TransitionType,
} from '../../../schemas/timeline-terms.ts';
import type { DirectorClipRef } from './director-words.ts';
import type { FadeTrack, LookIntent } from './look-intents.ts';
import { callAgentTool, type DirectorAsset, type DirectorTrackClip } from './tool-results.ts';
import {
  clipsPhrase,
  directorReply,
  readDirectorLibrary,
  readDirectorTracks,
  toolErrorText,
  type DirectorTracks,
  type DirectorTurn,
} from './turn-context.ts';

// The director's steps for the look of the video (docs/editor.md, The builtin director): titles and captions
// (`add_text`), transitions on the cuts (`set_transition`), motion and speed (`update_clip`), sound fades.
// Clip numbers are positions on the video track from 1, as everywhere in the director; what cannot apply
// (motion on a video, speed on an image) is answered before any tool runs.

const NEXT = 'What would you like to change next?';
const FADE_DEFAULT_SEC = 2;

type Intent<Kind extends LookIntent['kind']> = Extract<LookIntent, { kind: Kind }>;

const round = (seconds: number) => Math.round(seconds * 100) / 100;
const seconds = (value: number) => `${round(value)} s`;

/** "clip 2", "clips 2 and 4", "clips 1, 2 and 3". */
function clipNumbers(numbers: readonly number[]): string {
  if (numbers.length === 1) return `clip ${numbers[0]}`;
  return `clips ${numbers.slice(0, -1).join(', ')} and ${numbers.at(-1)}`;
}

/** The video track and the library, or the reply that says why they could not be read. */
async function readVideoAndLibrary(
  ctx: DirectorTurn,
): Promise<{ tracks: DirectorTracks; library: Map<string, DirectorAsset> } | string> {
  const tracks = await readDirectorTracks(ctx);
  if (!tracks.ok) return tracks.reply;
  const library = await readDirectorLibrary(ctx);
  if (!library.ok) return library.reply;
  return { tracks: tracks.value, library: new Map(library.value.map((asset) => [asset.id, asset])) };
}

/** How long a video-track clip shows, as the export plays it (null when it cannot be known here). */
function shownSec(clip: DirectorTrackClip, asset: DirectorAsset | undefined): number | null {
  if (asset?.kind === 'image') return clip.duration_sec ?? IMAGE_CLIP_DEFAULT_SEC;
  const source = asset?.duration_sec ?? null;
  const remaining = source === null ? null : Math.max(0, source - clip.trim_start_sec) / clip.speed;
  if (clip.duration_sec === null) return remaining;
  return remaining === null ? clip.duration_sec : Math.min(clip.duration_sec, remaining);
}

/** The 0-based index `ref` names on a track of `count` clips, or the reply saying there is no such clip. */
function indexOf(ref: DirectorClipRef, count: number): number | string {
  const index = ref === 'last' ? count - 1 : ref - 1;
  if (index >= 0 && index < count) return index;
  if (count === 0) return directorReply('The video track is empty.', 'What would you like to add?');
  return directorReply(
    `There is no clip ${ref} — the video track has ${clipsPhrase(count)}.`,
    'Which clip did you mean?',
  );
}

// --- Text ---

const TEXT_NOUNS: Readonly<Record<TextStyle, string>> = {
  title: 'title',
  lower_third: 'lower third',
  caption: 'caption',
};

/** "add a title Lighthouse at dawn", "add a caption Low tide at 5 seconds". */
export async function directorAddText(ctx: DirectorTurn, intent: Intent<'add_text'>): Promise<string> {
  const noun = TEXT_NOUNS[intent.style];
  if (!intent.text) {
    return directorReply(
      `Happy to add a ${noun}: put its words after the ${noun}, for example "add a ${noun} Lighthouse at dawn".`,
      `What should the ${noun} say?`,
    );
  }
  // A title opens the video unless a time is named; a caption follows the previous text clip.
  const start = intent.start_sec ?? (intent.style === 'title' ? 0 : null);
  const outcome = await callAgentTool(ctx.tools, 'add_text', {
    text: intent.text,
    style: intent.style,
    ...(start === null ? {} : { start_sec: start }),
    ...(intent.duration_sec === null ? {} : { duration_sec: intent.duration_sec }),
  });
  if (!outcome.ok) return directorReply(`I couldn't add the ${noun}: ${toolErrorText(outcome.error)}.`, NEXT);
  const clip = (outcome.result as { clip?: { start_sec?: unknown; duration_sec?: unknown } }).clip;
  const at = typeof clip?.start_sec === 'number' ? clip.start_sec : start;
  const length = typeof clip?.duration_sec === 'number' ? clip.duration_sec : TEXT_DURATION_DEFAULT_SEC;
  const when = at === null ? 'right after the previous text' : `at ${seconds(at)}`;
  return directorReply(`Added the ${noun} "${intent.text}" ${when}, for ${seconds(length)}.`, NEXT);
}

// --- Transitions ---

const TRANSITION_NAMES: Readonly<Record<TransitionType, string>> = {
  fade: 'crossfade',
  fadeblack: 'fade through black',
  fadewhite: 'fade through white',
  wipeleft: 'wipe to the left',
  wiperight: 'wipe to the right',
  slideleft: 'slide to the left',
  slideright: 'slide to the right',
  circleopen: 'circle opening',
};

/**
 * The longest transition (a multiple of 0.1 s, at most `wanted`) that fits half of every clip it joins: the
 * clips at `indexes` and each one's predecessor. Clips whose length is unknown here are left to the tool.
 */
function fittingDuration(lengths: readonly (number | null)[], indexes: readonly number[], wanted: number) {
  const joined = indexes.flatMap((index) => (index === 0 ? [index] : [index - 1, index]));
  const known = joined.map((index) => lengths[index]).filter((length) => length != null);
  const room = Math.min(TRANSITION_MAX_SEC, ...known.map((length) => length / 2));
  return Math.min(wanted, Math.floor(room * 10 + 1e-9) / 10);
}

/** "crossfade between the scenes", "fade to black between scenes", "no transitions", "a dissolve into clip 3". */
export async function directorSetTransition(
  ctx: DirectorTurn,
  intent: Intent<'set_transition'>,
): Promise<string> {
  const read = await readVideoAndLibrary(ctx);
  if (typeof read === 'string') return read;
  const clips = read.tracks.video;
  let index: number | null = null;
  if (intent.clip !== null) {
    const found = indexOf(intent.clip, clips.length);
    if (typeof found === 'string') return found;
    index = found;
  } else if (clips.length < 2) {
    return directorReply(
      `There is no cut yet: the video track has ${clipsPhrase(clips.length)}.`,
      'What would you like to add?',
    );
  }
  const target = index === null ? 'all' : clips[index]!.id;
  if (intent.type === 'none') {
    const outcome = await callAgentTool(ctx.tools, 'set_transition', { clip_id: target, type: 'none' });
    if (!outcome.ok)
      return directorReply(`I couldn't remove the transitions: ${toolErrorText(outcome.error)}.`, NEXT);
    const removed = index === null ? 'every cut is a hard cut' : `clip ${index + 1} starts with a hard cut`;
    return directorReply(`Removed the transitions: ${removed} again.`, NEXT);
  }
  const where = index === null ? `every cut (${clips.length - 1})` : `clip ${index + 1}`;
  const lengths = clips.map((clip) => shownSec(clip, read.library.get(clip.asset_id)));
  const indexes = index === null ? clips.map((_, i) => i).slice(1) : [index];
  const wanted = intent.duration_sec ?? TRANSITION_DEFAULT_SEC;
  const duration = fittingDuration(lengths, indexes, wanted);
  if (duration < TRANSITION_MIN_SEC) {
    return directorReply(
      `The clips are too short for a transition there (it may last at most half of each clip it joins).`,
      NEXT,
    );
  }
  const name = TRANSITION_NAMES[intent.type];
  const outcome = await callAgentTool(ctx.tools, 'set_transition', {
    clip_id: target,
    type: intent.type,
    duration_sec: duration,
  });
  if (!outcome.ok) return directorReply(`I couldn't add the ${name}: ${toolErrorText(outcome.error)}.`, NEXT);
  const shortened =
    duration < wanted
      ? ` (${seconds(wanted)} would not fit the shortest clip, so I made it ${seconds(duration)})`
      : '';
  const effect =
    index === 0
      ? 'the video fades in from black'
      : `each transition overlaps two clips, so the video is ${seconds(duration * indexes.length)} shorter`;
  const into = index === null ? `on ${where}` : `into ${where}`;
  return directorReply(`Added a ${seconds(duration)} ${name} ${into}${shortened}; ${effect}.`, NEXT);
}

// --- Motion and speed ---

const MOTION_NAMES: Readonly<Record<Motion, string>> = {
  none: 'no motion',
  zoom_in: 'a slow zoom in',
  zoom_out: 'a slow zoom out',
  pan_left: 'a slow pan to the left',
  pan_right: 'a slow pan to the right',
};

/** Runs `update_clip` on each clip in turn; answers the first failure's text, or null when all went. */
async function updateEach(
  ctx: DirectorTurn,
  changes: readonly { clip_id: string; fields: Record<string, unknown> }[],
): Promise<string | null> {
  for (const change of changes) {
    const outcome = await ctx.tools.call('update_clip', { clip_id: change.clip_id, ...change.fields });
    if (!outcome.ok) return toolErrorText(outcome.error);
  }
  return null;
}

/** "slow zoom on the images", "pan left on clip 2", "no zoom". Motion applies to the video track's images. */
export async function directorSetMotion(ctx: DirectorTurn, intent: Intent<'set_motion'>): Promise<string> {
  const read = await readVideoAndLibrary(ctx);
  if (typeof read === 'string') return read;
  const clips = read.tracks.video;
  const kindOf = (clip: DirectorTrackClip) => read.library.get(clip.asset_id)?.kind;
  let targets: number[];
  if (intent.clip !== null) {
    const index = indexOf(intent.clip, clips.length);
    if (typeof index === 'string') return index;
    if (kindOf(clips[index]!) !== 'image') {
      return directorReply(
        `Clip ${index + 1} is a video: zoom and pan move still images only.`,
        'Which image should move?',
      );
    }
    targets = [index];
  } else {
    targets = clips.map((_, i) => i).filter((i) => kindOf(clips[i]!) === 'image');
    if (targets.length === 0) {
      return directorReply(
        'There are no images on the video track: zoom and pan move still images only. Say "add the image as scene 2" to place one.',
        'What would you like to do?',
      );
    }
  }
  const failed = await updateEach(
    ctx,
    targets.map((i) => ({ clip_id: clips[i]!.id, fields: { motion: intent.motion } })),
  );
  const which = clipNumbers(targets.map((i) => i + 1));
  if (failed) return directorReply(`I couldn't change the motion of ${which}: ${failed}.`, NEXT);
  if (intent.motion === 'none')
    return directorReply(`The image${targets.length === 1 ? '' : 's'} (${which}) stand still now.`, NEXT);
  return directorReply(
    `Added ${MOTION_NAMES[intent.motion]} to ${targets.length === 1 ? 'the image' : `${targets.length} images`} (${which}).`,
    NEXT,
  );
}

function speedName(speed: number): string {
  const names: Record<number, string> = {
    0.25: 'quarter speed',
    0.5: 'half speed',
    1: 'normal speed',
    2: 'double speed',
  };
  return names[speed] ?? `${speed}× speed`;
}

/** "play clip 2 at half speed", "all clips at normal speed". Speed applies to the video track's videos. */
export async function directorSetSpeed(ctx: DirectorTurn, intent: Intent<'set_speed'>): Promise<string> {
  const read = await readVideoAndLibrary(ctx);
  if (typeof read === 'string') return read;
  const clips = read.tracks.video;
  const kindOf = (clip: DirectorTrackClip) => read.library.get(clip.asset_id)?.kind;
  let targets: number[];
  if (intent.clip !== 'all') {
    const index = indexOf(intent.clip, clips.length);
    if (typeof index === 'string') return index;
    if (kindOf(clips[index]!) === 'image') {
      return directorReply(
        `Clip ${index + 1} is an image: it has no speed, it shows for its duration (say "slow zoom on the images" to make it move).`,
        'Which video clip did you mean?',
      );
    }
    targets = [index];
  } else {
    targets = clips.map((_, i) => i).filter((i) => kindOf(clips[i]!) !== 'image');
    if (targets.length === 0)
      return directorReply('There are no video clips on the video track.', 'What would you like to add?');
  }
  const failed = await updateEach(
    ctx,
    targets.map((i) => ({ clip_id: clips[i]!.id, fields: { speed: intent.speed } })),
  );
  const which = clipNumbers(targets.map((i) => i + 1));
  if (failed) return directorReply(`I couldn't change the speed of ${which}: ${failed}.`, NEXT);
  const lasts = targets.length === 1 ? lastsAfter(clips[targets[0]!]!, read.library, intent.speed) : '';
  return directorReply(
    `${which[0]!.toUpperCase()}${which.slice(1)} now play${targets.length === 1 ? 's' : ''} at ${speedName(intent.speed)}${lasts}.`,
    NEXT,
  );
}

/** ", so it now lasts 10 s" when the clip plays its source to the end (its length follows the speed). */
function lastsAfter(clip: DirectorTrackClip, library: Map<string, DirectorAsset>, speed: number): string {
  if (clip.duration_sec !== null) return '';
  const length = shownSec({ ...clip, speed }, library.get(clip.asset_id));
  return length === null ? '' : `, so it now lasts ${seconds(length)}`;
}

// --- Sound fades ---

const TRACK_NAMES: Readonly<Record<FadeTrack, string>> = {
  music: 'music',
  voice: 'voice',
  sfx: 'sound effects',
};

/** "fade out the music at the end", "fade in the music over 3 seconds": the last (or first) clip of the track. */
export async function directorFadeAudio(ctx: DirectorTurn, intent: Intent<'fade_audio'>): Promise<string> {
  const tracks = await readDirectorTracks(ctx);
  if (!tracks.ok) return tracks.reply;
  const clips = tracks.value[intent.track];
  const name = TRACK_NAMES[intent.track];
  if (clips.length === 0) {
    return directorReply(
      `There is no ${name} on the timeline yet: say "use va_… as ${intent.track}" to add some.`,
      'What would you like to do?',
    );
  }
  const clip = intent.edge === 'out' ? clips.at(-1)! : clips[0]!;
  const duration = intent.duration_sec ?? FADE_DEFAULT_SEC;
  const fade = intent.edge === 'out' ? { fade_out_sec: duration } : { fade_in_sec: duration };
  const outcome = await callAgentTool(ctx.tools, 'update_clip', { clip_id: clip.id, ...fade });
  if (!outcome.ok)
    return directorReply(
      `I couldn't fade the ${name} ${intent.edge}: ${toolErrorText(outcome.error)}.`,
      NEXT,
    );
  const span = intent.edge === 'out' ? `its last ${seconds(duration)}` : `its first ${seconds(duration)}`;
  return directorReply(`The ${name} now fades ${intent.edge} over ${span}.`, NEXT);
}
