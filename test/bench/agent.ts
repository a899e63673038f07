// The LLM agent (docs/editor.md, AGENT=llm) against a zero-latency fake Chat Completions server
// (test/fakes/llm-server.ts). Two measurements:
//
// 1. Runtime overhead per turn (in process, test/helpers/editor-stack.ts, a fresh jongodb). The same three
//    edits of a no-media turn — `append_context`, `add_clip` of the project's image asset, `update_clip` of the
//    project's existing clip — made three ways (a twice), interleaved one at a time (a, a-local, b, c, …)
//    so the VM's drift hits all alike, each on a fresh project (jongodb slows as collections grow):
//    (a) llm      — `turns.instruct` with the LLM agent (createLlmAgent + createChatClient on the fake):
//                   completion 1 is ONE message with the three tool calls, completion 2 a short plain reply
//                   (streamed word by word, no delay);
//    (b) scripted — `turns.instruct` with an in-process AgentModel that makes the same three `tools.call`s
//                   and says the same reply in the same pieces;
//    (c) direct   — the editor service's patchProject(context_md) + addClip + patchClip, no turn.
//    (a) − (b) is the LLM runtime's own cost (HTTP to the fake, SSE parsing, the prompt, JSON tool dispatch);
//    (a) − (c) adds the turn machinery (queue, 5-credit charge, begin/finish, events, the thread's messages).
//    Budget: p50 of (a) − (b) ≤ 10 ms — the agent runtime is what (a) − (b) isolates; (b) − (c) is the turn
//    machinery the editor benchmark (test/bench/editor.ts) already budgets. The fake runs in a child process
//    (a real model server is not on the service's event loop); `llm-local` is (a) with the fake in this
//    process, for comparison. To show where the time goes: actor commands per turn and the time waited on
//    them (the actor system's `ask`, wrapped), MongoDB commands per turn (command monitoring), the time in
//    runTurn and in the completions, the phases of the turn at the p50, and the chat client alone (one
//    completion, the same request, the in-process fake).
// 2. Delta latency (the service from dist/ as a process, AGENT=llm on the fake, a WebSocket client on the
//    project's events). One completion streams DELTA_CHUNKS token-sized pieces, `chunkDelayMs` apart; for
//    every piece: the fake's write time (`onChunk`) → the arrival at the client of the `assistant.delta`
//    holding the piece's last character (deltas merge pieces: tracked by character offsets of the text).
//    One process holds both ends: one clock. Budget p99 ≤ 15 ms at 20 ms pacing; a burst (0 ms) is shown
//    too (no budget: it shows the merging under load).
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { AgentModel } from '../../src/editor/agents/agent-model.ts';
import type { ProjectRecord } from '../../actors/ports/projects-repository.ts';
import { CHAT_TOOLS } from '../../src/editor/agents/llm/prompt.ts';
import {
  createChatClient,
  type ChatMessage as ClientMessage,
} from '../../src/editor/agents/llm/chat-client.ts';
import { createLlmAgent } from '../../src/editor/agents/llm/agent.ts';
import { startFakeLlm, splitWords, type ChatRequest, type LlmReply } from '../fakes/llm-server.ts';
import { readConversation } from '../fakes/llm-scripts.ts';
import { startMongo } from '../helpers/mongo.ts';
import { addBareImage, richEditor, startEditorStack, type EditorStack } from '../helpers/editor-stack.ts';
import { startService } from '../helpers/service.ts';
import { editorClient, editorUser, type EditorEvent } from '../helpers/editor.ts';
import { openEventsSocket } from '../helpers/events-socket.ts';
import { load1, percentile, verdict } from '../helpers/bench.ts';

const TURNS = Number(process.env.BENCH_AGENT_TURNS ?? 100);
const WARMUP = Number(process.env.BENCH_AGENT_WARMUP ?? 20);
const DELTA_TURNS = Number(process.env.BENCH_AGENT_DELTA_TURNS ?? 6);
const DELTA_CHUNKS = 150;
const OVERHEAD_BUDGET_MS = 10;
/** The argument that makes this file the fake LLM's child process (measurement 1). */
const FAKE_CHILD_ARG = '--fake-llm-child';
const DELTA_P99_BUDGET_MS = 15;

const now = () => performance.timeOrigin + performance.now();
const ms = (value: number) => value.toFixed(1);

