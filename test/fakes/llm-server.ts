// A fake LLM on a random loopback port speaking OpenAI's Chat Completions protocol, written from OpenAI's
// documentation:
// - The request (`model`, `messages` with roles system/user/assistant/tool, `tools` of type "function",
//   `stream`, `stream_options.include_usage`) and the `chat.completion` object answered without streaming
//   (`choices[].message` with `content`, `refusal`, `tool_calls`; `finish_reason` "stop" | "length" |
//   "tool_calls"; `usage` with prompt/completion/total tokens):
//   https://platform.openai.com/docs/api-reference/chat/create and .../chat/object
// - Streaming: server-sent events, each `data: <chat.completion.chunk>` (same `id`, `created`, `model` on every
//   chunk; `choices[].delta` with `role` on the first, then `content` pieces or `tool_calls` fragments keyed by
//   `index` — the first fragment of a call carries `id`, `type` and `function.name`, later ones only
//   `function.arguments` pieces; `finish_reason` on the last choice chunk), ended by `data: [DONE]`. With
//   `stream_options: {include_usage: true}` every chunk carries `usage: null` and one more chunk with
//   `choices: []` carries the usage: https://platform.openai.com/docs/api-reference/chat-streaming
// - Errors: `{ "error": { "message", "type", "param", "code" } }` with the HTTP status; 401 `invalid_api_key`
//   for a wrong `Authorization: Bearer <key>`, 429 `rate_limit_exceeded` (with `Retry-After`), 500
//   `server_error`: https://platform.openai.com/docs/guides/error-codes/api-errors
// What each request gets is decided by a script (see test/fakes/llm-scripts.ts for ready ones).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null | Array<{ type: string; text?: string; image_url?: { url: string } }>;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
  name?: string;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: { type: 'function'; function: { name: string; description?: string; parameters: unknown } }[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [key: string]: unknown;
}

/** What the fake answers to one request. */
export type LlmReply =
  | {
      kind: 'message';
      text?: string;
      /** content pieces; default: `text` split into words keeping spaces */
      chunks?: string[];
      /** a call without `id` gets a generated `call_…` id */
      tool_calls?: { id?: string; name: string; arguments: string /* raw, may be invalid JSON */ }[];
      /** default: "tool_calls" when there are tool calls, else "stop" */
      finish_reason?: 'stop' | 'tool_calls' | 'length';
      /** default: estimated from the characters (see {@link estimateUsage}) */
      usage?: { prompt_tokens: number; completion_tokens: number };
      /** delay before each chunk (default 0) */
      chunkDelayMs?: number;
    }
  | {
      kind: 'error';
      status: number;
      message?: string;
      type?: string;
      code?: string;
      headers?: Record<string, string>;
    }
  /** sends the role chunk and that many content chunks of `text`, then destroys the socket without [DONE] */
  | { kind: 'cut'; text: string; afterChunks: number }
  /** a 200 event stream whose data line is not JSON */
  | { kind: 'garbage' }
  /** accepts the request and never answers (until close) */
  | { kind: 'hang' };

export type LlmScript = (
  request: ChatRequest,
  /** `index`: 0-based count of the requests that reached a script (= their place in `requests`) */
  context: { index: number },
) => LlmReply | Promise<LlmReply>;

/** A request that passed authentication and parsing, and was answered by the script. */
export interface RecordedRequest {
  body: ChatRequest;
  headers: Record<string, string | string[] | undefined>;
  at: number;
}

export interface FakeLlm {
  /** base URL to put in LLM_BASE_URL, e.g. http://127.0.0.1:PORT/v1 */
  readonly url: string;
  readonly apiKey: string;
  readonly requests: RecordedRequest[];
  /** Replaces the script (default: a script answering "OK" with finish_reason stop). */
  script(script: LlmScript): void;
  /**
   * Called with (the content piece, performance.now() + performance.timeOrigin) right after each content
   * chunk is written — for latency benchmarks.
   */
  onChunk(listener: ((text: string, sentAtMs: number) => void) | null): void;
  close(): Promise<void>;
}

type MessageReply = Extract<LlmReply, { kind: 'message' }>;
type ErrorReply = Extract<LlmReply, { kind: 'error' }>;

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** What every chunk of one answer shares. */
interface StreamHead {
  id: string;
  created: number;
  model: string;
  includeUsage: boolean;
}

const COMPLETIONS_PATH = '/v1/chat/completions';

/** The default script: "OK", finish_reason stop. */
const answerOk: LlmScript = () => ({ kind: 'message', text: 'OK' });

