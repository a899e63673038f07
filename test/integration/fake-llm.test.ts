// The fake LLM (test/fakes/llm-server.ts) against a client nobody here wrote — the official `openai` package —
// over real HTTP on loopback; and the director script (test/fakes/llm-scripts.ts) as pure functions.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { AuthenticationError } from 'openai';
import type { ChatCompletionChunk, ChatCompletionTool } from 'openai/resources/chat/completions';
import {
  startFakeLlm,
  type ChatMessage,
  type ChatRequest,
  type FakeLlm,
  type LlmReply,
} from '../fakes/llm-server.ts';
import {
  cutMidMessage,
  directorReply,
  findStoryboard,
  rateLimitedThen,
  sequence,
  twoGenerations,
  unauthorized,
} from '../fakes/llm-scripts.ts';

const KEY = 'sk-fake-5c1e9a7b3d24';

const TOOLS: ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'generate_image',
      description: 'one image job',
      parameters: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'add_clip',
      parameters: {
        type: 'object',
        properties: { track: { type: 'string' }, asset_id: { type: 'string' } },
        required: ['track', 'asset_id'],
      },
    },
  },
];

interface Collected {
  chunks: ChatCompletionChunk[];
  content: string[];
  calls: Map<number, { id?: string; name?: string; arguments: string }>;
  finish: string | null;
  usage: ChatCompletionChunk['usage'];
}

/** Reads a stream as a caller would: content pieces in order, tool calls reassembled by `index`. */
async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<Collected> {
  const out: Collected = { chunks: [], content: [], calls: new Map(), finish: null, usage: null };
  for await (const chunk of stream) {
    out.chunks.push(chunk);
    if (chunk.usage) out.usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.delta.content) out.content.push(choice.delta.content);
    for (const fragment of choice.delta.tool_calls ?? []) {
      const call = out.calls.get(fragment.index) ?? { arguments: '' };
      if (fragment.id) call.id = fragment.id;
      if (fragment.function?.name) call.name = fragment.function.name;
      call.arguments += fragment.function?.arguments ?? '';
      out.calls.set(fragment.index, call);
    }
    if (choice.finish_reason) out.finish = choice.finish_reason;
  }
  return out;
}

