// Ready scripts for the fake LLM (test/fakes/llm-server.ts): sequences, faults, and `director()`, a
// well-behaved model that drives the editor's tools (docs/editor.md, "The tools a turn acts through") one call
// per response. The tool messages it reads are the service's answers: content is JSON `{"ok":true,"result":…}`
// or `{"ok":false,"error":"…"}`.
import type { ChatMessage, ChatRequest, LlmReply, LlmScript } from './llm-server.ts';

type Step = LlmReply | LlmScript;

function run(step: Step, request: ChatRequest, context: { index: number }): LlmReply | Promise<LlmReply> {
  return typeof step === 'function' ? step(request, context) : step;
}

function say(text: string): LlmReply {
  return { kind: 'message', text };
}

function call(name: string, args: unknown): LlmReply {
  return { kind: 'message', tool_calls: [{ name, arguments: JSON.stringify(args) }] };
}

const PLAIN: LlmReply = say('Done. What would you like to do next?');

/** The n-th request this script answers gets the n-th step; past the end, the last one repeats. */
export function sequence(...steps: Step[]): LlmScript {
  if (steps.length === 0) throw new Error('sequence: give at least one reply');
  let answered = 0;
  return (request, context) => {
    const step = steps[Math.min(answered, steps.length - 1)] as Step;
    answered += 1;
    return run(step, request, context);
  };
}

// ---------------------------------------------------------------------------------------------------------
// Faults

/** 429 `rate_limit_exceeded` with `Retry-After: 0`, then `then`. */
export function rateLimitedThen(then: Step = PLAIN): LlmScript {
  return sequence(
    {
      kind: 'error',
      status: 429,
      message:
        'Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 0s.',
      type: 'requests',
      code: 'rate_limit_exceeded',
      headers: { 'Retry-After': '0' },
    },
    then,
  );
}

/** `n` × 500 `server_error`, then `then`. */
export function serverErrors(n: number, then: Step = PLAIN): LlmScript {
  const error: LlmReply = {
    kind: 'error',
    status: 500,
    message: 'The server had an error while processing your request. Sorry about that!',
    type: 'server_error',
  };
  return sequence(...Array.from({ length: n }, () => error), then);
}

/** 401 `invalid_api_key` on every request, whatever key it carries. */
export function unauthorized(): LlmScript {
  return () => ({
    kind: 'error',
    status: 401,
    message:
      'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
    type: 'invalid_request_error',
    code: 'invalid_api_key',
  });
}

/** Three content chunks, then the connection is destroyed without [DONE]; later requests get `then`, or the same cut. */
export function cutMidMessage(then?: Step): LlmScript {
  const cut: LlmReply = { kind: 'cut', text: 'I am planning your video and will then', afterChunks: 3 };
  return then === undefined ? sequence(cut) : sequence(cut, then);
}

/** An `add_clip` call whose arguments are truncated JSON, then a plain reply. */
export function invalidArguments(): LlmScript {
  return sequence(
    { kind: 'message', tool_calls: [{ name: 'add_clip', arguments: '{"track": "video", "asset_id": ' }] },
    say('That call did not work. What would you like to do?'),
  );
}

/** A call to a tool nobody has (`delete_everything`), then a plain reply. */
export function unknownTool(): LlmScript {
  return sequence(call('delete_everything', {}), say('I cannot do that. What would you like to do?'));
}

/** One message with two `generate_image` calls, then a plain reply. */
export function twoGenerations(): LlmScript {
  return sequence(
    {
      kind: 'message',
      tool_calls: [
        { name: 'generate_image', arguments: '{"prompt":"a red square"}' },
        { name: 'generate_image', arguments: '{"prompt":"a blue circle"}' },
      ],
    },
    say('I made the images I could. What next?'),
  );
}

/** A `list_assets` call on every request, forever. */
export function neverStops(): LlmScript {
  return () => call('list_assets', {});
}

// ---------------------------------------------------------------------------------------------------------
// The director

/** A tool call of the current turn and the service's answer to it. */
export interface ToolStep {
  name: string;
  arguments: unknown;
  outcome: { ok: true; result: unknown } | { ok: false; error: string };
}

/** The last storyboard found in the conversation. */
export interface Storyboard {
  subject: string;
  scenes: string[];
}

/** What the director reads from a request. */
export interface Conversation {
  /** the text of the last `user` message */
  instruction: string;
  /** the tool calls answered since that message, oldest first */
  steps: ToolStep[];
  /** the last `Storyboard: X` heading with numbered lines, in the messages before the instruction */
  storyboard: Storyboard | null;
}