function randomId(prefix: string): string {
  return prefix + randomBytes(12).toString('base64url');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `text` cut into words, each keeping the spaces that follow it ("a b" → ["a ", "b"]). */
export function splitWords(text: string): string[] {
  return text.split(/(?<=\s)(?=\S)/).filter((piece) => piece.length > 0);
}

/** A tool call's arguments in (up to) three fragments, as a model streams them. */
function argumentFragments(args: string): string[] {
  if (args.length === 0) return [];
  const size = Math.max(1, Math.ceil(args.length / 3));
  const pieces: string[] = [];
  for (let at = 0; at < args.length; at += size) pieces.push(args.slice(at, at + size));
  return pieces;
}

function messageText(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content;
  if (Array.isArray(message.content)) return message.content.map((part) => part.text ?? '').join('');
  return '';
}

function tokens(characters: number): number {
  return Math.max(1, Math.ceil(characters / 4));
}

/** Plausible usage: about one token per four characters of the prompt and of the answer, at least 1 each. */
export function estimateUsage(request: ChatRequest, reply: MessageReply): Usage {
  const promptChars = request.messages.reduce(
    (sum, message) =>
      sum +
      messageText(message).length +
      (message.tool_calls ?? []).reduce(
        (n, call) => n + call.function.name.length + call.function.arguments.length,
        0,
      ),
    0,
  );
  const completionChars =
    replyText(reply).length +
    (reply.tool_calls ?? []).reduce((n, call) => n + call.name.length + call.arguments.length, 0);
  const prompt_tokens = reply.usage?.prompt_tokens ?? tokens(promptChars);
  const completion_tokens = reply.usage?.completion_tokens ?? tokens(completionChars);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

function replyChunks(reply: MessageReply): string[] {
  return reply.chunks ?? splitWords(reply.text ?? '');
}

function replyText(reply: MessageReply): string {
  return reply.chunks ? reply.chunks.join('') : (reply.text ?? '');
}

function finishReason(reply: MessageReply): 'stop' | 'tool_calls' | 'length' {
  return reply.finish_reason ?? ((reply.tool_calls ?? []).length > 0 ? 'tool_calls' : 'stop');
}

function withIds(reply: MessageReply): ChatToolCall[] {
  return (reply.tool_calls ?? []).map((call) => ({
    id: call.id ?? randomId('call_'),
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));
}

function defaultErrorType(status: number): string {
  if (status >= 500) return 'server_error';
  if (status === 429) return 'requests';
  return 'invalid_request_error';
}

function sendError(res: ServerResponse, reply: ErrorReply): void {
  const body = JSON.stringify({
    error: {
      message: reply.message ?? `Error ${reply.status}`,
      type: reply.type ?? defaultErrorType(reply.status),
      param: null,
      code: reply.code ?? null,
    },
  });
  res.writeHead(reply.status, { ...reply.headers, 'Content-Type': 'application/json' });
  res.end(body);
}

/** Whether `value` looks enough like a chat request to be answered. */
function isChatRequest(value: unknown): value is ChatRequest {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const candidate = value as Record<string, unknown>;
  return typeof candidate.model === 'string' && Array.isArray(candidate.messages);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

/** Writes one SSE event; resolves once it is handed to the socket (false when the client is gone). */
function writeEvent(res: ServerResponse, data: string): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  return new Promise((resolve) => {
    res.write(`data: ${data}\n\n`, (error) => resolve(!error));
  });
}

function chunk(
  head: StreamHead,
  delta: Record<string, unknown>,
  finish: string | null,
): Record<string, unknown> {
  return {
    id: head.id,
    object: 'chat.completion.chunk',
    created: head.created,
    model: head.model,
    system_fingerprint: null,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(head.includeUsage ? { usage: null } : {}),
  };
}

function startEventStream(res: ServerResponse): void {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache',
    Connection: 'keep-alive',
  });
  res.flushHeaders();
}

function streamHead(request: ChatRequest, model: string | undefined): StreamHead {
  return {
    id: randomId('chatcmpl-'),
    created: Math.floor(Date.now() / 1000),
    model: model ?? request.model,
    includeUsage: request.stream_options?.include_usage === true,
  };
}

/** The whole answer as one `chat.completion` object (requests without `stream`). */
function completionObject(request: ChatRequest, reply: MessageReply, model: string | undefined): unknown {
  const toolCalls = withIds(reply);
  const text = replyText(reply);
  return {
    id: randomId('chatcmpl-'),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: model ?? request.model,
    system_fingerprint: null,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text.length > 0 || toolCalls.length === 0 ? text : null,
          refusal: null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: finishReason(reply),
      },
    ],
    usage: estimateUsage(request, reply),
  };
}

