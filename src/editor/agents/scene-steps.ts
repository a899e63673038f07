import type { DirectorIntent } from './director-intents.ts';
import {
  formatStoryboard,
  STORYBOARD_MAX_SCENES,
  parseLastStoryboard,
  storyboardScenePrompts,
  sceneWithNote,
  storyboardScenesDone,
} from './storyboard.ts';
import { callAgentTool, readGeneratedAssetId, type DirectorAsset } from './tool-results.ts';
import {
  directorReply,
  clipsPhrase,
  readDirectorLibrary,
  readDirectorTimeline,
  toolErrorText,
  type DirectorTurn,
} from './turn-context.ts';

// The storyboard half of the director: one turn writes the plan, each later "continue" turn generates exactly
// one scene and appends it to the video track. A scene is done once a generated video with its prompt is in
// the library (storyboard.ts), so a failed or interrupted turn simply leaves that scene to the next one.

// A listing that leaves out kind or source still counts: the prompt match alone identifies a scene.
function isGeneratedVideo(asset: DirectorAsset): boolean {
  return (!asset.source || asset.source === 'agent_generate') && (!asset.kind || asset.kind === 'video');
}

const EXAMPLE = '"a 3-scene video about a lighthouse at dawn"';

/** Writes the storyboard of a video request into the project context; generates nothing. */
export async function planStoryboard(
  ctx: DirectorTurn,
  intent: Extract<DirectorIntent, { kind: 'storyboard' }>,
): Promise<string> {
  if (!intent.subject) {
    return directorReply(
      `Happy to plan it. Tell me the subject, for example ${EXAMPLE}.`,
      'What should the video be about?',
    );
  }
  const notes: string[] = [];
  if (intent.scenes > STORYBOARD_MAX_SCENES)
    notes.push(`I can plan at most ${STORYBOARD_MAX_SCENES} scenes, so I planned ${STORYBOARD_MAX_SCENES}.`);
  const board = { subject: intent.subject, scenes: storyboardScenePrompts(intent.subject, intent.scenes) };
  if (intent.aspect_ratio && intent.aspect_ratio !== ctx.input.video.aspect_ratio) {
    const outcome = await callAgentTool(ctx.tools, 'set_aspect_ratio', { aspect_ratio: intent.aspect_ratio });
    notes.push(
      outcome.ok
        ? `The video is now ${intent.aspect_ratio}.`
        : `I couldn't change the aspect ratio to ${intent.aspect_ratio}: ${toolErrorText(outcome.error)}.`,
    );
  }
  const separator = ctx.input.project.context_md.trim() ? '\n\n' : '';
  const appended = await callAgentTool(ctx.tools, 'append_context', {
    text: separator + formatStoryboard(board),
  });
  if (!appended.ok) {
    return directorReply(
      `I couldn't save the storyboard to the project context: ${toolErrorText(appended.error)}.`,
      'Could you send the request again?',
    );
  }
  const n = board.scenes.length;
  const list = board.scenes.map((scene, i) => `${i + 1}. ${scene}`).join('\n');
  const seconds = `${ctx.settings.sceneSeconds}-second ${ctx.settings.resolution}`;
  return [
    `Here is the storyboard for a ${n}-scene video about ${board.subject} (saved in the project context):`,
    list,
    directorReply(
      [
        ...notes,
        `I'll generate one scene per step as a ${seconds} clip and add it to the end of the video track.`,
      ].join(' '),
      'Shall I generate scene 1?',
    ),
  ].join('\n\n');
}

/**
 * Generates the next scene of the last storyboard and appends it to the video track. A `note` ("continue with
 * the sunset" → "the sunset", sandbox markers included) joins the scene's prompt (`sceneWithNote`).
 */
export async function continueStoryboard(ctx: DirectorTurn, note = ''): Promise<string> {
  const board = parseLastStoryboard(ctx.input.project.context_md);
  if (!board) {
    return directorReply(
      `There is no storyboard to continue yet. Tell me what to make, for example ${EXAMPLE}.`,
      'What should the video be about?',
    );
  }
  const library = await readDirectorLibrary(ctx, 'Shall I try again?');
  if (!library.ok) return library.reply;
  const timeline = await readDirectorTimeline(ctx, 'Shall I try again?');
  if (!timeline.ok) return timeline.reply;

  const generated = library.value
    .filter((asset) => isGeneratedVideo(asset) && asset.prompt)
    .map((asset) => asset.prompt!);
  const done = storyboardScenesDone(board, generated);
  const total = board.scenes.length;
  const pending = board.scenes.map((_, i) => i + 1).filter((scene) => !done.has(scene));
  const scene = pending[0];
  if (scene === undefined) {
    return directorReply(
      `All ${total} scenes of the storyboard about ${board.subject} are already generated ` +
        `(the video track has ${clipsPhrase(timeline.value.length)}).`,
      'Would you like any changes before you export it?',
    );
  }

  const prompt = sceneWithNote(board.scenes[scene - 1]!, note);
  const generation = await callAgentTool(ctx.tools, 'generate_video', {
    prompt,
    duration_seconds: ctx.settings.sceneSeconds,
    resolution: ctx.settings.resolution,
  });
  if (!generation.ok) {
    return directorReply(
      `Generating scene ${scene} of ${total} failed: ${toolErrorText(generation.error)}. Nothing was added to the timeline.`,
      `Shall I try scene ${scene} again?`,
    );
  }
  const assetId = readGeneratedAssetId(generation.result);
  if (!assetId) {
    return directorReply(
      `Scene ${scene} was generated, but the result did not say which asset it became, so I did not place it.`,
      'Which asset should I add to the video track?',
    );
  }
  const added = await callAgentTool(ctx.tools, 'add_clip', { track: 'video', asset_id: assetId });
  if (!added.ok) {
    return directorReply(
      `Scene ${scene} was generated as ${assetId}, but I couldn't add it to the video track: ${toolErrorText(added.error)}. ` +
        `Say "add ${assetId} to the end" to place it.`,
      'What would you like to do?',
    );
  }
  const position = timeline.value.length + 1;
  const next = pending[1];
  if (next === undefined) {
    return directorReply(
      `Added scene ${scene} (${prompt}) as clip ${position}. All ${total} scenes are on the timeline.`,
      'Shall I export it, or would you like changes?',
    );
  }
  return directorReply(
    `Scene ${scene} of ${total} is on the timeline. Clip ${position} shows: ${prompt}.`,
    `Shall I continue with scene ${next}?`,
  );
}
