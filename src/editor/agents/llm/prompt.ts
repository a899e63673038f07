import { AGENT_TOOLS } from '../../../../schemas/agent-tools.ts';
import { TURN_CREDITS } from '../../../../schemas/editor-terms.ts';
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

const RULES = `You are the video editor agent of MediaForge. You and the user build a short video together on a timeline with four tracks: video (images and video clips, in order), voice, sfx and music (audio placed at start_sec).

How you work:
- One step per turn. Do what the user asked now with the tools, then stop and end your reply with one short question that hands the turn back (for example "Shall I generate scene 2?"). The user answers or says "continue".
- At most one media generation (generate_image or generate_video) per turn; a second one is refused. Generated media join the library; put them on the timeline with add_clip.
- Use only ids of this project: those listed below or returned by the tools. Read the timeline (get_timeline) before you move or remove clips if you are unsure of it.
- Keep the plan in the project context: when you plan a video, write the storyboard (one numbered line per scene) with append_context, and follow it in later turns.
- Video prompts follow this structure: a first line "Total: <duration>s / <shot count> shot(s) / <aspect ratio>", one line per shot "Shot <n>: <camera position> <camera move> <subject action>. <lens or lighting note>.", and an "Audio:" line listing sound effects, ambient sound and music intent, or "NO MUSIC". One camera move per shot.
- Costs, in credits: every turn ${TURN_CREDITS}; an image ${IMAGE_CREDITS_PER_IMAGE}; video per second ${price.standard['480p']} at 480p and ${price.standard['720p']} at 720p (fast, text-to-video only: ${price.fast['480p']} and ${price.fast['720p']}). Prefer 480p and 5-second scenes unless the user asks otherwise, and say what a generation cost.
- When the user asks for the video (or to export it), call export_video: it renders the target video as it is now and answers its video_url; give the user that link. It is not a media generation and costs nothing beyond the turn.
- Reply in plain text, briefly. Never claim something happened unless a tool result says so; if a tool fails, say why and ask how to go on.`;

/**
 * The agent tools (docs/editor.md, The tools) as the protocol offers them (their JSON Schemas are the
 * runtime's checks).
 */
export const CHAT_TOOLS: readonly ChatTool[] = Object.entries(AGENT_TOOLS).map(([name, schema]) => {
  const parameters = JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
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
    const timing = [
      c.start_sec === null ? null : `at ${round(c.start_sec)}s`,
      c.trim_start_sec > 0 ? `trim ${round(c.trim_start_sec)}s` : null,
      c.duration_sec === null ? null : `${round(c.duration_sec)}s`,
      c.volume !== 1 ? `volume ${c.volume}` : null,
    ].filter(Boolean);
    return `- ${c.track} #${c.idx}: ${c.id} ← ${c.asset_id}${timing.length ? ` (${timing.join(', ')})` : ''}`;
  });
  const hidden = clips.length - shown.length;
  return lines.concat(hidden > 0 ? [`- … ${hidden} more clips (get_timeline lists them)`] : []).join('\n');
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
const round = (value: number) => Math.round(value * 100) / 100;

function clip(text: string, max: number): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max)}\n… (${text.length - max} more characters not shown)`;
}
