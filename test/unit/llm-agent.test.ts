// The LLM agent's turn loop (docs/editor.md, The LLM agent) against a scripted chat client: words streamed as they come, tool
// calls run in order through the runtime's tools with their results sent back, malformed calls refused,
// AGENT_MAX_STEPS, token usage, and the prompt (rules, project, library, timeline, thread within its budget).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  CHAT_TOOLS,
  PROMPT_BUDGETS,
  systemPrompt,
  turnMessages,
} from '../../src/editor/agents/llm/prompt.ts';
import { createLlmAgent } from '../../src/editor/agents/llm/agent.ts';
import { type ChatClient, type ChatMessage } from '../../src/editor/agents/llm/chat-client.ts';
import { type ModelMessage } from '../../src/editor/agents/llm/completion.ts';
import { AgentFailure, type AgentTurnInput, type ToolOutcome } from '../../src/editor/agents/agent-model.ts';

/** A completion the scripted client answers: its content pieces and tool calls. */
interface Scripted {
  pieces?: string[];
  calls?: { name: string; arguments: string; id?: string }[];
  fail?: AgentFailure;
}

function scriptedClient(script: Scripted[]) {
  const seen: ChatMessage[][] = [];
  const client: ChatClient = {
    complete(messages, _tools, { onText }) {
      seen.push(structuredClone([...messages]));
      const next = script[Math.min(seen.length - 1, script.length - 1)]!;
      if (next.fail) return Promise.reject(next.fail);
      for (const piece of next.pieces ?? []) onText(piece);
      const message: ModelMessage = {
        text: (next.pieces ?? []).join(''),
        toolCalls: (next.calls ?? []).map((call, index) => ({
          id: call.id ?? `c${seen.length}_${index}`,
          ...call,
        })),
        finishReason: next.calls?.length ? 'tool_calls' : 'stop',
        usage: { prompt_tokens: 100, completion_tokens: 10 },
      };
      return Promise.resolve(message);
    },
  };
  return { client, seen };
}

function recordingTools() {
  const calls: { name: string; args: unknown; refused?: string }[] = [];
  return {
    calls,
    tools: {
      call(name: string, args: unknown): Promise<ToolOutcome> {
        calls.push({ name, args });
        return Promise.resolve(
          name === 'delete_everything'
            ? { ok: false, error: `unknown tool ${name}` }
            : { ok: true, result: { n: calls.length }, summary: 'done' },
        );
      },
      refuse(name: string, error: string): Promise<ToolOutcome> {
        calls.push({ name, args: null, refused: error });
        return Promise.resolve({ ok: false, error });
      },
    },
  };
}

const input = (overrides: Partial<AgentTurnInput> = {}): AgentTurnInput => ({
  instruction: 'a 2-scene video about tea',
  references: [],
  project: { id: 'vp_1', name: 'Tea', aspect_ratio: '9:16', context_md: '## Storyboard\n1. Leaves' },
  video: { id: 'vv_1', name: 'Main video', aspect_ratio: '9:16' },
  history: [],
  library: [{ id: 'va_1', kind: 'video', source: 'agent_generate', prompt: 'Scene 1', duration_sec: 5 }],
  timeline: [
    {
      id: 'vc_1',
      track: 'video',
      idx: 0,
      asset_id: 'va_1',
      start_sec: null,
      trim_start_sec: 0,
      duration_sec: null,
      volume: 1,
    },
  ],
  ...overrides,
});

async function runTurn(script: Scripted[], maxSteps = 8, turnInput = input()) {
  const { client, seen } = scriptedClient(script);
  const { tools, calls } = recordingTools();
  const said: string[] = [];
  const agent = createLlmAgent({ client, maxSteps });
  const reply = await agent.runTurn(turnInput, tools, {
    say: (text) => said.push(text),
    signal: new AbortController().signal,
  });
  return { reply, said, calls, seen };
}

