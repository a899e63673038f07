import type { AgentModel, AgentOutput, AgentReply, AgentTools, AgentTurnInput } from './agent-model.ts';
import { parseDirectorIntent, type DirectorIntent } from './director-intents.ts';
import { directorExport } from './export-step.ts';
import {
  directorAddText,
  directorFadeAudio,
  directorSetMotion,
  directorSetSpeed,
  directorSetTransition,
} from './look-steps.ts';
import { continueStoryboard, planStoryboard } from './scene-steps.ts';
import {
  directorAddToVideo,
  directorMoveClip,
  directorRemoveClip,
  directorSetAspectRatio,
  directorUseAudio,
} from './timeline-edits.ts';
import { directorReply, type DirectorSettings, type DirectorTurn } from './turn-context.ts';

// The builtin director (docs/editor.md, The builtin director): deterministic and offline, so the whole editor
// works and is testable without an LLM. Like the LLM agent it acts only through the runtime's tools, makes at
// most one media generation per call, and hands the turn back with a question.

export interface BuiltinAgentOptions {
  /** Length of each generated scene (default 5). */
  sceneSeconds?: DirectorSettings['sceneSeconds'];
  /** Resolution of each generated scene (default `480p`, the cheapest). */
  resolution?: DirectorSettings['resolution'];
}

const HELP =
  'I\'m the built-in director. I can plan a video ("a 3-scene video about a lighthouse at dawn") and then ' +
  'generate one scene each time you say "continue" (add a note: "continue with the sunset"); edit the ' +
  'timeline ("remove clip 2", "move clip 3 to the start", "make it 16:9", "add the image as scene 2", ' +
  '"use va_… as music"); put words on screen ("add a title Lighthouse at dawn", "add a caption Low tide at 5 ' +
  'seconds"); add transitions ("crossfade between the scenes", "fade to black between scenes"), motion and ' +
  'speed ("slow zoom on the images", "play clip 2 at half speed") and sound fades ("fade out the music at the ' +
  'end"); and export the video ("export it", or "export a preview" to check it quickly).';
const CANNOT = "I can't do that myself (or I didn't understand it).";

function step(ctx: DirectorTurn, intent: DirectorIntent): Promise<string> | string {
  switch (intent.kind) {
    case 'storyboard':
      return planStoryboard(ctx, intent);
    case 'continue':
      return continueStoryboard(ctx, intent.note);
    case 'remove_clip':
      return directorRemoveClip(ctx, intent.clip);
    case 'move_clip':
      return directorMoveClip(ctx, intent.clip, intent.to);
    case 'set_aspect_ratio':
      return directorSetAspectRatio(ctx, intent);
    case 'add_to_video':
      return directorAddToVideo(ctx, intent);
    case 'use_audio':
      return directorUseAudio(ctx, intent.asset_id, intent.track);
    case 'export':
      return directorExport(ctx, intent);
    case 'add_text':
      return directorAddText(ctx, intent);
    case 'set_transition':
      return directorSetTransition(ctx, intent);
    case 'set_motion':
      return directorSetMotion(ctx, intent);
    case 'set_speed':
      return directorSetSpeed(ctx, intent);
    case 'fade_audio':
      return directorFadeAudio(ctx, intent);
    case 'help':
      return directorReply(intent.asked ? HELP : `${CANNOT} ${HELP}`, 'What would you like to do?');
  }
}

// Pictures without words: placing them unasked could be wrong, so say where they are and ask.
function imagesOnly(input: AgentTurnInput): string {
  const ids = input.references.map((asset) => asset.id);
  if (ids.length === 0) return directorReply(HELP, 'What would you like to do?');
  const what =
    ids.length === 1 ? `Your image (${ids[0]}) is` : `Your ${ids.length} images (${ids.join(', ')}) are`;
  return directorReply(
    `${what} in the library. Say "add the image as scene 2" or "add ${ids[0]} to the end" to use it.`,
    ids.length === 1 ? 'What should I do with it?' : 'What should I do with them?',
  );
}

/** The builtin director (`AGENT=builtin`): one instruction, one step, one reply ending with a question. */
export function createBuiltinAgent(options: BuiltinAgentOptions = {}): AgentModel {
  const settings: DirectorSettings = {
    sceneSeconds: options.sceneSeconds ?? 5,
    resolution: options.resolution ?? '480p',
  };
  return {
    configured: true,
    async runTurn(input: AgentTurnInput, tools: AgentTools, output: AgentOutput): Promise<AgentReply> {
      const ctx = { input, tools, settings };
      let text = input.instruction.trim()
        ? await step(ctx, parseDirectorIntent(input.instruction))
        : imagesOnly(input);
      if (!text.trimEnd().endsWith('?')) text = directorReply(text, 'What would you like to do next?');
      output.say(text);
      return { text };
    },
  };
}