describe('fake LLM speaking Chat Completions to the openai client', () => {
  let fake: FakeLlm;
  let client: OpenAI;

  before(async () => {
    fake = await startFakeLlm({ apiKey: KEY });
    client = new OpenAI({ apiKey: KEY, baseURL: fake.url, maxRetries: 0, timeout: 10_000 });
  });
  after(() => fake.close());

  function streamed(messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }]) {
    return client.chat.completions.create({
      model: 'gpt-test',
      messages,
      tools: TOOLS,
      stream: true,
      stream_options: { include_usage: true },
    });
  }

  it('streams content pieces in order, then finish_reason stop, usage and [DONE]', async () => {
    fake.script(() => ({ kind: 'message', text: 'Scene one is ready. Shall I go on?' }));
    const seen: string[] = [];
    fake.onChunk((text) => seen.push(text));
    const out = await collect(await streamed());
    fake.onChunk(null);
    assert.deepEqual(out.content, ['Scene ', 'one ', 'is ', 'ready. ', 'Shall ', 'I ', 'go ', 'on?']);
    assert.deepEqual(seen, out.content);
    assert.equal(out.finish, 'stop');
    const first = out.chunks[0];
    assert.equal(first?.object, 'chat.completion.chunk');
    assert.equal(first?.choices[0]?.delta.role, 'assistant');
    assert.equal(first?.model, 'gpt-test');
    assert.ok(out.chunks.every((chunk) => chunk.id === first?.id && chunk.created === first?.created));
    const last = out.chunks.at(-1);
    assert.deepEqual(last?.choices, []);
    assert.ok(out.usage && out.usage.prompt_tokens >= 1 && out.usage.completion_tokens >= 1);
    assert.equal(out.usage?.total_tokens, out.usage.prompt_tokens + out.usage.completion_tokens);
    const recorded = fake.requests.at(-1);
    assert.equal(recorded?.headers.authorization, `Bearer ${KEY}`);
    assert.deepEqual(
      recorded?.body.tools?.map((tool) => tool.function.name),
      ['generate_image', 'add_clip'],
    );
  });

  it('reassembles a tool call whose arguments arrive in fragments', async () => {
    const args = '{"track":"video","asset_id":"va_0123456789abcdef"}';
    fake.script(() => ({
      kind: 'message',
      tool_calls: [{ id: 'call_abc', name: 'add_clip', arguments: args }],
      usage: { prompt_tokens: 42, completion_tokens: 7 },
    }));
    const out = await collect(await streamed());
    const fragments = out.chunks.filter((chunk) => chunk.choices[0]?.delta.tool_calls).length;
    assert.ok(fragments >= 3, `arguments in several fragments (got ${fragments} tool_call chunks)`);
    assert.deepEqual(out.calls.get(0), { id: 'call_abc', name: 'add_clip', arguments: args });
    assert.deepEqual(JSON.parse(out.calls.get(0)?.arguments ?? ''), {
      track: 'video',
      asset_id: 'va_0123456789abcdef',
    });
    assert.equal(out.finish, 'tool_calls');
    assert.deepEqual(out.usage, { prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 });
  });

  it('keeps the indexes of two tool calls in one message', async () => {
    fake.script(twoGenerations());
    const out = await collect(await streamed());
    assert.equal(out.calls.size, 2);
    assert.equal(out.calls.get(0)?.name, 'generate_image');
    assert.deepEqual(JSON.parse(out.calls.get(0)?.arguments ?? ''), { prompt: 'a red square' });
    assert.deepEqual(JSON.parse(out.calls.get(1)?.arguments ?? ''), { prompt: 'a blue circle' });
    assert.notEqual(out.calls.get(0)?.id, out.calls.get(1)?.id);
    assert.equal(out.finish, 'tool_calls');
    // the plain reply follows on the next request
    const next = await collect(await streamed());
    assert.equal(next.calls.size, 0);
    assert.equal(next.finish, 'stop');
  });

  it("surfaces a wrong key as the library's AuthenticationError", async () => {
    fake.script(() => ({ kind: 'message', text: 'never' }));
    const wrong = new OpenAI({ apiKey: 'sk-wrong', baseURL: fake.url, maxRetries: 0 });
    const count = fake.requests.length;
    await assert.rejects(
      wrong.chat.completions.create({
        model: 'gpt-test',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      }),
      (error: unknown) => {
        assert.ok(error instanceof AuthenticationError);
        assert.equal(error.status, 401);
        assert.equal(error.code, 'invalid_api_key');
        assert.equal(error.type, 'invalid_request_error');
        return true;
      },
    );
    assert.equal(fake.requests.length, count, 'an unauthenticated request reaches no script');
    fake.script(unauthorized());
    await assert.rejects(streamed(), AuthenticationError);
  });

  it('is retried by the library after a 429 and then succeeds', async () => {
    fake.script(rateLimitedThen({ kind: 'message', text: 'after the wait' }));
    const retrying = new OpenAI({ apiKey: KEY, baseURL: fake.url, maxRetries: 2 });
    const count = fake.requests.length;
    const out = await collect(
      await retrying.chat.completions.create({
        model: 'gpt-test',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      }),
    );
    assert.equal(out.content.join(''), 'after the wait');
    assert.equal(fake.requests.length, count + 2);
  });

  it("makes the library's iteration throw when the stream is cut", async () => {
    fake.script(cutMidMessage());
    const received: string[] = [];
    await assert.rejects(async () => {
      for await (const chunk of await streamed()) {
        const piece = chunk.choices[0]?.delta.content;
        if (piece) received.push(piece);
      }
    });
    assert.deepEqual(received, ['I ', 'am ', 'planning ']);
  });

  it('makes the library throw on a data line that is not JSON', async () => {
    fake.script(() => ({ kind: 'garbage' }));
    await assert.rejects(async () => {
      for await (const _chunk of await streamed()) {
        // drained
      }
    });
  });

  it('answers the same message without streaming', async () => {
    const reply: LlmReply = {
      kind: 'message',
      text: 'Two images coming.',
      tool_calls: [{ id: 'call_1', name: 'generate_image', arguments: '{"prompt":"a red square"}' }],
    };
    fake.script(() => reply);
    const completion = await client.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'hi' }],
      tools: TOOLS,
    });
    assert.equal(completion.object, 'chat.completion');
    const choice = completion.choices[0];
    assert.equal(choice?.message.role, 'assistant');
    assert.equal(choice?.message.content, 'Two images coming.');
    assert.equal(choice?.finish_reason, 'tool_calls');
    const toolCall = choice?.message.tool_calls?.[0];
    assert.equal(toolCall?.type, 'function');
    assert.deepEqual(toolCall?.type === 'function' ? toolCall.function : undefined, {
      name: 'generate_image',
      arguments: '{"prompt":"a red square"}',
    });
    assert.ok((completion.usage?.total_tokens ?? 0) >= 2);

    const streamedOut = await collect(await streamed());
    assert.equal(streamedOut.content.join(''), choice?.message.content);
    assert.equal(
      streamedOut.calls.get(0)?.arguments,
      toolCall?.type === 'function' ? toolCall.function.arguments : '',
    );
  });

  it('answers OpenAI error bodies for other paths and unparsable bodies', async () => {
    const notFound = await fetch(`${fake.url}/models`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(notFound.status, 404);
    const body404 = (await notFound.json()) as { error: Record<string, unknown> };
    assert.deepEqual(Object.keys(body404.error).sort(), ['code', 'message', 'param', 'type']);
    const bad = await fetch(`${fake.url}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: '{"model":',
    });
    assert.equal(bad.status, 400);
    const body400 = (await bad.json()) as { error: { type: string; param: unknown } };
    assert.equal(body400.error.type, 'invalid_request_error');
    assert.equal(body400.error.param, null);
  });

  it('sequence repeats its last reply and close() ends a hanging request', async () => {
    const other = await startFakeLlm();
    other.script(sequence({ kind: 'message', text: 'one' }, { kind: 'hang' }));
    const hanging = new OpenAI({ apiKey: other.apiKey, baseURL: other.url, maxRetries: 0 });
    const first = await hanging.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'a' }],
    });
    assert.equal(first.choices[0]?.message.content, 'one');
    const pending = hanging.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'b' }],
    });
    const settled = pending.then(
      () => 'answered',
      () => 'failed',
    );
    while (other.requests.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    await other.close();
    assert.equal(await settled, 'failed');
  });
});

// ---------------------------------------------------------------------------------------------------------
// The director, as a pure function of the request

const SYSTEM_WITH_BOARD: ChatMessage = {
  role: 'system',
  content:
    'You are the editor.\n\n## Project context\n\n## Storyboard: a lighthouse\n\n1. Scene 1 of a lighthouse\n' +
    '2. Scene 2 of a lighthouse\n3. Scene 3 of a lighthouse\n\n## Tools\n\n1. not a scene',
};

function request(...messages: ChatMessage[]): ChatRequest {
  return { model: 'm', messages, stream: true };
}

function toolTurn(id: string, name: string, args: unknown, answer: unknown): ChatMessage[] {
  return [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
    },
    { role: 'tool', tool_call_id: id, content: JSON.stringify(answer) },
  ];
}

function onlyCall(reply: LlmReply): { name: string; args: unknown } {
  assert.equal(reply.kind, 'message');
  const calls = reply.kind === 'message' ? (reply.tool_calls ?? []) : [];
  assert.equal(calls.length, 1);
  return { name: calls[0]?.name ?? '', args: JSON.parse(calls[0]?.arguments ?? '') };
}

function text(reply: LlmReply): string {
  assert.equal(reply.kind, 'message');
  return reply.kind === 'message' ? (reply.text ?? '') : '';
}

const clips = (n: number) =>
  Array.from({ length: n }, (_, at) => ({ id: `vc_${at + 1}`, track: 'video', idx: at }));
const timeline = (n: number) => ({
  ok: true,
  result: { video_id: 'vv_1', tracks: { video: clips(n), music: [] } },
});

describe('director()', () => {
  it('plans a storyboard into the context, then asks', () => {
    const ask: ChatMessage = { role: 'user', content: 'Make a 3-scene video about a lighthouse at dawn.' };
    const first = onlyCall(directorReply(request({ role: 'system', content: 'sys' }, ask)));
    assert.deepEqual(first, {
      name: 'append_context',
      args: {
        text:
          '## Storyboard: a lighthouse at dawn\n\n1. Scene 1 of a lighthouse at dawn\n' +
          '2. Scene 2 of a lighthouse at dawn\n3. Scene 3 of a lighthouse at dawn',
      },
    });
    const after = directorReply(
      request(ask, ...toolTurn('c1', 'append_context', first.args, { ok: true, result: { revision: 2 } })),
    );
    assert.equal(text(after), 'I planned 3 scenes about a lighthouse at dawn. Shall I generate scene 1?');
  });

  it('continues: timeline, then generate_video, then add_clip, then asks about the next scene', () => {
    const yes: ChatMessage = { role: 'user', content: 'yes' };
    const history = [SYSTEM_WITH_BOARD, { role: 'user', content: 'a 3-scene video' } as ChatMessage, yes];
    assert.deepEqual(onlyCall(directorReply(request(...history))), { name: 'get_timeline', args: {} });
    const afterTimeline = [...history, ...toolTurn('c1', 'get_timeline', {}, timeline(1))];
    assert.deepEqual(onlyCall(directorReply(request(...afterTimeline))), {
      name: 'generate_video',
      args: { prompt: 'Scene 2 of a lighthouse', duration_seconds: 5, resolution: '480p' },
    });
    const generated = { ok: true, result: { asset: { id: 'va_job2', kind: 'video' } } };
    const afterGeneration = [...afterTimeline, ...toolTurn('c2', 'generate_video', {}, generated)];
    assert.deepEqual(onlyCall(directorReply(request(...afterGeneration))), {
      name: 'add_clip',
      args: { track: 'video', asset_id: 'va_job2' },
    });
    const added = [...afterGeneration, ...toolTurn('c3', 'add_clip', {}, { ok: true, result: {} })];
    assert.equal(
      text(directorReply(request(...added))),
      'Scene 2 is on the timeline. Shall I continue with scene 3?',
    );
  });

  it('ends the storyboard by offering the export, and reports a failed generation', () => {
    const base = [SYSTEM_WITH_BOARD, { role: 'user', content: 'continue' } as ChatMessage];
    const full = [...base, ...toolTurn('c1', 'get_timeline', {}, timeline(3))];
    assert.equal(
      text(directorReply(request(...full))),
      'All 3 scenes are on the timeline. Would you like to export?',
    );
    const failedGen = [
      ...base,
      ...toolTurn('c1', 'get_timeline', {}, timeline(0)),
      ...toolTurn('c2', 'generate_video', {}, { ok: false, error: 'Insufficient credits' }),
    ];
    assert.equal(text(directorReply(request(...failedGen))), 'I could not: Insufficient credits. What next?');
  });

  it('puts an asset on the music track and quotes a tool error', () => {
    const ask: ChatMessage = { role: 'user', content: 'use va_abc123 as music' };
    assert.deepEqual(onlyCall(directorReply(request(ask))), {
      name: 'add_clip',
      args: { track: 'music', asset_id: 'va_abc123' },
    });
    const refused = toolTurn('c1', 'add_clip', {}, { ok: false, error: 'Asset not found' });
    assert.equal(text(directorReply(request(ask, ...refused))), 'I could not: Asset not found. What next?');
  });

  it('removes the K-th video clip after reading the timeline', () => {
    const ask: ChatMessage = { role: 'user', content: 'remove clip 2' };
    assert.equal(onlyCall(directorReply(request(ask))).name, 'get_timeline');
    const read = [ask, ...toolTurn('c1', 'get_timeline', {}, timeline(3))];
    assert.deepEqual(onlyCall(directorReply(request(...read))), {
      name: 'remove_clip',
      args: { clip_id: 'vc_2' },
    });
    const done = [...read, ...toolTurn('c2', 'remove_clip', {}, { ok: true, result: {} })];
    assert.match(text(directorReply(request(...done))), /\?$/);
    const missing = directorReply(request({ role: 'user', content: 'remove clip 5' }, ...read.slice(1)));
    assert.match(text(missing), /There is no clip 5 — the video track has 3 clips/);
  });

  it('asks what to do otherwise, and finds the last storyboard in a context', () => {
    assert.equal(
      text(directorReply(request({ role: 'user', content: 'hello there' }))),
      'What would you like to do?',
    );
    const board = findStoryboard(
      '# Storyboard: old\n\n1. a\n\n### Storyboard: new\n\n1) x\n2) y\n\n## Notes\n3. z',
    );
    assert.deepEqual(board, { subject: 'new', scenes: ['x', 'y'] });
    const none = directorReply(request({ role: 'user', content: 'continue' }));
    assert.match(text(none), /no storyboard/);
  });
});