export function textOf(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content;
  if (Array.isArray(message.content)) {
    return message.content
      .map((part) => part.text ?? '')
      .filter((text) => text.length > 0)
      .join('\n');
  }
  return '';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function outcomeOf(content: string): ToolStep['outcome'] {
  const parsed = parseJson(content) as { ok?: unknown; result?: unknown; error?: unknown } | undefined;
  if (parsed && parsed.ok === true) return { ok: true, result: parsed.result };
  if (parsed && parsed.ok === false) return { ok: false, error: String(parsed.error ?? 'unknown error') };
  return { ok: false, error: 'unreadable tool result' };
}

/** The last `Storyboard: X` heading (any level) followed by numbered lines, up to the next heading. */
export function findStoryboard(text: string): Storyboard | null {
  let found: Storyboard | null = null;
  let open: Storyboard | null = null;
  for (const line of text.split(/\r?\n/)) {
    const heading = /^\s*#{1,6}\s+(.*)$/.exec(line);
    if (heading) {
      if (open && open.scenes.length > 0) found = open;
      const title = /^Storyboard:\s*(.+?)\s*$/i.exec(heading[1] ?? '');
      open = title ? { subject: title[1] ?? '', scenes: [] } : null;
      continue;
    }
    const scene = /^\s*\d+[.)]\s+(.+?)\s*$/.exec(line);
    if (open && scene) open.scenes.push(scene[1] ?? '');
  }
  if (open && open.scenes.length > 0) found = open;
  return found;
}

/** The texts before the instruction that may hold a storyboard: contents, and `append_context` arguments. */
function earlierTexts(messages: ChatMessage[]): string[] {
  const texts: string[] = [];
  for (const message of messages) {
    texts.push(textOf(message));
    for (const toolCall of message.tool_calls ?? []) {
      if (toolCall.function.name !== 'append_context') continue;
      const args = parseJson(toolCall.function.arguments) as { text?: unknown } | undefined;
      if (typeof args?.text === 'string') texts.push(args.text);
    }
  }
  return texts;
}

export function readConversation(request: ChatRequest): Conversation {
  const messages = request.messages;
  let last = -1;
  messages.forEach((message, at) => {
    if (message.role === 'user') last = at;
  });
  const calls = new Map<string, { name: string; arguments: unknown }>();
  const steps: ToolStep[] = [];
  for (const message of messages.slice(last + 1)) {
    for (const toolCall of message.tool_calls ?? []) {
      calls.set(toolCall.id, {
        name: toolCall.function.name,
        arguments: parseJson(toolCall.function.arguments),
      });
    }
    if (message.role !== 'tool') continue;
    const made = calls.get(message.tool_call_id ?? '');
    steps.push({
      name: made?.name ?? message.name ?? 'unknown',
      arguments: made?.arguments,
      outcome: outcomeOf(textOf(message)),
    });
  }
  let storyboard: Storyboard | null = null;
  for (const text of earlierTexts(last >= 0 ? messages.slice(0, last) : messages)) {
    storyboard = findStoryboard(text) ?? storyboard;
  }
  return { instruction: last >= 0 ? textOf(messages[last] as ChatMessage).trim() : '', steps, storyboard };
}

function stepNamed(conversation: Conversation, name: string): ToolStep | undefined {
  return conversation.steps.find((step) => step.name === name);
}

function failed(step: ToolStep): LlmReply | null {
  return step.outcome.ok ? null : say(`I could not: ${step.outcome.error}. What next?`);
}

function videoClips(timeline: ToolStep): { id: string }[] {
  if (!timeline.outcome.ok) return [];
  const result = timeline.outcome.result as { tracks?: { video?: unknown } } | undefined;
  const clips = result?.tracks?.video;
  return Array.isArray(clips) ? (clips as { id: string }[]) : [];
}

/** `a N-scene video about X`: the storyboard goes into the context, then a question. */
export function planStoryboard(conversation: Conversation, scenes: number, subject: string): LlmReply {
  const appended = stepNamed(conversation, 'append_context');
  if (!appended) {
    const lines = Array.from({ length: scenes }, (_, at) => `${at + 1}. Scene ${at + 1} of ${subject}`);
    return call('append_context', { text: `## Storyboard: ${subject}\n\n${lines.join('\n')}` });
  }
  return failed(appended) ?? say(`I planned ${scenes} scenes about ${subject}. Shall I generate scene 1?`);
}