export async function startFakeLlm(options: { apiKey?: string; model?: string } = {}): Promise<FakeLlm> {
  const apiKey = options.apiKey ?? 'fake-llm-key';
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let current: LlmScript = answerOk;
  let chunkListener: ((text: string, sentAtMs: number) => void) | null = null;

  async function streamMessage(
    res: ServerResponse,
    request: ChatRequest,
    reply: MessageReply,
  ): Promise<void> {
    const head = streamHead(request, options.model);
    const pieces = replyChunks(reply);
    const toolCalls = withIds(reply);
    const delay = reply.chunkDelayMs ?? 0;
    const send = async (body: unknown): Promise<boolean> => {
      if (delay > 0) await sleep(delay);
      return writeEvent(res, JSON.stringify(body));
    };
    startEventStream(res);
    const first = { role: 'assistant', content: pieces.length > 0 ? '' : null, refusal: null };
    if (!(await send(chunk(head, first, null)))) return;
    for (const piece of pieces) {
      if (!(await send(chunk(head, { content: piece }, null)))) return;
      chunkListener?.(piece, performance.now() + performance.timeOrigin);
    }
    for (const [index, call] of toolCalls.entries()) {
      const opening = {
        index,
        id: call.id,
        type: 'function',
        function: { name: call.function.name, arguments: '' },
      };
      if (!(await send(chunk(head, { tool_calls: [opening] }, null)))) return;
      for (const piece of argumentFragments(call.function.arguments)) {
        const fragment = { index, function: { arguments: piece } };
        if (!(await send(chunk(head, { tool_calls: [fragment] }, null)))) return;
      }
    }
    if (!(await send(chunk(head, {}, finishReason(reply))))) return;
    if (head.includeUsage) {
      const usageChunk = { ...chunk(head, {}, null), choices: [], usage: estimateUsage(request, reply) };
      if (!(await send(usageChunk))) return;
    }
    await writeEvent(res, '[DONE]');
    res.end();
  }

  async function streamCut(
    res: ServerResponse,
    request: ChatRequest,
    reply: Extract<LlmReply, { kind: 'cut' }>,
  ): Promise<void> {
    const head = streamHead(request, options.model);
    startEventStream(res);
    await writeEvent(
      res,
      JSON.stringify(chunk(head, { role: 'assistant', content: '', refusal: null }, null)),
    );
    for (const piece of splitWords(reply.text).slice(0, reply.afterChunks)) {
      if (!(await writeEvent(res, JSON.stringify(chunk(head, { content: piece }, null))))) return;
      chunkListener?.(piece, performance.now() + performance.timeOrigin);
    }
    res.socket?.destroy();
  }

  async function streamGarbage(res: ServerResponse): Promise<void> {
    startEventStream(res);
    await writeEvent(res, '{"id": "chatcmpl-garbage", this is not JSON');
    await writeEvent(res, '[DONE]');
    res.end();
  }

  async function answer(res: ServerResponse, request: ChatRequest, reply: LlmReply): Promise<void> {
    switch (reply.kind) {
      case 'error':
        return sendError(res, reply);
      case 'hang':
        return; // the socket stays open until the client leaves or close() destroys it
      case 'garbage':
        return streamGarbage(res);
      case 'cut':
        return streamCut(res, request, reply);
      case 'message':
        if (request.stream === true) return streamMessage(res, request, reply);
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(completionObject(request, reply, options.model)));
        return;
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'POST' || path !== COMPLETIONS_PATH) {
      req.resume();
      return sendError(res, {
        kind: 'error',
        status: 404,
        message: `Invalid URL (${req.method ?? 'GET'} ${path ?? '/'})`,
        type: 'invalid_request_error',
      });
    }
    const raw = await readBody(req);
    if (req.headers.authorization !== `Bearer ${apiKey}`) {
      return sendError(res, {
        kind: 'error',
        status: 401,
        message: req.headers.authorization
          ? 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.'
          : "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      });
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    if (!isChatRequest(body)) {
      return sendError(res, {
        kind: 'error',
        status: 400,
        message:
          body === undefined
            ? "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload.)"
            : "The request needs a string 'model' and an array 'messages'.",
        type: 'invalid_request_error',
      });
    }
    const index = requests.length;
    requests.push({ body, headers: { ...req.headers }, at: Date.now() });
    const reply = await current(body, { index });
    await answer(res, body, reply);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        sendError(res, {
          kind: 'error',
          status: 500,
          message: `fake llm: ${String(error)}`,
          type: 'server_error',
        });
      } else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;

  return {
    url,
    apiKey,
    requests,
    script(script) {
      current = script;
    },
    onChunk(listener) {
      chunkListener = listener;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
