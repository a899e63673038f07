import { AGENT_TOOLS } from '../../../../schemas/agent-tools.ts';
import { TURN_CREDITS } from '../../../../schemas/editor-terms.ts';
import {
  FADE_MAX_SEC,
  MOTIONS,
  SPEED_MAX,
  SPEED_MIN,
  TEXT_DURATION_DEFAULT_SEC,
  TEXT_DURATION_MAX_SEC,
  TEXT_DURATION_MIN_SEC,
  TRANSITION_DEFAULT_SEC,
  TRANSITION_MAX_SEC,
  TRANSITION_MIN_SEC,
  TRANSITION_TYPES,
} from '../../../../schemas/timeline-terms.ts';
import { IMAGE_CREDITS_PER_IMAGE, VIDEO_CREDITS_PER_SECOND } from '../../../../schemas/models-catalog.ts';
import type { AgentClip, AgentLibraryItem, AgentTurnInput } from '../agent-model.ts';
import type { ChatContentPart, ChatMessage, ChatTool } from './chat-client.ts';

// What the LLM reads (docs/editor.md): the product's rules, the recommended prompt structure for video
// (docs/api.md), the project (context, aspect ratio, library, timeline) in compact form, the video's thread
// within a budget, and the turn's instruction with its reference images. The user's words are data inside the
// conversation: they never change the rules, and whatever the model answers, the runtime checks every tool
// call.

/** Budgets in characters (about 4 per token): the whole prompt stays well inside an 8k-token window's half. */
export const PROMPT_BUDGETS = {
  /** The project context (`context_md`, up to 100 000 characters): its start is kept (the storyboard). */
  context: 12_000,
  /** The video's earlier messages: the newest are kept, the oldest go first. */
  history: 12_000,
  /** Library items and clips listed (the tools list the rest). */
  libraryItems: 60,
  clips: 80,
};

const price = VIDEO_CREDITS_PER_SECOND;

const RULES = `You are the video editor agent of MediaForge. You and the user build a short video together on a timeline with five tracks: video (images and video clips, one after another), voice, sfx and music (audio placed at start_sec), and text (titles, lower thirds and captions drawn over the picture; a text clip has no asset).

How you work:
- One step per turn. Do what the user asked now with the tools, then stop and end your reply with one short question that hands the turn back (for example "Shall I generate scene 2?"). The user answers or says "continue".
- At most one media generation (generate_image or generate_video) per turn; a second one is refused. Generated media join the library; put them on the timeline with add_clip.
- Use only ids of this project: those listed below or returned by the tools. Read the timeline (get_timeline) before you move or remove clips if you are unsure of it.
- Keep the plan in the project context: when you plan a video, write the storyboard (one numbered line per scene) with append_context, and follow it in later turns.
- Video prompts follow this structure: a first line "Total: <duration>s / <shot count> shot(s) / <aspect ratio>", one line per shot "Shot <n>: <camera position> <camera move> <subject action>. <lens or lighting note>.", and an "Audio:" line listing sound effects, ambient sound and music intent, or "NO MUSIC". One camera move per shot.
- Costs, in credits: every turn ${TURN_CREDITS}; an image ${IMAGE_CREDITS_PER_IMAGE}; video per second ${price.standard['480p']} at 480p and ${price.standard['720p']} at 720p (fast, text-to-video only: ${price.fast['480p']} and ${price.fast['720p']}). Prefer 480p and 5-second scenes unless the user asks otherwise, and say what a generation cost. Editing and exporting cost nothing beyond the turn.

Editing the look (each field only on the clips it applies to; a wrong one is a tool error that says so):
- Words on screen: add_text { text, style?, position?, color?, background?, start_sec?, duration_sec? }. style title (large, centred; the default), lower_third (bottom left on a box) or caption (small, bottom centre on a box); position top, center or bottom; color #RRGGBB; duration_sec ${TEXT_DURATION_MIN_SEC} to ${TEXT_DURATION_MAX_SEC} (default ${TEXT_DURATION_DEFAULT_SEC}); without start_sec it follows the previous text clip. A title usually starts at 0; a caption at the moment it describes.
- Transitions: set_transition { clip_id, type, duration_sec? } sets how a video-track clip comes in over the end of the one before; clip_id "all" does every cut at once; type ${TRANSITION_TYPES.join(', ')}, or none to remove. duration_sec ${TRANSITION_MIN_SEC} to ${TRANSITION_MAX_SEC} (default ${TRANSITION_DEFAULT_SEC}) and at most half of each clip it joins. Each transition overlaps two clips, so the video gets shorter by its duration.
- With update_clip (or add_clip): motion on image clips of the video track (${MOTIONS.join(', ')}: a slow zoom or pan); speed on video clips of the video track (${SPEED_MIN} to ${SPEED_MAX}; duration_sec stays time on the timeline); fade_in_sec / fade_out_sec (0 to ${FADE_MAX_SEC}) on clips with sound (video, voice, sfx, music) and on text clips; transition_in { type, duration_sec } or null, the same as set_transition for one clip.
- When the user asks for the video (or to export it), call export_video: it renders the target video as it is now and answers its video_url; give the user that link. quality "preview" (360p, fast) is for checking a change; "final" (the default) is the video to keep. It is not a media generation and costs nothing beyond the turn.
- Reply in plain text, briefly. Never claim something happened unless a tool result says so; if a tool fails, say why and ask how to go on.`;

// Keywords of the runtime's checker, not JSON Schema: some servers refuse tools with unknown keywords.
const RUNTIME_KEYWORDS = new Set(['errorMessage']);

