import type {
  DirectorAudioTrack,
  DirectorClipRef,
  DirectorIntent,
  DirectorMoveTarget,
} from './director-intents.ts';
import { callAgentTool, type DirectorClip } from './tool-results.ts';
import {
  directorReply,
  clipsPhrase,
  readDirectorLibrary,
  readDirectorTimeline,
  toolErrorText,
  type DirectorTurn,
} from './turn-context.ts';

// The plain edits of the director. Clip numbers are what the user sees: 1-based positions on the video track
// of the target video. A number that names no clip is answered, never guessed at.

const NEXT = 'What would you like to change next?';

function clipIndex(clips: readonly DirectorClip[], ref: DirectorClipRef): number | null {
  const index = ref === 'last' ? clips.length - 1 : ref - 1;
  return index >= 0 && index < clips.length ? index : null;
}

function noSuchClip(ref: DirectorClipRef, clips: readonly DirectorClip[]): string {
  if (clips.length === 0) {
    return directorReply(
      `The video track is empty, so there is no clip ${ref === 'last' ? 'to change' : ref}.`,
      'What would you like to add?',
    );
  }
  return directorReply(
    `There is no clip ${ref} — the video track has ${clipsPhrase(clips.length)}.`,
    'Which clip did you mean?',
  );
}

/** "remove clip 2". */
export async function directorRemoveClip(ctx: DirectorTurn, ref: DirectorClipRef): Promise<string> {
  const timeline = await readDirectorTimeline(ctx);
  if (!timeline.ok) return timeline.reply;
  const clips = timeline.value;
  const index = clipIndex(clips, ref);
  if (index === null) return noSuchClip(ref, clips);
  const outcome = await callAgentTool(ctx.tools, 'remove_clip', { clip_id: clips[index]!.id });
  if (!outcome.ok)
    return directorReply(`I couldn't remove clip ${index + 1}: ${toolErrorText(outcome.error)}.`, NEXT);
  return directorReply(
    `Removed clip ${index + 1}; the video track now has ${clipsPhrase(clips.length - 1)}.`,
    NEXT,
  );
}

/** The 0-based final position of the clip at `from`, or a reply when the target names nothing. */
function targetIndex(clips: readonly DirectorClip[], from: number, to: DirectorMoveTarget): number | string {
  switch (to.kind) {
    case 'start':
      return 0;
    case 'end':
      return clips.length - 1;
    case 'position':
      if (to.position >= 1 && to.position <= clips.length) return to.position - 1;
      return directorReply(
        `There is no position ${to.position} — the video track has ${clipsPhrase(clips.length)}.`,
        `Where should clip ${from + 1} go (1 to ${clips.length})?`,
      );
    case 'before':
    case 'after': {
      const anchor = clipIndex(clips, to.clip);
      if (anchor === null) return noSuchClip(to.clip, clips);
      // The final index counts positions after the moved clip has left its old place.
      const shift = anchor > from ? -1 : 0;
      return anchor + shift + (to.kind === 'after' ? 1 : 0);
    }
  }
}

/** "move clip 3 to the start / to the end / to position 1 / before clip 1". */
export async function directorMoveClip(
  ctx: DirectorTurn,
  ref: DirectorClipRef,
  to: DirectorMoveTarget,
): Promise<string> {
  const timeline = await readDirectorTimeline(ctx);
  if (!timeline.ok) return timeline.reply;
  const clips = timeline.value;
  const from = clipIndex(clips, ref);
  if (from === null) return noSuchClip(ref, clips);
  const target = targetIndex(clips, from, to);
  if (typeof target === 'string') return target;
  if (target === from) return directorReply(`Clip ${from + 1} is already at position ${from + 1}.`, NEXT);
  const outcome = await callAgentTool(ctx.tools, 'update_clip', { clip_id: clips[from]!.id, idx: target });
  if (!outcome.ok)
    return directorReply(`I couldn't move clip ${from + 1}: ${toolErrorText(outcome.error)}.`, NEXT);
  return directorReply(`Moved clip ${from + 1} to position ${target + 1}.`, NEXT);
}