const CONTEXT_TEXT = '## Notes\n\nKeep the intro short.';
const REPLY = 'I noted that, added the image and trimmed the first clip. What would you like next?';
const REPLY_PIECES = splitWords(REPLY);

// ---------------------------------------------------------------------------------------------------------
// 1. Runtime overhead per turn

/** What the turn in flight works on (one turn at a time): the fake and the scripted agent read it. */
let target = { assetId: '', clipId: '' };

const toolArgs = () => ({
  append_context: { text: CONTEXT_TEXT },
  add_clip: { track: 'video', asset_id: target.assetId },
  update_clip: { clip_id: target.clipId, duration_sec: 3 },
});

/** The fake's script: three tool calls in one message, then (once they are answered) the plain reply. */
function threeCallsThenReply(request: ChatRequest): LlmReply {
  const conversation = readConversation(request);
  if (conversation.steps.length === 0) {
    const args = toolArgs();
    return {
      kind: 'message',
      tool_calls: Object.entries(args).map(([name, value]) => ({ name, arguments: JSON.stringify(value) })),
    };
  }
  const failed = conversation.steps.find((step) => !step.outcome.ok);
  if (failed) throw new Error(`a tool failed in the llm turn: ${JSON.stringify(failed)}`);
  return { kind: 'message', chunks: REPLY_PIECES };
}

/** The same turn without a model: the same calls through the runtime's tools, the same pieces said. */
const scriptedAgent: AgentModel = {
  configured: true,
  async runTurn(_input, tools, output) {
    for (const [name, args] of Object.entries(toolArgs())) {
      const outcome = await tools.call(name, args);
      if (!outcome.ok) throw new Error(`${name} failed in the scripted turn: ${outcome.error}`);
    }
    for (const piece of REPLY_PIECES) output.say(piece);
    return { text: REPLY };
  },
};

/** A project with one image asset and one clip of it: what each measured turn starts from. */
async function freshProject(stack: EditorStack, userId: string) {
  const { project } = await stack.editor.createProject(userId, { aspect_ratio: '9:16' });
  const assetId = await addBareImage(stack, project.id, userId, { width: 64, height: 64 });
  const record = (await stack.repositories.projects.get(project.id))!;
  const { clip } = await stack.editor.addClip(record, { track: 'video', asset_id: assetId }, {});
  target = { assetId, clipId: clip.id };
  return (await stack.repositories.projects.get(project.id))!;
}

type Mode = 'llm' | 'llm-local' | 'scripted' | 'direct';
const MODES: Mode[] = ['llm', 'llm-local', 'scripted', 'direct'];

/** The fake LLM in a child process (as a real model server is: not on the service's event loop). */
interface FakeChild {
  url: string;
  apiKey: string;
  /** Tells the child the ids of the next turn; resolves once it has them. */
  setTarget(value: typeof target): Promise<void>;
  close(): Promise<void>;
}