describe('the LLM agent', () => {
  it('streams a plain reply piece by piece and returns it whole with its usage', async () => {
    const { reply, said, calls } = await runTurn([{ pieces: ['Two ', 'scenes. ', 'Shall I start?'] }]);
    assert.deepEqual(said, ['Two ', 'scenes. ', 'Shall I start?']);
    assert.equal(reply.text, 'Two scenes. Shall I start?');
    assert.deepEqual(reply.usage, {
      prompt_tokens: 100,
      completion_tokens: 10,
      total_tokens: 110,
      completions: 1,
    });
    assert.equal(calls.length, 0);
  });

  it('runs tool calls in order and sends each result back, paired with its call', async () => {
    const { reply, said, calls, seen } = await runTurn([
      {
        pieces: ['Planning.'],
        calls: [
          { name: 'append_context', arguments: '{"text":"1. Leaves"}', id: 'a' },
          { name: 'get_timeline', arguments: '', id: 'b' },
        ],
      },
      { pieces: ['Done. ', 'Next?'] },
    ]);
    assert.deepEqual(calls, [
      { name: 'append_context', args: { text: '1. Leaves' } },
      { name: 'get_timeline', args: {} },
    ]);
    const second = seen[1]!;
    const assistant = second.at(-3)!;
    assert.equal(assistant.role, 'assistant');
    assert.deepEqual(assistant.role === 'assistant' ? assistant.tool_calls?.map((call) => call.id) : [], [
      'a',
      'b',
    ]);
    assert.deepEqual(second.at(-2), {
      role: 'tool',
      tool_call_id: 'a',
      content: '{"ok":true,"result":{"n":1}}',
    });
    assert.deepEqual(second.at(-1), {
      role: 'tool',
      tool_call_id: 'b',
      content: '{"ok":true,"result":{"n":2}}',
    });
    assert.equal(reply.text, 'Planning.\n\nDone. Next?');
    assert.equal(said.join(''), reply.text, 'the pieces said add up to the reply');
    assert.equal(reply.usage?.completions, 2);
    assert.equal(reply.usage?.total_tokens, 220);
  });

  it('refuses arguments that are not JSON as a tool error the model reads, and goes on', async () => {
    const { calls, seen, reply } = await runTurn([
      { calls: [{ name: 'add_clip', arguments: '{"track": "video", "asset_id": ', id: 'x' }] },
      { calls: [{ name: 'delete_everything', arguments: '{}', id: 'y' }] },
      { pieces: ['Sorry. What next?'] },
    ]);
    assert.deepEqual(calls[0], {
      name: 'add_clip',
      args: null,
      refused: 'invalid arguments: not valid JSON',
    });
    assert.deepEqual(seen[1]!.at(-1), {
      role: 'tool',
      tool_call_id: 'x',
      content: '{"ok":false,"error":"invalid arguments: not valid JSON"}',
    });
    assert.deepEqual(seen[2]!.at(-1), {
      role: 'tool',
      tool_call_id: 'y',
      content: '{"ok":false,"error":"unknown tool delete_everything"}',
    });
    assert.equal(reply.text, 'Sorry. What next?');
  });

  it('stops after AGENT_MAX_STEPS completions and says so', async () => {
    const { calls, seen, reply } = await runTurn([{ calls: [{ name: 'list_assets', arguments: '{}' }] }], 3);
    assert.equal(seen.length, 3);
    assert.equal(calls.length, 3);
    assert.match(reply.text, /^I stopped after 3 steps without finishing this request\. .*\?$/);
    assert.equal(reply.usage?.completions, 3);
  });

  it('attaches the usage so far to a failure', async () => {
    const failure = new AgentFailure(502, 'The LLM server answered 500');
    const run = runTurn([{ calls: [{ name: 'list_assets', arguments: '{}' }] }, { fail: failure }]);
    await assert.rejects(run, (error: unknown) => error === failure);
    assert.deepEqual(failure.usage, {
      prompt_tokens: 100,
      completion_tokens: 10,
      total_tokens: 110,
      completions: 1,
    });
  });
});