/** "make it 16:9", "make it vertical". */
export async function directorSetAspectRatio(
  ctx: DirectorTurn,
  intent: Extract<DirectorIntent, { kind: 'set_aspect_ratio' }>,
): Promise<string> {
  const current = ctx.input.video.aspect_ratio;
  if (!intent.aspect_ratio) {
    return directorReply(
      `A video can be 9:16, 1:1, 4:5, 16:9 or 4:3; ${intent.named} is not one of them (this one is ${current}).`,
      'Which ratio would you like?',
    );
  }
  if (intent.aspect_ratio === current) return directorReply(`The video is already ${current}.`, NEXT);
  const outcome = await callAgentTool(ctx.tools, 'set_aspect_ratio', { aspect_ratio: intent.aspect_ratio });
  if (!outcome.ok) {
    return directorReply(
      `I couldn't change the aspect ratio to ${intent.aspect_ratio}: ${toolErrorText(outcome.error)}.`,
      NEXT,
    );
  }
  return directorReply(`The video is now ${intent.aspect_ratio} (it was ${current}).`, NEXT);
}

/** The picture "the image" means: this turn's first reference image, else the newest image of the library. */
async function theImage(ctx: DirectorTurn): Promise<{ id: string } | { reply: string }> {
  const reference = ctx.input.references.find((asset) => asset.kind === 'image');
  if (reference) return { id: reference.id };
  const library = await readDirectorLibrary(ctx);
  if (!library.ok) return { reply: library.reply };
  const newest = library.value.filter((asset) => asset.kind === 'image').at(-1);
  if (newest) return { id: newest.id };
  return {
    reply: directorReply(
      'I don\'t see an image yet: send one with your instruction (image_urls), or name its asset id ("add va_… as scene 2").',
      'Which image should I use?',
    ),
  };
}

/** "add the image as scene 2", "add va_… to the end". */
export async function directorAddToVideo(
  ctx: DirectorTurn,
  intent: Extract<DirectorIntent, { kind: 'add_to_video' }>,
): Promise<string> {
  const timeline = await readDirectorTimeline(ctx);
  if (!timeline.ok) return timeline.reply;
  const count = timeline.value.length;
  const position = intent.position;
  if (position !== null && (position < 1 || position > count + 1)) {
    return directorReply(
      `The video track has ${clipsPhrase(count)}, so scene ${position} would leave a gap.`,
      `Where should it go (1 to ${count + 1})?`,
    );
  }
  const asset = intent.asset_id ? { id: intent.asset_id } : await theImage(ctx);
  if ('reply' in asset) return asset.reply;
  const outcome = await callAgentTool(ctx.tools, 'add_clip', {
    track: 'video',
    asset_id: asset.id,
    ...(position === null ? {} : { idx: position - 1 }),
  });
  if (!outcome.ok)
    return directorReply(
      `I couldn't add ${asset.id} to the video track: ${toolErrorText(outcome.error)}.`,
      NEXT,
    );
  const at = position ?? count + 1;
  return directorReply(
    `Added ${asset.id} as scene ${at}; the video track now has ${clipsPhrase(count + 1)}.`,
    NEXT,
  );
}

const TRACK_NAMES: Readonly<Record<DirectorAudioTrack, string>> = {
  music: 'music',
  voice: 'voice',
  sfx: 'sound-effects (sfx)',
};

/** "use va_… as music / as voice / as sfx". */
export async function directorUseAudio(
  ctx: DirectorTurn,
  assetId: string,
  track: DirectorAudioTrack,
): Promise<string> {
  const outcome = await callAgentTool(ctx.tools, 'add_clip', { track, asset_id: assetId });
  if (!outcome.ok) {
    return directorReply(
      `I couldn't put ${assetId} on the ${TRACK_NAMES[track]} track: ${toolErrorText(outcome.error)}.`,
      'Which asset should I use instead?',
    );
  }
  return directorReply(`${assetId} is now on the ${TRACK_NAMES[track]} track.`, NEXT);
}