/** `continue` / `yes`: the next scene of the storyboard is generated and put on the video track. */
export function continueStoryboard(conversation: Conversation): LlmReply {
  const board = conversation.storyboard;
  if (!board) return say('There is no storyboard yet. What video would you like me to plan?');
  const total = board.scenes.length;
  const timeline = stepNamed(conversation, 'get_timeline');
  if (!timeline) return call('get_timeline', {});
  const timelineFailed = failed(timeline);
  if (timelineFailed) return timelineFailed;
  const scene = videoClips(timeline).length + 1;
  const allDone = say(`All ${total} scenes are on the timeline. Would you like to export?`);
  if (scene > total) return allDone;
  const generated = stepNamed(conversation, 'generate_video');
  if (!generated) {
    return call('generate_video', {
      prompt: `Scene ${scene} of ${board.subject}`,
      duration_seconds: 5,
      resolution: '480p',
    });
  }
  const generationFailed = failed(generated);
  if (generationFailed) return generationFailed;
  const assetId = (generated.outcome as { result: { asset?: { id?: unknown } } | undefined }).result?.asset
    ?.id;
  if (typeof assetId !== 'string') return say('The generation gave me no asset. What next?');
  const added = stepNamed(conversation, 'add_clip');
  if (!added) return call('add_clip', { track: 'video', asset_id: assetId });
  const addFailed = failed(added);
  if (addFailed) return addFailed;
  if (scene >= total) return allDone;
  return say(`Scene ${scene} is on the timeline. Shall I continue with scene ${scene + 1}?`);
}

/** `use va_… as music`: the asset goes on the music track. */
export function useAsMusic(conversation: Conversation, assetId: string): LlmReply {
  const added = stepNamed(conversation, 'add_clip');
  if (!added) return call('add_clip', { track: 'music', asset_id: assetId });
  return failed(added) ?? say(`${assetId} is on the music track. What next?`);
}

/** `remove clip K`: the K-th clip of the video track (from 1) is removed. */
export function removeClip(conversation: Conversation, position: number): LlmReply {
  const timeline = stepNamed(conversation, 'get_timeline');
  if (!timeline) return call('get_timeline', {});
  const timelineFailed = failed(timeline);
  if (timelineFailed) return timelineFailed;
  const clips = videoClips(timeline);
  const clip = clips[position - 1];
  if (position < 1 || !clip) {
    return say(
      `There is no clip ${position} — the video track has ${clips.length} clips. Which one should I remove?`,
    );
  }
  const removed = stepNamed(conversation, 'remove_clip');
  if (!removed) return call('remove_clip', { clip_id: clip.id });
  return failed(removed) ?? say(`Clip ${position} is removed. What next?`);
}

/** `export it`: export_video, then the link from its result. */
export function exportVideo(conversation: Conversation): LlmReply {
  const exported = stepNamed(conversation, 'export_video');
  if (!exported) return call('export_video', { quality: 'final' });
  const exportFailed = failed(exported);
  if (exportFailed) return exportFailed;
  const url = (exported.outcome as { result?: { video_url?: unknown } }).result?.video_url;
  return say(`Your video is ready: ${String(url)} Would you like any changes?`);
}

/** The director's answer to one request: one intent, matched on the last user message. */
export function directorReply(request: ChatRequest): LlmReply {
  const conversation = readConversation(request);
  const instruction = conversation.instruction;
  const music = /\buse\s+(va_[A-Za-z0-9_]+)\s+as\s+music\b/i.exec(instruction);
  if (music) return useAsMusic(conversation, music[1] ?? '');
  const remove = /\bremove\s+clip\s+#?(\d+)\b/i.exec(instruction);
  if (remove) return removeClip(conversation, Number(remove[1]));
  const plan = /\b([1-9])-scene video about\s+(.+?)[.!?]*$/i.exec(instruction);
  if (plan) return planStoryboard(conversation, Number(plan[1]), (plan[2] ?? '').trim());
  if (/^(continue|yes|ok|okay|go on|next)\b/i.test(instruction)) return continueStoryboard(conversation);
  if (/\bexport\b/i.test(instruction)) return exportVideo(conversation);
  return say('What would you like to do?');
}

/** A well-behaved model playing the editor's director (see {@link directorReply}). */
export function director(): LlmScript {
  return (request) => directorReply(request);
}