describe("the LLM agent's prompt", () => {
  it('holds the rules, the project, its context, the library and the timeline', () => {
    const prompt = systemPrompt(input());
    assert.match(prompt, /At most one media generation \(generate_image or generate_video\) per turn/);
    assert.match(prompt, /Total: <duration>s \/ <shot count> shot\(s\) \/ <aspect ratio>/);
    assert.match(prompt, /video "Main video" \(vv_1\), aspect ratio 9:16/);
    assert.match(prompt, /## Project context\n## Storyboard\n1\. Leaves/);
    assert.match(prompt, /- va_1 video \(agent_generate\) 5s "Scene 1"/);
    assert.match(prompt, /- video #0: vc_1 ← va_1/);
  });

  it('keeps the newest messages of the thread within its budget, oldest first out', () => {
    const long = 'x'.repeat(PROMPT_BUDGETS.history / 4);
    const history = Array.from({ length: 8 }, (_, index) => ({
      role: index % 2 === 0 ? ('user' as const) : ('assistant' as const),
      text: `${index}${long}`,
    }));
    const messages = turnMessages(input({ history }), []);
    const kept = messages.slice(1, -1).map((message) => String(message.content).charAt(0));
    assert.deepEqual(kept, ['5', '6', '7']);
    assert.deepEqual(messages.at(-1), { role: 'user', content: 'a 2-scene video about tea' });
  });

  it('sends reference images as image parts after the text naming their ids', () => {
    const reference = {
      id: 'va_9',
      kind: 'image' as const,
      source: 'import',
      url: 'http://x/media/a',
      metadata: {},
    };
    const last = turnMessages(input({ instruction: '', references: [reference] }), [
      'data:image/png;base64,AAAA',
    ]).at(-1)!;
    assert.deepEqual(last, {
      role: 'user',
      content: [
        {
          type: 'text',
          text: '(no text: the user sent reference images only)\n\nReference images (now in the library): va_9',
        },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      ],
    });
  });

  it('teaches the five tracks and the look tools, and lists text clips without an asset', () => {
    const text = {
      id: 'vc_t',
      track: 'text' as const,
      idx: 0,
      asset_id: null,
      start_sec: 0,
      trim_start_sec: 0,
      duration_sec: 3,
      volume: 1,
      text: 'Lighthouse\nat dawn',
      style: 'title' as const,
      position: null,
      color: '#FFCC00',
      background: null,
    };
    const faded = {
      ...input().timeline[0]!,
      id: 'vc_2',
      idx: 1,
      transition_in: { type: 'fade' as const, duration_sec: 1 },
      speed: 0.5,
      fade_out_sec: 2,
    };
    const prompt = systemPrompt(input({ timeline: [...input().timeline, faded, text] }));
    assert.doesNotMatch(prompt, /four tracks/);
    assert.match(prompt, /five tracks: video .*, voice, sfx and music .*, and text/);
    for (const tool of ['add_text', 'set_transition', 'export_video', 'update_clip'])
      assert.match(prompt, new RegExp(tool));
    assert.match(
      prompt,
      /fade, fadeblack, fadewhite, wipeleft, wiperight, slideleft, slideright, circleopen/,
    );
    assert.match(prompt, /none, zoom_in, zoom_out, pan_left, pan_right/);
    assert.match(prompt, /- text #0: vc_t "Lighthouse at dawn" \(at 0s, 3s, title, color #FFCC00\)/);
    assert.doesNotMatch(prompt, /← null/);
    assert.match(prompt, /- video #1: vc_2 ← va_1 \(transition_in fade 1s, speed 0\.5, fade out 2s\)/);
  });

  it("offers the tools as JSON Schema without the checker's own keywords", () => {
    const names = CHAT_TOOLS.map((tool) => tool.function.name);
    for (const name of ['add_text', 'set_transition', 'export_video']) assert.ok(names.includes(name), name);
    const json = JSON.stringify(CHAT_TOOLS);
    assert.doesNotMatch(json, /errorMessage/);
    assert.doesNotMatch(json, /~kind|~optional/);
    const parameters = (name: string) =>
      CHAT_TOOLS.find((tool) => tool.function.name === name)!.function.parameters as {
        properties: Record<string, unknown>;
        required?: string[];
      };
    assert.deepEqual(parameters('add_text').required, ['text']);
    assert.deepEqual(parameters('set_transition').required, ['clip_id', 'type']);
    for (const field of ['transition_in', 'motion', 'speed', 'fade_in_sec', 'fade_out_sec', 'text', 'style'])
      for (const tool of ['add_clip', 'update_clip'])
        assert.ok(field in parameters(tool).properties, `${tool}.${field}`);
    assert.match(JSON.stringify(parameters('export_video')), /"preview"/);
  });

  it('clips a long project context and says how much is left out', () => {
    const prompt = systemPrompt(input({ project: { ...input().project, context_md: 'y'.repeat(50_000) } }));
    assert.match(prompt, new RegExp(`… \\(${50_000 - PROMPT_BUDGETS.context} more characters not shown\\)`));
  });
});
