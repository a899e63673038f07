import {
  AgentFailure,
  type AgentModel,
  type AgentOutput,
  type AgentReply,
  type AgentTools,
  type AgentTurnInput,
  type AgentUsage,
  type ToolOutcome,
} from '../agent-model.ts';
import type { ChatClient, ChatMessage } from './chat-client.ts';
import type { ModelMessage, ModelToolCall } from './completion.ts';
import { CHAT_TOOLS, turnMessages } from './prompt.ts';

// The LLM agent (docs/editor.md, The LLM agent): a loop of completions on one turn. Each completion streams
// its words to the editor as they come; its tool calls run through the runtime's tools (which check every
// argument and enforce one media generation per turn), and their results go back to the model. The turn ends
// when the model answers without tool calls, or after `maxSteps` completions (the reply then says so).

export interface LlmAgentOptions {
  client: ChatClient;
  /** Completions per turn (`AGENT_MAX_STEPS`). */
  maxSteps: number;
  /** A reference image as the model receives it (a `data:` URL), or undefined to leave it out. */
  imageUrl?(asset: AgentTurnInput['references'][number]): Promise<string | undefined>;
}

/** A tool result longer than this is cut before it goes back to the model (timelines stay far below it). */
const TOOL_RESULT_MAX_CHARS = 20_000;

/** The LLM agent (`AGENT=llm`). */
export function createLlmAgent(options: LlmAgentOptions): AgentModel {
  return {
    configured: true,
    async runTurn(input, tools, output) {
      const images = await referenceImages(input, options);
      const turn = new LlmTurn(options, tools, output, turnMessages(input, images));
      return turn.run();
    },
  };
}

async function referenceImages(input: AgentTurnInput, options: LlmAgentOptions): Promise<string[]> {
  if (!options.imageUrl) return [];
  const urls = await Promise.all(input.references.map((asset) => options.imageUrl!(asset)));
  return urls.filter((url): url is string => url !== undefined);
}

/** One turn's conversation with the model. */
class LlmTurn {
  private readonly usage: AgentUsage = {
    prompt_tokens: 0,
    completion_tokens: 0,
    total_tokens: 0,
    completions: 0,
  };
  /** The reply so far: the text of every completion, joined by blank lines. */
  private reply = '';
  /** Whether the last piece said ended a completion's text (the next completion's text starts a paragraph). */
  private paragraphDone = false;

  constructor(
    private readonly options: LlmAgentOptions,
    private readonly tools: AgentTools,
    private readonly output: AgentOutput,
    private readonly messages: ChatMessage[],
  ) {}

  async run(): Promise<AgentReply> {
    for (let step = 1; step <= this.options.maxSteps; step += 1) {
      const message = await this.complete();
      if (message.toolCalls.length === 0) return this.finish();
      this.messages.push({
        role: 'assistant',
        content: message.text || null,
        tool_calls: message.toolCalls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        })),
      });
      // The calls of one message run in order: a later one may use what an earlier one made.
      for (const call of message.toolCalls) {
        const outcome = await this.runTool(call);
        this.messages.push({ role: 'tool', tool_call_id: call.id, content: toolContent(outcome) });
      }
    }
    this.say(
      `I stopped after ${this.options.maxSteps} steps without finishing this request. ` +
        'Shall I go on, or would you like something else?',
    );
    return this.finish();
  }

  private async complete(): Promise<ModelMessage> {
    let first = true;
    let message: ModelMessage;
    try {
      message = await this.options.client.complete(this.messages, CHAT_TOOLS, {
        onText: (piece) => {
          this.say(piece, first);
          first = false;
        },
        signal: this.output.signal,
      });
    } catch (error) {
      if (error instanceof AgentFailure) error.usage = this.usageSoFar();
      throw error;
    }
    this.count(message);
    if (message.text) this.paragraphDone = true;
    // Calls without an id (some servers) get one: the protocol pairs each result with its call by id.
    message.toolCalls.forEach((call, index) => {
      if (!call.id) call.id = `call_${this.usage.completions}_${index}`;
    });
    return message;
  }

  /** Streams a piece of the reply; the first piece of a completion after earlier text starts a paragraph. */
  private say(piece: string, startsCompletion = true): void {
    const text = startsCompletion && this.paragraphDone ? `\n\n${piece.trimStart()}` : piece;
    this.paragraphDone = false;
    this.reply += text;
    this.output.say(text);
  }

  private runTool(call: ModelToolCall): Promise<ToolOutcome> {
    let args: unknown;
    try {
      args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
    } catch {
      return this.tools.refuse(call.name, 'invalid arguments: not valid JSON');
    }
    return this.tools.call(call.name, args);
  }

  private count(message: ModelMessage): void {
    this.usage.completions += 1;
    this.usage.prompt_tokens += message.usage?.prompt_tokens ?? 0;
    this.usage.completion_tokens += message.usage?.completion_tokens ?? 0;
    this.usage.total_tokens = this.usage.prompt_tokens + this.usage.completion_tokens;
  }

  private usageSoFar(): AgentUsage {
    return { ...this.usage };
  }

  private finish(): AgentReply {
    // A model that only called tools still hands the turn back with a question.
    if (this.reply.trim() === '') this.say('Done. What would you like to do next?');
    const text = this.reply.trim();
    return { text, usage: this.usageSoFar() };
  }
}

/** A tool's outcome as the model reads it: `{ ok, result }` or `{ ok: false, error }`, in JSON. */
function toolContent(outcome: ToolOutcome): string {
  const json = JSON.stringify(
    outcome.ok ? { ok: true, result: outcome.result } : { ok: false, error: outcome.error },
  );
  return json.length <= TOOL_RESULT_MAX_CHARS
    ? json
    : JSON.stringify({ ok: outcome.ok, truncated: true, result_start: json.slice(0, TOOL_RESULT_MAX_CHARS) });
}
