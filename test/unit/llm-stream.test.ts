// The LLM agent's stream reading: server-sent events split anywhere, and chunks assembled into one message
// (content pieces, tool calls whose arguments arrive in fragments, several calls, finish reason, usage).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CompletionBuilder, UnreadableCompletion } from '../../src/editor/agents/llm/completion.ts';
import { EventStreamError, readEventData } from '../../src/editor/agents/llm/sse.ts';

async function events(...pieces: string[]): Promise<string[]> {
  async function* body() {
    for (const piece of pieces) yield new TextEncoder().encode(piece);
  }
  const out: string[] = [];
  for await (const data of readEventData(body())) out.push(data);
  return out;
}

describe('server-sent events', () => {
  it('reads data lines split across reads, with LF, CRLF and CR line ends, and ignores other fields', async () => {
    assert.deepEqual(await events('data: {"a":1}\n\n', 'data: x', 'y\r\n\r\n', ': comment\rdata:z\r\r'), [
      '{"a":1}',
      'xy',
      'z',
    ]);
    assert.deepEqual(await events('event: message\nid: 7\ndata: one\ndata: two\n\n'), ['one\ntwo']);
  });

  it('keeps a CRLF split between two reads as one line end', async () => {
    assert.deepEqual(await events('data: a\r', '\n\r', '\ndata: b\n\n'), ['a', 'b']);
  });

  it('dispatches a last event without its blank line', async () => {
    assert.deepEqual(await events('data: [DONE]'), ['[DONE]']);
  });

  it('decodes UTF-8 split inside a character', async () => {
    const bytes = new TextEncoder().encode('data: é✓\n\n');
    async function* body() {
      yield bytes.slice(0, 7);
      yield bytes.slice(7);
    }
    const out: string[] = [];
    for await (const data of readEventData(body())) out.push(data);
    assert.deepEqual(out, ['é✓']);
  });

  it('refuses an event that never ends', async () => {
    async function* endless() {
      const piece = new TextEncoder().encode('data: ' + 'x'.repeat(1024 * 1024));
      for (let i = 0; i < 8; i += 1) yield piece;
    }
    await assert.rejects(async () => {
      for await (const _ of readEventData(endless())) void _;
    }, EventStreamError);
  });
});

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

describe('one message from its chunks', () => {
  it('joins content pieces and answers each piece as it comes', () => {
    const builder = new CompletionBuilder();
    assert.equal(builder.add(chunk({ role: 'assistant', content: '' })), '');
    assert.equal(builder.add(chunk({ content: 'Hello' })), 'Hello');
    assert.equal(builder.add(chunk({ content: ' there' })), ' there');
    builder.add(chunk({}, 'stop'));
    builder.add({
      id: 'chatcmpl-1',
      choices: [],
      usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
    });
    assert.deepEqual(builder.result(), {
      text: 'Hello there',
      toolCalls: [],
      finishReason: 'stop',
      usage: { prompt_tokens: 12, completion_tokens: 3 },
    });
  });

  it('assembles two tool calls whose arguments arrive in fragments, by index', () => {
    const builder = new CompletionBuilder();
    builder.add(
      chunk({
        tool_calls: [
          { index: 0, id: 'call_a', type: 'function', function: { name: 'add_clip', arguments: '' } },
        ],
      }),
    );
    builder.add(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"track":' } }] }));
    builder.add(
      chunk({
        tool_calls: [
          { index: 1, id: 'call_b', type: 'function', function: { name: 'list_assets', arguments: '{' } },
        ],
      }),
    );
    builder.add(chunk({ tool_calls: [{ index: 0, function: { arguments: '"video"}' } }] }));
    builder.add(chunk({ tool_calls: [{ index: 1, function: { arguments: '}' } }] }));
    builder.add(chunk({}, 'tool_calls'));
    const message = builder.result();
    assert.deepEqual(message.toolCalls, [
      { id: 'call_a', name: 'add_clip', arguments: '{"track":"video"}' },
      { id: 'call_b', name: 'list_assets', arguments: '{}' },
    ]);
    assert.equal(message.finishReason, 'tool_calls');
  });

  it('reads whole calls without an index (by position) and arguments sent as an object', () => {
    const builder = new CompletionBuilder();
    builder.add(
      chunk(
        {
          tool_calls: [
            { id: 'c1', function: { name: 'get_timeline', arguments: {} } },
            { id: 'c2', function: { name: 'remove_clip', arguments: { clip_id: 'vc_1' } } },
          ],
        },
        'tool_calls',
      ),
    );
    assert.deepEqual(builder.result().toolCalls, [
      { id: 'c1', name: 'get_timeline', arguments: '{}' },
      { id: 'c2', name: 'remove_clip', arguments: '{"clip_id":"vc_1"}' },
    ]);
  });

  it('reads a whole non-streamed completion', () => {
    const builder = new CompletionBuilder();
    assert.equal(
      builder.add({
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: 'All done.' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 5, completion_tokens: 2 },
      }),
      'All done.',
    );
    assert.equal(builder.result().text, 'All done.');
    assert.equal(builder.finished, true);
  });

  it('refuses an error in the stream, a non-object chunk and runaway sizes', () => {
    assert.throws(
      () => new CompletionBuilder().add({ error: { message: 'overloaded', code: 'server_error' } }),
      /overloaded \(server_error\)/,
    );
    assert.throws(() => new CompletionBuilder().add([1, 2]), UnreadableCompletion);
    const builder = new CompletionBuilder();
    assert.throws(() => {
      for (let i = 0; i < 100; i += 1) builder.add(chunk({ content: 'x'.repeat(10_000) }));
    }, /too long/);
    const calls = new CompletionBuilder();
    assert.throws(() => {
      for (let i = 0; i < 40; i += 1) {
        calls.add(
          chunk({
            tool_calls: [{ index: i, id: `c${i}`, function: { name: 'list_assets', arguments: '{}' } }],
          }),
        );
      }
    }, /too many tool calls/);
  });

  it('ignores chunks without choices and garbage usage numbers', () => {
    const builder = new CompletionBuilder();
    builder.add({ choices: [] });
    builder.add({ usage: { prompt_tokens: -3, completion_tokens: 'many' } });
    assert.deepEqual(builder.result().usage, { prompt_tokens: 0, completion_tokens: 0 });
  });
});
