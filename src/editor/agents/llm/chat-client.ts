import { setTimeout as sleep } from 'node:timers/promises';
import { AgentFailure } from '../agent-model.ts';
import { CompletionBuilder, UnreadableCompletion, describeError, type ModelMessage } from './completion.ts';
import { EventStreamError, readEventData } from './sse.ts';

// The OpenAI Chat Completions wire protocol (`POST {base}/chat/completions`, `stream: true`), which OpenAI,
// Azure, OpenRouter, vLLM, Ollama and llama.cpp servers all speak (docs/editor.md, The LLM agent). We read
// the stream ourselves (sse.ts, completion.ts, ~200 lines) rather than through the `openai` package: the
// agent needs exactly one call, its time-outs, retries and error mapping are ours to decide
// (docs/architecture.md, The LLM agent's client), and every byte a server sends is parsed under our limits.
// The tests check our fake server with the `openai` package too, so both sides agree on the protocol.

/** A message of the conversation, in the protocol's shape. */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ChatContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCallMessage[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export type ChatContentPart =
  { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

export interface ChatToolCallMessage {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A tool offered to the model. */
export interface ChatTool {
  type: 'function';
  function: { name: string; description: string; parameters: unknown };
}

export interface ChatClientOptions {
  /** e.g. `https://api.openai.com/v1` (no trailing slash). */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** One completion's limit, retries included (`LLM_TIMEOUT_MS`). */
  timeoutMs: number;
  /** Waits before retries 1, 2, ... of a 429/5xx or a refused connection (default 0.5, 1, 2, 4, 8 s). */
  retryDelaysMs?: readonly number[];
  fetch?: typeof fetch;
}

export interface CompleteOptions {
  /** Each content piece as it arrives. */
  onText(piece: string): void;
  /** The turn is over: the request stops at once. */
  signal: AbortSignal;
}

export interface ChatClient {
  complete(
    messages: readonly ChatMessage[],
    tools: readonly ChatTool[],
    options: CompleteOptions,
  ): Promise<ModelMessage>;
}

const DEFAULT_RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 8000];
const RETRIED_STATUSES = new Set([408, 409, 429, 500, 502, 503, 504, 529]);

/** A failed attempt that another may fix (429, 5xx, a refused connection). */
class Retryable extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number | undefined,
  ) {
    super(message);
  }
}

/** The Chat Completions client of the LLM agent. */
export function createChatClient(options: ChatClientOptions): ChatClient {
  const doFetch = options.fetch ?? fetch;
  const delays = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  const url = `${options.baseUrl}/chat/completions`;

  async function attempt(
    body: string,
    signal: AbortSignal,
    onText: (piece: string) => void,
  ): Promise<ModelMessage> {
    let response: Response;
    try {
      response = await doFetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${options.apiKey}`,
          'content-type': 'application/json',
          accept: 'text/event-stream, application/json',
        },
        body,
        signal,
      });
    } catch (error) {
      if (signal.aborted) throw error;
      throw new Retryable(`the LLM server could not be reached (${causeOf(error)})`, undefined);
    }
    if (!response.ok) throw await failureOf(response);
    if (!response.body) throw new AgentFailure(502, 'The LLM server answered without a body');
    const builder = new CompletionBuilder();
    let done = false;
    try {
      if (response.headers.get('content-type')?.startsWith('application/json')) {
        // A server that ignored `stream: true` answers one whole `chat.completion`.
        const piece = builder.add(JSON.parse((await response.text()).slice(0, 4 * 1024 * 1024)));
        if (piece) onText(piece);
        return builder.result();
      }
      for await (const data of readEventData(response.body)) {
        if (data.trim() === '[DONE]') {
          done = true;
          break;
        }
        const piece = builder.add(JSON.parse(data));
        if (piece) onText(piece);
      }
    } catch (error) {
      if (signal.aborted) throw error;
      if (
        error instanceof SyntaxError ||
        error instanceof EventStreamError ||
        error instanceof UnreadableCompletion
      ) {
        throw new AgentFailure(502, `The LLM server sent an unreadable stream: ${error.message}`);
      }
      throw new AgentFailure(502, `The LLM server's stream broke mid-message (${causeOf(error)})`);
    }
    // `[DONE]` ends a stream; a server that omits it must at least have finished the message.
    if (!done && !builder.finished) {
      throw new AgentFailure(502, "The LLM server's stream ended mid-message");
    }
    return builder.result();
  }

  return {
    async complete(messages, tools, { onText, signal }) {
      const body = JSON.stringify({
        model: options.model,
        messages,
        ...(tools.length > 0 ? { tools, tool_choice: 'auto' } : {}),
        stream: true,
        stream_options: { include_usage: true },
      });
      const deadline = Date.now() + options.timeoutMs;
      const timeout = AbortSignal.timeout(options.timeoutMs);
      const both = AbortSignal.any([signal, timeout]);
      for (let retry = 0; ; retry += 1) {
        try {
          return await attempt(body, both, onText);
        } catch (error) {
          if (signal.aborted) throw signal.reason;
          if (timeout.aborted) {
            throw new AgentFailure(502, `The LLM server did not answer within ${options.timeoutMs} ms`);
          }
          if (!(error instanceof Retryable)) throw error;
          const wait = error.retryAfterMs ?? delays[retry];
          if (wait === undefined || retry >= delays.length || Date.now() + wait >= deadline) {
            throw new AgentFailure(502, `${capitalise(error.message)}; gave up after ${retry + 1} attempts`);
          }
          await sleep(wait, undefined, { signal: both }).catch(() => undefined);
        }
      }
    },
  };
}

/** What a non-2xx answer means: credentials (503), worth another try (429/5xx), or a refusal (502). */
async function failureOf(response: Response): Promise<Error> {
  const detail = await errorDetail(response);
  const status = response.status;
  if (status === 401 || status === 403) {
    // The server's own words stay out of the answer: they may quote part of the key.
    return new AgentFailure(503, `The LLM server refused the agent's credentials (${status})`);
  }
  if (RETRIED_STATUSES.has(status)) {
    return new Retryable(`the LLM server answered ${status} (${detail})`, retryAfter(response.headers));
  }
  return new AgentFailure(502, `The LLM server refused the request (${status}: ${detail})`);
}

/** The error body's message (OpenAI's `{ error: { message, code } }`), or the start of whatever it was. */
async function errorDetail(response: Response): Promise<string> {
  const text = (await response.text().catch(() => '')).slice(0, 4096);
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    const error = parsed.error;
    if (typeof error === 'string') return error.slice(0, 300);
    if (typeof error === 'object' && error !== null) return describeError(error as Record<string, unknown>);
  } catch {
    // not JSON: the raw text below
  }
  return text.replace(/\s+/g, ' ').trim().slice(0, 300) || 'no details';
}

/** `Retry-After` (seconds or an HTTP date) in ms, or undefined. */
function retryAfter(headers: Headers): number | undefined {
  const value = headers.get('retry-after');
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