async function forkFake(): Promise<FakeChild> {
  const child = fork(fileURLToPath(import.meta.url), [FAKE_CHILD_ARG], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let waiting: {
    resolve(value: { url?: string; apiKey?: string }): void;
    reject(error: Error): void;
  } | null = null;
  child.on('message', (value: { url?: string; apiKey?: string }) => waiting?.resolve(value));
  child.on('exit', (code) => waiting?.reject(new Error(`the fake LLM process exited (${code})`)));
  const next = () =>
    new Promise<{ url?: string; apiKey?: string }>((resolve, reject) => (waiting = { resolve, reject }));
  const ready = await next();
  return {
    url: ready.url!,
    apiKey: ready.apiKey!,
    async setTarget(value) {
      const acked = next();
      child.send(value);
      await acked;
    },
    async close() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The child's side: a fake LLM running `threeCallsThenReply`, the ids of each turn sent over IPC. */
async function fakeChildMain() {
  const fake = await startFakeLlm();
  fake.script(threeCallsThenReply);
  process.on('message', (value: typeof target) => {
    target = value;
    process.send!({});
  });
  process.on('SIGTERM', () => {
    fake.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
  process.send!({ url: fake.url, apiKey: fake.apiKey });
}

interface ModeFigures {
  times: number[];
  /** Actor commands per turn, by `kind.type` (summed over the measured turns). */
  commands: Map<string, { count: number; ms: number }>;
  /** MongoDB commands, by name (summed over the measured turns; their server-side round trips). */
  db: Map<string, { count: number; ms: number }>;
  events: number;
  /** Time inside the agent's runTurn, and (llm) inside the chat client's completions. */
  agentMs: number;
  completionMs: number;
  completions: number;
  /** Each measured turn's phases (ms from its start), for the turn at the median. */
  traces: { elapsed: number; spans: Span[] }[];
}

interface Span {
  label: string;
  start: number;
  end: number;
}

/** The phases of the turn in flight: actor commands, completions, runTurn (null when not measuring). */
let trace: { origin: number; spans: Span[] } | null = null;
const span = (label: string, started: number) => {
  if (trace)
    trace.spans.push({ label, start: started - trace.origin, end: performance.now() - trace.origin });
};

/** Turns command monitoring on for a connected client (its pooled connections included). */
function countDbCommands(stack: EditorStack, current: () => ModeFigures | null) {
  const client = stack.mongo.client;
  (client as unknown as { monitorCommands: boolean }).monitorCommands = true; // @internal in the driver
  // Connections made before read the option at their creation: set it on those too (driver internals).
  const topology = (client as unknown as { topology?: { s: { servers: Map<string, unknown> } } }).topology;
  for (const server of topology?.s.servers.values() ?? []) {
    const pool = (server as { pool: { connections: Iterable<unknown>; checkedOut: Set<unknown> } }).pool;
    for (const connection of [...pool.connections, ...pool.checkedOut])
      (connection as { monitorCommands: boolean }).monitorCommands = true;
  }
  client.on('commandSucceeded', (event) => {
    const into = current()?.db;
    if (!into) return;
    const entry = into.get(event.commandName) ?? { count: 0, ms: 0 };
    entry.count += 1;
    entry.ms += event.duration;
    into.set(event.commandName, entry);
  });
}

/** Wraps the actor system's `ask` to count commands and the time spent waiting on them. */
function countCommands(stack: EditorStack) {
  const system = stack.actors as unknown as {
    ask: (kind: string, key: string, message: { type: string }) => Promise<unknown>;
  };
  const original = system.ask.bind(system);
  let sink: Map<string, { count: number; ms: number }> | null = null;
  system.ask = async (kind, key, message, ...rest: unknown[]) => {
    const started = performance.now();
    try {
      return await (original as (...args: unknown[]) => Promise<unknown>)(kind, key, message, ...rest);
    } finally {
      span(message.type, started);
      if (sink) {
        const name = `${kind}.${message.type}`;
        const entry = sink.get(name) ?? { count: 0, ms: 0 };
        entry.count += 1;
        entry.ms += performance.now() - started;
        sink.set(name, entry);
      }
    }
  };
  return (into: Map<string, { count: number; ms: number }> | null) => (sink = into);
}

async function overhead(): Promise<{ ok: boolean; lines: string[] }> {
  const mongo = await startMongo();
  const fake = await startFakeLlm();
  fake.script(threeCallsThenReply);
  const remote = await forkFake();
  let measuring: ModeFigures | null = null;
  const llmAgentOn = (server: { url: string; apiKey: string }) => {
    const chat = createChatClient({
      baseUrl: server.url,
      apiKey: server.apiKey,
      model: 'gpt-bench',
      timeoutMs: 30_000,
    });
    const timedChat: typeof chat = {
      async complete(...args) {
        const started = performance.now();
        try {
          return await chat.complete(...args);
        } finally {
          span('completion', started);
          if (measuring) {
            measuring.completionMs += performance.now() - started;
            measuring.completions += 1;
          }
        }
      },
    };
    return createLlmAgent({ client: timedChat, maxSteps: 8 });
  };
  const llmAgent = llmAgentOn(remote);
  const localLlmAgent = llmAgentOn(fake);
  let agent: AgentModel = llmAgent;
  // One stack for (a) and (b): its turns call whichever agent the iteration chose.
  const switching: AgentModel = {
    configured: true,
    async runTurn(...args) {
      const started = performance.now();
      try {
        return await agent.runTurn(...args);
      } finally {
        span('runTurn', started);
        if (measuring) measuring.agentMs += performance.now() - started;
      }
    },
  };
  const stack = await startEditorStack({ mongoUrl: mongo.uri, db: 'bench_agent', agent: switching });
  const collect = countCommands(stack);
  countDbCommands(stack, () => measuring);
  try {
    const { userId, principal } = await richEditor(stack);
    const figures = new Map<Mode, ModeFigures>(
      MODES.map((mode) => [
        mode,
        {
          times: [],
          commands: new Map(),
          db: new Map(),
          events: 0,
          agentMs: 0,
          completionMs: 0,
          completions: 0,
          traces: [],
        },
      ]),
    );

    const once = async (mode: Mode, project: ProjectRecord): Promise<number> => {
      if (mode === 'direct') {
        const started = performance.now();
        if (trace) trace.origin = started;
        await stack.editor.patchProject(project, { context_md: `${project.context_md}${CONTEXT_TEXT}` }, {});
        await stack.editor.addClip(project, { track: 'video', asset_id: target.assetId }, {});
        await stack.editor.patchClip(project, target.clipId, { duration_sec: 3 }, {});
        return performance.now() - started;
      }
      agent = mode === 'llm' ? llmAgent : mode === 'llm-local' ? localLlmAgent : scriptedAgent;
      if (mode === 'llm') await remote.setTarget(target);
      const started = performance.now();
      if (trace) trace.origin = started;
      const answer = await stack.turns.instruct(principal, project, {
        instruction: 'note to keep the intro short, add the image, make the first clip 3 s',
        image_urls: [],
      });
      const elapsed = performance.now() - started;
      if (answer.assistant_text !== REPLY || answer.clips_created.length !== 1 || !answer.context_appended)
        throw new Error(`unexpected ${mode} answer: ${JSON.stringify(answer).slice(0, 400)}`);
      if (measuring) measuring.events += answer.agent_events.length; // not in the warm-up
      return elapsed;
    };

    for (let i = 0; i < WARMUP + TURNS; i++) {
      for (const mode of MODES) {
        const project = await freshProject(stack, userId);
        const measured = i >= WARMUP;
        measuring = measured ? figures.get(mode)! : null;
        collect(measuring?.commands ?? null);
        trace = measured ? { origin: 0, spans: [] } : null;
        const elapsed = await once(mode, project);
        collect(null);
        measuring = null;
        if (measured) {
          figures.get(mode)!.times.push(elapsed);
          figures.get(mode)!.traces.push({ elapsed, spans: trace!.spans });
        }
        trace = null;
      }
    }

    // Per-iteration differences (the modes ran back to back), before the lists are sorted.
    const paired = (a: Mode, b: Mode) => {
      const [x, y] = [figures.get(a)!.times, figures.get(b)!.times];
      return percentile(
        x.map((value, i) => value - y[i]!).sort((m, n) => m - n),
        0.5,
      );
    };
    const pairedRuntime = paired('llm', 'scripted');
    const pairedLocal = paired('llm-local', 'scripted');
    const pairedWhole = paired('llm', 'direct');
    const p = (mode: Mode, q: number) =>
      percentile(
        figures.get(mode)!.times.sort((x, y) => x - y),
        q,
      );
    const runtime = p('llm', 0.5) - p('scripted', 0.5);
    const whole = p('llm', 0.5) - p('direct', 0.5);
    const lines = [
      `agent turn (3 tool calls in 1 message + a ${REPLY_PIECES.length}-piece reply; ${TURNS} turns each, interleaved, fresh project each):`,
      ...MODES.map((mode) => {
        const f = figures.get(mode)!;
        const commands = [...f.commands.entries()]
          .map(
            ([name, c]) =>
              `${name.replace(/^[a-z]+\./, '')} ${(c.count / TURNS).toFixed(1)}×/${ms(c.ms / TURNS)}ms`,
          )
          .join(', ');
        const dbCount = [...f.db.values()].reduce((sum, c) => sum + c.count, 0);
        const dbMs = [...f.db.values()].reduce((sum, c) => sum + c.ms, 0);
        const writes = [...f.db.entries()]
          .filter(([name]) => ['insert', 'update', 'findAndModify', 'delete'].includes(name))
          .reduce((sum, [, c]) => sum + c.count, 0);
        const perTurn = (value: number) => (value / TURNS).toFixed(1);
        const agentPart =
          mode === 'direct'
            ? ''
            : `; ${perTurn(f.events)} events; in runTurn ${ms(f.agentMs / TURNS)} ms` +
              (f.completions > 0
                ? ` (${perTurn(f.completions)} completions ${ms(f.completionMs / TURNS)} ms)`
                : '');
        return (
          `  ${mode.padEnd(8)} p50 ${ms(p(mode, 0.5))} p99 ${ms(p(mode, 0.99))} ms; per turn${agentPart}; ` +
          `db ${perTurn(dbCount)} commands (${perTurn(writes)} writes) ${ms(dbMs / TURNS)} ms\n` +
          `           actor commands (count/ms per turn): ${commands}`
        );
      }),
      `  LLM runtime (a)−(b): p50 +${ms(runtime)} ms (median of paired differences +${ms(pairedRuntime)}; ` +
        `fake in this process +${ms(p('llm-local', 0.5) - p('scripted', 0.5))}/+${ms(pairedLocal)}) ` +
        `(budget +${OVERHEAD_BUDGET_MS} ms) ` +
        verdict(
          runtime <= OVERHEAD_BUDGET_MS,
          `LLM runtime p50 <= +${OVERHEAD_BUDGET_MS} ms`,
          `+${ms(runtime)} ms`,
        ),
      `  whole turn (a)−(c): p50 +${ms(whole)} ms (paired +${ms(pairedWhole)}; turn machinery (b)−(c) ` +
        `+${ms(p('scripted', 0.5) - p('direct', 0.5))} ms) load ${load1()}`,
    ];
    // The chat client alone on the in-process fake: completion 2 of the last turn (its messages, the tools),
    // sent again and again: what one completion's HTTP, SSE and JSON cost, without the editor.
    const request = fake.requests.at(-1)!.body;
    const client = createChatClient({
      baseUrl: fake.url,
      apiKey: fake.apiKey,
      model: 'gpt-bench',
      timeoutMs: 30_000,
    });
    const alone: number[] = [];
    for (let i = 0; i < WARMUP + TURNS; i++) {
      const started = performance.now();
      await client.complete(request.messages as unknown as ClientMessage[], CHAT_TOOLS, {
        onText: () => undefined,
        signal: new AbortController().signal,
      });
      if (i >= WARMUP) alone.push(performance.now() - started);
    }
    alone.sort((x, y) => x - y);
    lines.push(
      `  chat client alone (fake in this process, a ${(JSON.stringify(request).length / 1024).toFixed(1)} KiB request, ` +
        `${REPLY_PIECES.length}-piece reply): p50 ${ms(percentile(alone, 0.5))} p99 ${ms(percentile(alone, 0.99))} ms per completion`,
    );
    for (const mode of ['llm', 'scripted'] as Mode[]) {
      const median = p(mode, 0.5);
      const turn = figures.get(mode)!.traces.find((one) => one.elapsed === median)!;
      const phases = turn.spans
        .sort((x, y) => x.start - y.start)
        .map((one) => `${one.label} ${ms(one.start)}+${ms(one.end - one.start)}`)
        .join(', ');
      lines.push(`  ${mode} turn at the p50 (${ms(median)} ms), phases start+duration: ${phases}`);
    }
    return { ok: runtime <= OVERHEAD_BUDGET_MS, lines };
  } finally {
    await stack.close();
    await fake.close();
    await remote.close();
    await mongo.stop();
  }
}

// ---------------------------------------------------------------------------------------------------------
// 2. Delta latency

/** Token-sized pieces (a word, or a word split in two), about 4 characters each, like a model's stream. */
function tokenPieces(count: number): string[] {
  const words = splitWords(
    'The harbour lights flicker on one by one as the ferry slides past the breakwater, and the gulls ' +
      'settle on the pilings while a fisherman coils his rope beneath the lamp. ',
  );
  const pieces: string[] = [];
  for (let i = 0; pieces.length < count; i++) {
    const word = words[i % words.length]!;
    if (word.length > 7) pieces.push(word.slice(0, 4), word.slice(4));
    else pieces.push(word);
  }
  pieces.length = count;
  return pieces;
}

interface DeltaFigures {
  latencies: number[];
  deltasPerTurn: number[];
  chunks: number;
}

async function deltaRun(
  service: { url: string },
  token: string,
  fake: Awaited<ReturnType<typeof startFakeLlm>>,
  chunkDelayMs: number,
  turns: number,
): Promise<DeltaFigures> {
  const pieces = tokenPieces(DELTA_CHUNKS);
  const text = pieces.join('');
  fake.script(() => ({ kind: 'message', chunks: pieces, chunkDelayMs }));
  const editor = editorClient(() => service, token);
  const figures: DeltaFigures = { latencies: [], deltasPerTurn: [], chunks: 0 };
  for (let turn = -1; turn < turns; turn++) {
    // turn -1 warms up
    const project = await editor.createProject({ aspect_ratio: '9:16' });
    const socket = await openEventsSocket(service.url, project.id, { token });
    const sent: { end: number; at: number }[] = [];
    let offset = 0;
    fake.onChunk((piece, at) => {
      offset += piece.length;
      sent.push({ end: offset, at });
    });
    const received: { end: number; at: number }[] = [];
    let got = '';
    socket.ws.on('message', (data: Buffer) => {
      const at = now();
      const event = JSON.parse(data.toString('utf8')) as EditorEvent;
      if (event.type !== 'assistant.delta') return;
      got += String(event.data.text);
      received.push({ end: got.length, at });
    });
    const answer = await editor.instruct(project.id, { instruction: 'tell me a story' });
    if (answer.status !== 200) throw new Error(`instruct: ${answer.status} ${JSON.stringify(answer.body)}`);
    await socket.waitFor('turn.completed', (events) => events.some((e) => e.type === 'turn.completed'));
    await socket.close();
    fake.onChunk(null);
    if (got !== text)
      throw new Error(`the deltas' text differs from the chunks' (${got.length} vs ${text.length})`);
    if (sent.length !== pieces.length) throw new Error(`${sent.length} chunks seen, ${pieces.length} sent`);
    if (turn < 0) continue;
    let at = 0;
    for (const chunk of sent) {
      while (received[at]!.end < chunk.end) at++;
      figures.latencies.push(received[at]!.at - chunk.at);
    }
    figures.deltasPerTurn.push(received.length);
    figures.chunks += sent.length;
  }
  return figures;
}

async function deltaLatency(): Promise<{ ok: boolean; lines: string[] }> {
  const mongo = await startMongo();
  const fake = await startFakeLlm();
  const service = await startService({
    MONGO_URL: mongo.uri,
    AGENT: 'llm',
    LLM_BASE_URL: fake.url,
    LLM_API_KEY: fake.apiKey,
  });
  try {
    const { token } = await editorUser(service, { credits: 1_000_000 });
    const lines: string[] = [
      `assistant.delta latency (chunk written by the fake → delta at the client; ${DELTA_TURNS} turns × ${DELTA_CHUNKS} chunks):`,
    ];
    let ok = true;
    for (const delay of [20, 0]) {
      const f = await deltaRun(service, token, fake, delay, DELTA_TURNS);
      const sorted = f.latencies.sort((a, b) => a - b);
      const p99 = percentile(sorted, 0.99);
      const deltas = f.deltasPerTurn.sort((a, b) => a - b);
      const judged =
        delay === 20
          ? ` (budget p99 ${DELTA_P99_BUDGET_MS} ms) ` +
            verdict(
              p99 <= DELTA_P99_BUDGET_MS,
              `assistant.delta p99 <= ${DELTA_P99_BUDGET_MS} ms at 20 ms pacing`,
              `${ms(p99)} ms`,
            )
          : ' (no budget)';
      if (delay === 20) ok = p99 <= DELTA_P99_BUDGET_MS;
      lines.push(
        `  chunkDelayMs ${String(delay).padStart(2)}: p50 ${ms(percentile(sorted, 0.5))} p95 ${ms(percentile(sorted, 0.95))} ` +
          `p99 ${ms(p99)} max ${ms(sorted.at(-1)!)} ms; ${deltas[0]}–${deltas.at(-1)} delta events per ${DELTA_CHUNKS} chunks` +
          `${judged} load ${load1()}`,
      );
    }
    return { ok, lines };
  } finally {
    await service.stop();
    await fake.close();
    await mongo.stop();
  }
}

if (process.argv[2] === FAKE_CHILD_ARG) {
  await fakeChildMain();
} else {
  const first = await overhead();
  for (const line of first.lines) console.log(line);
  const second = await deltaLatency();
  for (const line of second.lines) console.log(line);
}