/** A JSON Schema as a model reads it: without the runtime's own keywords (`errorMessage`: our messages). */
function forTheModel(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(forTheModel);
  if (schema === null || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([key]) => !RUNTIME_KEYWORDS.has(key))
      .map(([key, value]) => [key, forTheModel(value)]),
  );
}

/**
 * The agent tools (docs/editor.md, The tools) as the protocol offers them (their JSON Schemas are the
 * runtime's checks, less the checker's own keywords).
 */
export const CHAT_TOOLS: readonly ChatTool[] = Object.entries(AGENT_TOOLS).map(([name, schema]) => {
  const parameters = forTheModel(JSON.parse(JSON.stringify(schema))) as Record<string, unknown>;
  const description = typeof parameters.description === 'string' ? parameters.description : name;
  delete parameters.description;
  return { type: 'function', function: { name, description, parameters } };
});

/** The conversation a turn starts with; `images` are the reference images' URLs (data: or https:). */
export function turnMessages(input: AgentTurnInput, images: readonly string[]): ChatMessage[] {
  return [
    { role: 'system', content: systemPrompt(input) },
    ...history(input.history),
    userMessage(input, images),
  ];
}

export function systemPrompt(input: AgentTurnInput): string {
  const { project, video } = input;
  const sections = [
    RULES,
    `## Project\nProject "${oneLine(project.name)}" (${project.id}). This turn works on video "${oneLine(video.name)}" (${video.id}), aspect ratio ${video.aspect_ratio}.`,
    `## Project context\n${clip(project.context_md, PROMPT_BUDGETS.context) || '(empty)'}`,
    `## Library (${input.library.length} assets)\n${libraryLines(input.library)}`,
    `## Timeline of ${video.id}\n${timelineLines(input.timeline)}`,
  ];
  return sections.join('\n\n');
}

/** The newest messages that fit the budget, oldest first. */
function history(messages: AgentTurnInput['history']): ChatMessage[] {
  const kept: ChatMessage[] = [];
  let used = 0;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index]!;
    used += message.text.length;
    if (used > PROMPT_BUDGETS.history) break;
    kept.unshift({ role: message.role, content: message.text });
  }
  return kept;
}

function userMessage(input: AgentTurnInput, images: readonly string[]): ChatMessage {
  const references = input.references.map((asset) => asset.id);
  const text =
    (input.instruction || '(no text: the user sent reference images only)') +
    (references.length > 0 ? `\n\nReference images (now in the library): ${references.join(', ')}` : '');
  if (images.length === 0) return { role: 'user', content: text };
  const parts: ChatContentPart[] = [{ type: 'text', text }];
  for (const url of images) parts.push({ type: 'image_url', image_url: { url } });
  return { role: 'user', content: parts };
}

function libraryLines(library: readonly AgentLibraryItem[]): string {
  if (library.length === 0) return '(empty)';
  const shown = library.slice(-PROMPT_BUDGETS.libraryItems);
  const lines = shown.map((item) => {
    const duration = item.duration_sec === null ? '' : ` ${round(item.duration_sec)}s`;
    const prompt = item.prompt ? ` "${clip(oneLine(item.prompt), 160)}"` : '';
    return `- ${item.id} ${item.kind} (${item.source})${duration}${prompt}`;
  });
  const hidden = library.length - shown.length;
  return (hidden > 0 ? [`- … ${hidden} older assets (list_assets lists them)`] : []).concat(lines).join('\n');
}

function timelineLines(clips: readonly AgentClip[]): string {
  if (clips.length === 0) return '(no clips yet)';
  const shown = clips.slice(0, PROMPT_BUDGETS.clips);
  const lines = shown.map((c) => {
    const details = [...timing(c), ...looks(c)];
    // A text clip has no asset: its words stand where an asset id would.
    const what = c.track === 'text' ? `"${clip(oneLine(c.text ?? ''), 80)}"` : `← ${c.asset_id}`;
    return `- ${c.track} #${c.idx}: ${c.id} ${what}${details.length ? ` (${details.join(', ')})` : ''}`;
  });
  const hidden = clips.length - shown.length;
  return lines.concat(hidden > 0 ? [`- … ${hidden} more clips (get_timeline lists them)`] : []).join('\n');
}

function timing(c: AgentClip): (string | null)[] {
  return [
    c.start_sec === null ? null : `at ${round(c.start_sec)}s`,
    c.trim_start_sec > 0 ? `trim ${round(c.trim_start_sec)}s` : null,
    c.duration_sec === null ? null : `${round(c.duration_sec)}s`,
    c.volume !== 1 && c.track !== 'text' ? `volume ${c.volume}` : null,
  ].filter((part) => part !== null);
}

/** What differs from a plain clip: text style, transition, motion, speed, fades (defaults left out). */
function looks(c: AgentClip): string[] {
  const parts: (string | null)[] = [
    c.track === 'text' ? (c.style ?? 'title') : null,
    c.position ? `position ${c.position}` : null,
    c.color && c.color.toUpperCase() !== '#FFFFFF' ? `color ${c.color}` : null,
    c.background ? `background ${c.background}` : null,
    c.transition_in ? `transition_in ${c.transition_in.type} ${round(c.transition_in.duration_sec)}s` : null,
    c.motion && c.motion !== 'none' ? `motion ${c.motion}` : null,
    c.speed !== undefined && c.speed !== 1 ? `speed ${c.speed}` : null,
    c.fade_in_sec ? `fade in ${round(c.fade_in_sec)}s` : null,
    c.fade_out_sec ? `fade out ${round(c.fade_out_sec)}s` : null,
  ];
  return parts.filter((part) => part !== null);
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
const round = (value: number) => Math.round(value * 100) / 100;

function clip(text: string, max: number): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max)}\n… (${text.length - max} more characters not shown)`;
}
