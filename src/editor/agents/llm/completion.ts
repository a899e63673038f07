// One assistant message assembled from Chat Completions stream chunks (OpenAI's "chat completion chunk"
// object): `choices[0].delta.content` pieces, `delta.tool_calls` fragments merged by their `index` (the first
// fragment of a call carries its `id` and `function.name`, later ones pieces of `function.arguments`),
// `finish_reason`, and `usage` (a last chunk with empty `choices` when `stream_options.include_usage` is set).
// A server's chunks are untrusted input: anything unexpected is ignored or refused, never thrown raw.

/** A tool call as the model made it; `arguments` is raw text (maybe not JSON). */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** Tokens one completion used, as the server counted them. */
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** The assembled message. */
export interface ModelMessage {
  text: string;
  toolCalls: ModelToolCall[];
  /** `stop`, `tool_calls`, `length`, ... or null when the server never said. */
  finishReason: string | null;
  usage: TokenUsage | null;
}

/** A chunk the stream may not carry: the server's own error, or more than a message may hold. */
export class UnreadableCompletion extends Error {
  override name = 'UnreadableCompletion';
}

/** Limits of one message: far beyond any real reply, low enough that a runaway server cannot exhaust memory. */
const MAX_TEXT_CHARS = 200_000;
const MAX_ARGUMENT_CHARS = 200_000;
const MAX_TOOL_CALLS = 32;

type Json = Record<string, unknown>;
const record = (value: unknown): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
const count = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0;

/** Builds one message from its chunks, in order. */
export class CompletionBuilder {
  private text = '';
  private readonly calls: ModelToolCall[] = [];
  /** The call each stream `index` fills. */
  private readonly byIndex = new Map<number, ModelToolCall>();
  private finishReason: string | null = null;
  private usage: TokenUsage | null = null;

  /** Adds one parsed chunk; answers its content piece ('' when it has none). */
  add(chunk: unknown): string {
    const root = record(chunk);
    if (!root) throw new UnreadableCompletion('a stream chunk is not a JSON object');
    const error = record(root.error);
    if (error) throw new UnreadableCompletion(`the stream reported an error: ${describeError(error)}`);
    const usage = record(root.usage);
    if (usage) {
      this.usage = {
        prompt_tokens: count(usage.prompt_tokens),
        completion_tokens: count(usage.completion_tokens),
      };
    }
    const choice = Array.isArray(root.choices) ? record(root.choices[0]) : undefined;
    if (!choice) return '';
    if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
    // A server that ignores `stream` answers one `chat.completion` whose choice holds a whole `message`.
    const delta = record(choice.delta) ?? record(choice.message);
    if (!delta) return '';
    if (Array.isArray(delta.tool_calls))
      delta.tool_calls.forEach((call, position) => this.addCall(call, position));
    const piece = typeof delta.content === 'string' ? delta.content : '';
    if (this.text.length + piece.length > MAX_TEXT_CHARS)
      throw new UnreadableCompletion('the reply is too long');
    this.text += piece;
    return piece;
  }

  /** Whether the message ended (a finish reason arrived). */
  get finished(): boolean {
    return this.finishReason !== null;
  }

  result(): ModelMessage {
    return {
      text: this.text,
      toolCalls: this.calls.filter((call) => call.name !== ''),
      finishReason: this.finishReason,
      usage: this.usage,
    };
  }

  private addCall(fragment: unknown, position: number): void {
    const part = record(fragment);
    if (!part) return;
    const fn = record(part.function);
    // Servers that send whole calls at once (no `index`) list them by position.
    const index = typeof part.index === 'number' ? part.index : position;
    let call = this.byIndex.get(index);
    if (
      !call ||
      (typeof part.id === 'string' && part.id !== '' && call.id !== part.id && call.arguments !== '')
    ) {
      if (this.calls.length >= MAX_TOOL_CALLS)
        throw new UnreadableCompletion('too many tool calls in one message');
      call = { id: '', name: '', arguments: '' };
      this.byIndex.set(index, call);
      this.calls.push(call);
    }
    if (typeof part.id === 'string' && part.id !== '') call.id = part.id;
    if (typeof fn?.name === 'string' && fn.name !== '') call.name = fn.name;
    const args = fn?.arguments;
    // Some servers send the arguments as an object rather than JSON text.
    const piece =
      typeof args === 'string' ? args : args !== undefined && args !== null ? JSON.stringify(args) : '';
    if (call.arguments.length + piece.length > MAX_ARGUMENT_CHARS) {
      throw new UnreadableCompletion("a tool call's arguments are too long");
    }
    call.arguments += piece;
  }
}

/** `error.message` (and its code) of an OpenAI-style error object, short enough for a log line or a reply. */
export function describeError(error: Json): string {
  const message = typeof error.message === 'string' ? error.message : 'no message';
  const code = typeof error.code === 'string' ? ` (${error.code})` : '';
  return `${message.slice(0, 300)}${code}`;
}
