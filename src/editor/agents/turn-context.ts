import type { AgentToolArgs } from '../../../schemas/agent-tools.ts';
import type { AgentTools, AgentTurnInput } from './agent-model.ts';
import {
  callAgentTool,
  readLibraryResult,
  readTrackResult,
  readVideoTrackResult,
  type DirectorAsset,
  type DirectorClip,
  type DirectorTrackClip,
} from './tool-results.ts';

/** How the director generates scenes. */
export interface DirectorSettings {
  sceneSeconds: NonNullable<AgentToolArgs<'generate_video'>['duration_seconds']>;
  resolution: NonNullable<AgentToolArgs<'generate_video'>['resolution']>;
}

/** What one step of the director works with. */
export interface DirectorTurn {
  input: AgentTurnInput;
  tools: AgentTools;
  settings: DirectorSettings;
}

/** A read that either worked or left a reply explaining why it did not. */
export type DirectorRead<T> = { ok: true; value: T } | { ok: false; reply: string };

/** A reply: what happened, then the question that hands the turn back to the user. */
export function directorReply(statement: string, question: string): string {
  return statement ? `${statement} ${question}` : question;
}

// What a failed read asks: a plain "yes" to it means "continue", so only a step that continues the
// storyboard may offer to try again.
const AFTER_FAILED_READ = 'What would you like to do?';

/** The target video's `video` track, in order. */
export async function readDirectorTimeline(
  ctx: DirectorTurn,
  question = AFTER_FAILED_READ,
): Promise<DirectorRead<DirectorClip[]>> {
  const outcome = await callAgentTool(ctx.tools, 'get_timeline', { video_id: ctx.input.video.id });
  if (!outcome.ok) {
    return {
      ok: false,
      reply: directorReply(`I couldn't read the timeline: ${toolErrorText(outcome.error)}.`, question),
    };
  }
  return { ok: true, value: readVideoTrackResult(outcome.result, ctx.input.video.id) };
}

/** The target video's tracks the look steps work on, each in order. */
export interface DirectorTracks {
  video: DirectorTrackClip[];
  voice: DirectorTrackClip[];
  sfx: DirectorTrackClip[];
  music: DirectorTrackClip[];
  text: DirectorTrackClip[];
}

/** The target video's tracks, in order. */
export async function readDirectorTracks(
  ctx: DirectorTurn,
  question = AFTER_FAILED_READ,
): Promise<DirectorRead<DirectorTracks>> {
  const outcome = await callAgentTool(ctx.tools, 'get_timeline', { video_id: ctx.input.video.id });
  if (!outcome.ok) {
    return {
      ok: false,
      reply: directorReply(`I couldn't read the timeline: ${toolErrorText(outcome.error)}.`, question),
    };
  }
  const read = (track: keyof DirectorTracks) => readTrackResult(outcome.result, ctx.input.video.id, track);
  return {
    ok: true,
    value: {
      video: read('video'),
      voice: read('voice'),
      sfx: read('sfx'),
      music: read('music'),
      text: read('text'),
    },
  };
}

/** The project's library, oldest first. */
export async function readDirectorLibrary(
  ctx: DirectorTurn,
  question = AFTER_FAILED_READ,
): Promise<DirectorRead<DirectorAsset[]>> {
  const outcome = await callAgentTool(ctx.tools, 'list_assets', {});
  if (!outcome.ok) {
    return {
      ok: false,
      reply: directorReply(`I couldn't read the media library: ${toolErrorText(outcome.error)}.`, question),
    };
  }
  return { ok: true, value: readLibraryResult(outcome.result) };
}

/** A tool's error as the middle of a sentence (no trailing full stop of its own). */
export function toolErrorText(error: string): string {
  return error.trim().replace(/[.\s]+$/, '') || 'no reason given';
}

/** "1 clip", "3 clips". */
export function clipsPhrase(n: number): string {
  return n === 1 ? '1 clip' : `${n} clips`;
}
