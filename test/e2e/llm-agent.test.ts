// The LLM agent end to end (docs/editor.md, The LLM agent): the service as a process with
// AGENT=llm talking to the fake Chat Completions server (test/fakes/llm-server.ts), a fresh jongodb, the
// sandbox provider with short timings. Each case scripts the fake, uses its own user and project, and checks
// the answer, the events, the thread, the credits (exact) and what the fake received.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, type RunningService, type ApiAnswer } from '../helpers/service.ts';
import {
  checkTurnAnswer,
  editorClient,
  editorUser,
  ledgerOf,
  balanceOf,
  makeMedia,
  videoTrack,
  withServiceLogs,
  type EditorEvent,
  type InstructAnswer,
  type ProjectState,
} from '../helpers/editor.ts';
import { openEventsSocket } from '../helpers/events-socket.ts';
import { sampleValue } from '../helpers/prometheus.ts';
import { startFakeLlm, type FakeLlm, type LlmReply, type RecordedRequest } from '../fakes/llm-server.ts';
import {
  director,
  cutMidMessage,
  readConversation,
  invalidArguments,
  neverStops,
  rateLimitedThen,
  sequence,
  serverErrors,
  twoGenerations,
  unauthorized,
  unknownTool,
} from '../fakes/llm-scripts.ts';

const DB = 'llm_agent';
const MODEL = 'fake-model-7';
const LLM_TIMEOUT_MS = 3000;
const MAX_STEPS = 4;
const CREDITS = 100_000;
const TURN = 5;
/** A 5-second 480p standard video (docs/api.md, Pricing: 101 per second). */
const VIDEO_5S_480P = 505;
const IMAGE = 50;
const TOOL_NAMES = [
  'add_clip',
  'add_text',
  'append_context',
  'export_video',
  'generate_image',
  'generate_video',
  'get_timeline',
  'list_assets',
  'remove_clip',
  'set_aspect_ratio',
  'set_transition',
  'update_clip',
];

const now = () => performance.timeOrigin + performance.now();
const say = (text: string): LlmReply => ({ kind: 'message', text });
const call = (name: string, args: unknown): LlmReply => ({
  kind: 'message',
  tool_calls: [{ name, arguments: JSON.stringify(args) }],
});

describe('the LLM agent (AGENT=llm)', () => {
  let mongo: TestMongo;
  let llm: FakeLlm;
  let service: RunningService;
  const env = () => ({
    MONGO_URL: mongo.uri,
    AGENT: 'llm',
    LLM_BASE_URL: llm.url,
    LLM_MODEL: MODEL,
    LLM_TIMEOUT_MS: String(LLM_TIMEOUT_MS),
    AGENT_MAX_STEPS: String(MAX_STEPS),
    SANDBOX_VIDEO_MS: '300',
    SANDBOX_IMAGE_MS: '200',
    PROVIDER_POLL_INTERVAL_MS: '200',
    PROVIDER_TIMEOUT_MS: '60000',
    RATE_LIMIT_PER_MINUTE: '100000',
  });

  before(async () => {
    mongo = await startMongo();
    llm = await startFakeLlm();
    service = await startService({ ...env(), MONGO_DB: DB, LLM_API_KEY: llm.apiKey });
  });
  after(async () => {
    await service?.stop();
    await llm?.close();
    await mongo?.stop();
  });

  /** A fresh user (100 000 credits) with its client and a new project; `seen` marks the fake's requests so far. */
  async function setUp(target: RunningService = service) {
    const user = await editorUser(target, { credits: CREDITS });
    const editor = editorClient(() => target, user.token);
    const project = await editor.createProject({ name: 'Lighthouse' });
    const state = await editor.state(project.id);
    return { user, editor, project, videoId: state.body.videos[0]!.id, seen: llm.requests.length };
  }

  /** The credit movements after the initial grant, oldest first. */
  async function movements(userId: string, target: RunningService = service) {
    const entries = (await ledgerOf(target, userId)).slice().reverse();
    assert.equal(entries[0]?.delta, CREDITS, `the first entry is the grant: ${JSON.stringify(entries)}`);
    return entries.slice(1).map((entry) => ({ delta: entry.delta, reason: entry.reason }));
  }

  /** The project's kept events (history replay `since=0`), once its last turn has ended. */
  async function historyOf(projectId: string, token: string): Promise<EditorEvent[]> {
    const socket = await openEventsSocket(service.url, projectId, { token, since: 0 });
    try {
      await socket.waitFor('the end of a turn', (events) =>
        events.some((event) => event.type === 'turn.failed' || event.type === 'turn.completed'),
      );
      return [...socket.events];
    } finally {
      await socket.close();
    }
  }

  const ofType = (events: EditorEvent[], type: string) => events.filter((event) => event.type === type);
  const deltas = (events: EditorEvent[]) =>
    ofType(events, 'assistant.delta')
      .map((event) => String(event.data.text))
      .join('');

  /** A failed turn's answer: the status and `{ error }` (a string). */
  function checkFailure(answer: ApiAnswer<InstructAnswer>, status: number) {
    assert.equal(answer.status, status, JSON.stringify(answer.body));
    assert.equal(typeof answer.body.error, 'string', JSON.stringify(answer.body));
    assert.equal(answer.body.agent_events, undefined);
  }

  /** The turn's events in the history: started, then failed with `status`; returns them. */
  async function checkFailedTurn(projectId: string, token: string, status: number, error: string) {
    const events = (await historyOf(projectId, token)).filter((event) => event.turn_id !== null);
    assert.equal(events[0]?.type, 'turn.started', JSON.stringify(events));
    const last = events.at(-1)!;
    assert.equal(last.type, 'turn.failed', JSON.stringify(events));
    assert.equal(last.data.status, status);
    assert.equal(last.data.error, error);
    assert.equal(ofType(events, 'turn.completed').length, 0);
    return events;
  }

  /** The agent's counters on `/metrics` (missing series count 0). */
  async function agentMetrics() {
    const response = await fetch(`${service.url}/metrics`, {
      headers: { authorization: `Bearer ${service.adminToken}` },
    });
    assert.equal(response.status, 200);
    const text = await response.text();
    const value = (series: string) => sampleValue(text, series) ?? 0;
    return {
      prompt: value('mf_agent_tokens_total{type="prompt"}'),
      completion: value('mf_agent_tokens_total{type="completion"}'),
      completions: value('mf_agent_completions_total'),
      turns: value('mf_agent_turns_total{agent="llm",outcome="completed"}'),
      failed: value('mf_agent_turns_total{agent="llm",outcome="failed"}'),
    };
  }

  const requestsOf = (seen: number): RecordedRequest[] => llm.requests.slice(seen);
  const logged = <T>(body: () => Promise<T>) => withServiceLogs(() => [service], body);

  it('drives a 3-scene video with the director: plan then 3 × continue, exact charges, what the LLM received', () =>
    logged(async () => {
      llm.script(director());
      const { user, editor, project, videoId, seen } = await setUp();
      const thread: { role: string; content: string }[] = [];
      const instructions = ['a 3-scene video about a lighthouse at dawn', 'continue', 'continue', 'continue'];
      const generated: string[] = [];
      for (const [turn, instruction] of instructions.entries()) {
        const before = llm.requests.length;
        const answer = await editor.instruct(project.id, { instruction });
        const { creditsCharged, mediaStarted } = checkTurnAnswer(answer, project.id);
        const body = answer.body;
        const requests = requestsOf(before);
        assert.equal(deltas(body.agent_events), body.assistant_text, 'the deltas make up the reply');
        if (turn === 0) {
          assert.equal(requests.length, 2, 'append_context, then the question');
          assert.equal(creditsCharged, TURN);
          assert.equal(body.context_appended, true);
          assert.equal(body.media_gen_done, false);
          assert.match(body.assistant_text, /I planned 3 scenes about a lighthouse at dawn/);
        } else {
          assert.equal(requests.length, 4, 'get_timeline, generate_video, add_clip, the question');
          assert.equal(creditsCharged, TURN + VIDEO_5S_480P);
          assert.equal(body.media_gen_done, true);
          assert.equal(mediaStarted.length, 1);
          assert.equal(mediaStarted[0]!.data.credits, VIDEO_5S_480P);
          assert.equal(body.assets_created.length, 1);
          assert.equal(body.assets_created[0]!.kind, 'video');
          assert.equal(body.clips_created.length, 1);
          assert.equal(body.clips_created[0]!.asset_id, body.assets_created[0]!.id);
          assert.equal(body.clips_created[0]!.idx, turn - 1);
          generated.push(body.assets_created[0]!.id);
          const finished = ofType(body.agent_events, 'tool.finished').map((event) => [
            event.data.name,
            event.data.ok,
          ]);
          assert.deepEqual(finished, [
            ['get_timeline', true],
            ['generate_video', true],
            ['add_clip', true],
          ]);
        }
        // Every request: the key, the model, streaming, the 10 tools, the project in the system message, the
        // earlier thread, then this turn's instruction.
        for (const request of requests) {
          assert.equal(request.headers.authorization, `Bearer ${llm.apiKey}`);
          assert.equal(request.body.model, MODEL);
          assert.equal(request.body.stream, true);
          assert.deepEqual(request.body.tools?.map((tool) => tool.function.name).sort(), TOOL_NAMES);
          for (const tool of request.body.tools ?? []) assert.equal(tool.type, 'function');
          const system = request.body.messages[0]!;
          assert.equal(system.role, 'system');
          assert.ok(String(system.content).includes(project.id), 'the system message names the project');
          assert.ok(String(system.content).includes(videoId), 'and the video');
          if (turn > 0) {
            assert.ok(
              String(system.content).includes('## Storyboard: a lighthouse at dawn'),
              'the storyboard (project context) is in the system message after turn 1',
            );
          }
        }
        const first = requests[0]!.body.messages;
        const expected = [...thread, { role: 'user', content: instruction }];
        assert.deepEqual(
          first.slice(1).map((message) => ({ role: message.role, content: message.content })),
          expected,
          'the earlier thread, then the instruction',
        );
        for (const request of requests.slice(1)) {
          const messages = request.body.messages.slice(1, expected.length + 1);
          assert.deepEqual(
            messages.map((message) => ({ role: message.role, content: message.content })),
            expected,
            'later completions of the turn start the same way',
          );
          assert.equal(request.body.messages.at(-1)!.role, 'tool', 'and end with the last tool result');
        }
        thread.push(
          { role: 'user', content: instruction },
          { role: 'assistant', content: body.assistant_text },
        );
      }
      assert.equal(requestsOf(seen).length, 2 + 3 * 4);

      const state = await editor.state(project.id);
      assert.deepEqual(
        videoTrack(state.body).map((clip) => clip.asset_id),
        generated,
        '3 clips, in scene order',
      );
      assert.equal(state.body.assets.length, 3);
      assert.match(state.body.project.context_md, /Storyboard: a lighthouse at dawn/);

      const spent = TURN + 3 * (TURN + VIDEO_5S_480P);
      assert.equal(await balanceOf(service, user.token), CREDITS - spent);
      const moves = await movements(user.userId);
      assert.deepEqual(
        moves.filter((move) => move.reason === 'agent_turn'),
        Array.from({ length: 4 }, () => ({ delta: -TURN, reason: 'agent_turn' })),
      );
      assert.deepEqual(
        moves.filter((move) => move.reason !== 'agent_turn').map((move) => move.delta),
        [-VIDEO_5S_480P, -VIDEO_5S_480P, -VIDEO_5S_480P],
      );

      const messages = await editor.messages(project.id, videoId);
      const listed = (messages.body.messages as { role: string; text: string }[]).map((message) => ({
        role: message.role,
        content: message.text,
      }));
      assert.deepEqual(listed, thread);
    }));

  it('retries a 429 (Retry-After: 0) and answers 200; the fake saw 2 requests', () =>
    logged(async () => {
      llm.script(rateLimitedThen());
      const { user, editor, project, seen } = await setUp();
      const answer = await editor.instruct(project.id, { instruction: 'hello' });
      const { creditsCharged } = checkTurnAnswer(answer, project.id);
      assert.equal(answer.body.assistant_text, 'Done. What would you like to do next?');
      assert.equal(creditsCharged, TURN);
      assert.equal(requestsOf(seen).length, 2);
      assert.equal(await balanceOf(service, user.token), CREDITS - TURN);
    }));

  it('answers 502 when the LLM keeps failing with 500, within LLM_TIMEOUT_MS; the 5 credits stay', () =>
    logged(async () => {
      llm.script(serverErrors(1000));
      const { user, editor, project, videoId, seen } = await setUp();
      const metricsBefore = await agentMetrics();
      const started = Date.now();
      const answer = await editor.instruct(project.id, { instruction: 'hello' });
      const elapsed = Date.now() - started;
      checkFailure(answer, 502);
      assert.match(answer.body.error!, /answered 500.*gave up after \d+ attempts/);
      // The margin covers the turn's own bookkeeping on a loaded CI machine; without the limit it would hang.
      assert.ok(elapsed < LLM_TIMEOUT_MS + 10_000, `answered in ${elapsed} ms`);
      const attempts = requestsOf(seen).length;
      assert.ok(attempts >= 2 && attempts <= 4, `${attempts} attempts (retries wait 0.5, 1, 2 s)`);
      await checkFailedTurn(project.id, user.token, 502, answer.body.error!);
      const metricsAfter = await agentMetrics();
      assert.equal(metricsAfter.failed - metricsBefore.failed, 1, 'a failed llm turn is counted');
      assert.equal(metricsAfter.turns, metricsBefore.turns);
      const thread = await editor.messages(project.id, videoId);
      assert.deepEqual(
        (thread.body.messages as { role: string; text: string }[]).map((message) => [
          message.role,
          message.text,
        ]),
        [['user', 'hello']],
        'a failed turn keeps the user message only',
      );
      assert.equal(await balanceOf(service, user.token), CREDITS - TURN);
      assert.deepEqual(await movements(user.userId), [{ delta: -TURN, reason: 'agent_turn' }]);
    }));

  it('answers 503 when the LLM refuses the credentials (401); the turn ran, its 5 credits stay', () =>
    logged(async () => {
      llm.script(unauthorized());
      const { user, editor, project, seen } = await setUp();
      const answer = await editor.instruct(project.id, { instruction: 'hello' });
      checkFailure(answer, 503);
      assert.match(answer.body.error!, /credentials/);
      assert.equal(requestsOf(seen).length, 1, 'a 401 is not retried');
      await checkFailedTurn(project.id, user.token, 503, answer.body.error!);
      assert.deepEqual(await movements(user.userId), [{ delta: -TURN, reason: 'agent_turn' }]);
    }));

  it('answers 503 and charges nothing when AGENT=llm has no LLM_API_KEY (a second service)', () =>
    logged(async () => {
      const keyless = await startService({ ...env(), MONGO_DB: `${DB}_keyless` });
      try {
        const { user, editor, project, videoId, seen } = await setUp(keyless);
        const answer = await editor.instruct(project.id, { instruction: 'hello' });
        checkFailure(answer, 503);
        assert.equal(requestsOf(seen).length, 0);
        assert.equal(await balanceOf(keyless, user.token), CREDITS);
        assert.deepEqual(await movements(user.userId, keyless), []);
        const socket = await openEventsSocket(keyless.url, project.id, { token: user.token, since: 0 });
        await new Promise((resolve) => setTimeout(resolve, 500)); // a wait for nothing: no turn event may come
        await socket.close();
        assert.deepEqual(
          socket.events.filter((event) => event.turn_id !== null),
          [],
          'no turn events',
        );
        const messages = await editor.messages(project.id, videoId);
        assert.deepEqual(messages.body.messages, []);
        // The order of the checks (docs/errors.md, Order of checks): 404 → 400 → 503 → 402.
        const missing = await editor.instruct('vp_doesnotexist', { instruction: 'hello' });
        assert.equal(missing.status, 404, JSON.stringify(missing.body));
        const empty = await editor.instruct(project.id, {});
        assert.equal(empty.status, 400, JSON.stringify(empty.body));
        assert.equal(
          empty.body.error,
          'instruction is required (non-empty string) unless image_urls is given',
        );
        const broke = await editorUser(keyless, { credits: 0 });
        const brokeEditor = editorClient(() => keyless, broke.token);
        const brokeProject = await brokeEditor.createProject({ name: 'Broke' });
        checkFailure(await brokeEditor.instruct(brokeProject.id, { instruction: 'hello' }), 503);
        assert.equal(requestsOf(seen).length, 0);
      } finally {
        await keyless.stop();
      }
    }));

  it('answers 502 when the stream is cut mid-message; the words sent before the cut reached the events', () =>
    logged(async () => {
      llm.script(cutMidMessage());
      const { user, editor, project, seen } = await setUp();
      const answer = await editor.instruct(project.id, { instruction: 'plan something' });
      checkFailure(answer, 502);
      assert.match(answer.body.error!, /mid-message/);
      assert.equal(requestsOf(seen).length, 1);
      const events = await checkFailedTurn(project.id, user.token, 502, answer.body.error!);
      assert.equal(deltas(events), 'I am planning ');
      assert.deepEqual(await movements(user.userId), [{ delta: -TURN, reason: 'agent_turn' }]);
    }));

  it('answers 502 when the stream is not JSON; the 5 credits stay', () =>
    logged(async () => {
      llm.script(() => ({ kind: 'garbage' }));
      const { user, editor, project, seen } = await setUp();
      const answer = await editor.instruct(project.id, { instruction: 'hello' });
      checkFailure(answer, 502);
      assert.match(answer.body.error!, /unreadable stream/);
      assert.equal(requestsOf(seen).length, 1, 'an unreadable stream is not retried');
      await checkFailedTurn(project.id, user.token, 502, answer.body.error!);
      assert.deepEqual(await movements(user.userId), [{ delta: -TURN, reason: 'agent_turn' }]);
    }));

  it('gives a malformed tool call (invalid JSON arguments) a tool error the model reads; 200', () =>
    logged(async () => {
      llm.script(invalidArguments());
      const { user, editor, project, seen } = await setUp();
      const answer = await editor.instruct(project.id, { instruction: 'add something' });
      checkTurnAnswer(answer, project.id);
      assert.equal(answer.body.assistant_text, 'That call did not work. What would you like to do?');
      const finished = ofType(answer.body.agent_events, 'tool.finished');
      assert.equal(finished.length, 1);
      assert.equal(finished[0]!.data.name, 'add_clip');
      assert.equal(finished[0]!.data.ok, false);
      assert.equal(finished[0]!.data.summary, 'invalid arguments: not valid JSON');
      const requests = requestsOf(seen);
      assert.equal(requests.length, 2);
      const messages = requests[1]!.body.messages;
      const assistant = messages.at(-2)!;
      assert.equal(assistant.role, 'assistant');
      assert.equal(assistant.tool_calls?.[0]?.function.name, 'add_clip');
      const tool = messages.at(-1)!;
      assert.equal(tool.role, 'tool');
      assert.equal(tool.tool_call_id, assistant.tool_calls?.[0]?.id);
      assert.deepEqual(JSON.parse(String(tool.content)), {
        ok: false,
        error: 'invalid arguments: not valid JSON',
      });
      assert.equal((await editor.state(project.id)).body.clips.length, 0);
      assert.deepEqual(await movements(user.userId), [{ delta: -TURN, reason: 'agent_turn' }]);
    }));

  it('gives a call of an unknown tool a tool error; 200', () =>
    logged(async () => {
      llm.script(unknownTool());
      const { user, editor, project, seen } = await setUp();
      const answer = await editor.instruct(project.id, { instruction: 'delete everything' });
      checkTurnAnswer(answer, project.id);
      const finished = ofType(answer.body.agent_events, 'tool.finished');
      assert.deepEqual(
        finished.map((event) => [event.data.name, event.data.ok, event.data.summary]),
        [['delete_everything', false, 'unknown tool delete_everything']],
      );
      const tool = requestsOf(seen)[1]!.body.messages.at(-1)!;
      assert.deepEqual(JSON.parse(String(tool.content)), {
        ok: false,
        error: 'unknown tool delete_everything',
      });
      assert.deepEqual(await movements(user.userId), [{ delta: -TURN, reason: 'agent_turn' }]);
    }));

  it('runs only the first of two generations in one turn and charges it once', () =>
    logged(async () => {
      llm.script(twoGenerations());
      const { user, editor, project, seen } = await setUp();
      const answer = await editor.instruct(project.id, { instruction: 'two images please' });
      const { creditsCharged, mediaStarted } = checkTurnAnswer(answer, project.id);
      assert.equal(creditsCharged, TURN + IMAGE);
      assert.equal(mediaStarted.length, 1);
      assert.equal(mediaStarted[0]!.data.kind, 'image');
      assert.equal(mediaStarted[0]!.data.credits, IMAGE);
      const finished = ofType(answer.body.agent_events, 'tool.finished');
      assert.deepEqual(
        finished.map((event) => [event.data.name, event.data.ok]),
        [
          ['generate_image', true],
          ['generate_image', false],
        ],
      );
      assert.equal(finished[1]!.data.summary, 'only one media generation per turn');
      assert.equal(answer.body.assets_created.length, 1);
      assert.equal(answer.body.media_gen_done, true);
      assert.equal(ofType(answer.body.agent_events, 'asset.created').length, 1);
      const requests = requestsOf(seen);
      assert.equal(requests.length, 2);
      const tools = requests[1]!.body.messages.filter((message) => message.role === 'tool');
      assert.equal(tools.length, 2);
      assert.equal(JSON.parse(String(tools[0]!.content)).ok, true);
      assert.deepEqual(JSON.parse(String(tools[1]!.content)), {
        ok: false,
        error: 'only one media generation per turn',
      });
      assert.equal((await editor.state(project.id)).body.assets.length, 1);
      assert.equal(await balanceOf(service, user.token), CREDITS - TURN - IMAGE);
      assert.deepEqual(await movements(user.userId), [
        { delta: -TURN, reason: 'agent_turn' },
        { delta: -IMAGE, reason: 'job' },
      ]);
    }));

  it('export_video: generate, place and export in one turn; the video_url in the tool result, no extra charge', () =>
    logged(async () => {
      llm.script((request) => {
        const { steps } = readConversation(request);
        const step = (name: string) => steps.find((one) => one.name === name);
        const generated = step('generate_video');
        if (!generated)
          return call('generate_video', {
            prompt: 'a red kite over a ridge',
            duration_seconds: 5,
            resolution: '480p',
          });
        if (!generated.outcome.ok) return say(`generation failed: ${generated.outcome.error}?`);
        const asset = (generated.outcome.result as { asset: { id: string } }).asset;
        if (!step('add_clip')) return call('add_clip', { track: 'video', asset_id: asset.id });
        const exported = step('export_video');
        if (!exported) return call('export_video', { fit: 'fill', quality: 'final' });
        if (!exported.outcome.ok) return say(`export failed: ${exported.outcome.error}?`);
        const { video_url } = exported.outcome.result as { video_url: string };
        return say(`Here is your video: ${video_url} Anything else?`);
      });
      const { user, editor, project, videoId, seen } = await setUp();
      const answer = await editor.instruct(project.id, { instruction: 'make a kite video and export it' });
      const { creditsCharged, mediaStarted } = checkTurnAnswer(answer, project.id);
      assert.equal(creditsCharged, TURN + VIDEO_5S_480P, 'the export costs nothing beyond the turn');
      assert.equal(mediaStarted.length, 1, 'the export is not a media generation');
      const finished = ofType(answer.body.agent_events, 'tool.finished');
      assert.deepEqual(
        finished.map((event) => [event.data.name, event.data.ok]),
        [
          ['generate_video', true],
          ['add_clip', true],
          ['export_video', true],
        ],
      );
      const requests = requestsOf(seen);
      assert.equal(requests.length, 4);
      const toolResults = requests[3]!.body.messages.filter((message) => message.role === 'tool');
      const exported = JSON.parse(String(toolResults.at(-1)!.content)) as {
        ok: boolean;
        result: { asset_id: string; video_url: string; duration_sec: number; video_clip_count: number };
      };
      assert.equal(exported.ok, true);
      assert.match(exported.result.video_url, /^http:\/\/[^/]+\/media\/[A-Za-z0-9_-]+\.mp4$/);
      assert.equal(exported.result.video_clip_count, 1);
      assert.ok(Math.abs(exported.result.duration_sec - 5) < 0.5, String(exported.result.duration_sec));
      assert.equal(
        answer.body.assistant_text,
        `Here is your video: ${exported.result.video_url} Anything else?`,
      );
      // The same export REST answers: the same timeline, fit and asset.
      const rest = await editor.exportVideo(project.id, { video_id: videoId, fit: 'fill' });
      assert.equal(rest.status, 200, JSON.stringify(rest.body));
      assert.equal(rest.body.video_url, exported.result.video_url);
      const media = await fetch(exported.result.video_url);
      assert.equal(media.status, 200);
      assert.equal(media.headers.get('content-type'), 'video/mp4');
      assert.equal(await balanceOf(service, user.token), CREDITS - TURN - VIDEO_5S_480P);
    }));

  it('export_video refuses a quality other than final or preview, as a tool error the model reads', () =>
    logged(async () => {
      llm.script(sequence(call('export_video', { quality: 'draft' }), say('No such quality. OK?')));
      const { editor, project, seen } = await setUp();
      const answer = await editor.instruct(project.id, { instruction: 'export a draft' });
      const { creditsCharged } = checkTurnAnswer(answer, project.id);
      assert.equal(creditsCharged, TURN);
      const finished = ofType(answer.body.agent_events, 'tool.finished');
      const error = 'invalid arguments: quality must be one of final, preview';
      assert.deepEqual(
        finished.map((event) => [event.data.name, event.data.ok, event.data.summary]),
        [['export_video', false, error]],
      );
      const tools = requestsOf(seen)[1]!.body.messages.filter((message) => message.role === 'tool');
      assert.deepEqual(JSON.parse(String(tools[0]!.content)), { ok: false, error });
    }));

  it(`stops a model that never stops after AGENT_MAX_STEPS (${MAX_STEPS}) completions and says so`, () =>
    logged(async () => {
      llm.script(neverStops());
      const { user, editor, project, seen } = await setUp();
      const answer = await editor.instruct(project.id, { instruction: 'list forever' });
      checkTurnAnswer(answer, project.id);
      assert.equal(requestsOf(seen).length, MAX_STEPS);
      assert.match(answer.body.assistant_text, new RegExp(`stopped after ${MAX_STEPS} steps`));
      assert.equal(ofType(answer.body.agent_events, 'tool.finished').length, MAX_STEPS);
      assert.deepEqual(await movements(user.userId), [{ delta: -TURN, reason: 'agent_turn' }]);
    }));

  it('answers 502 after about LLM_TIMEOUT_MS when the LLM hangs', (t) =>
    logged(async () => {
      llm.script(() => ({ kind: 'hang' }));
      const { user, editor, project, seen } = await setUp();
      const started = Date.now();
      const answer = await editor.instruct(project.id, { instruction: 'hello' });
      const elapsed = Date.now() - started;
      t.diagnostic(`answered after ${elapsed} ms`);
      checkFailure(answer, 502);
      assert.match(answer.body.error!, new RegExp(`did not answer within ${LLM_TIMEOUT_MS} ms`));
      assert.ok(
        elapsed >= LLM_TIMEOUT_MS - 100 && elapsed < LLM_TIMEOUT_MS + 10_000,
        `answered after ${elapsed} ms`,
      );
      assert.equal(requestsOf(seen).length, 1);
      await checkFailedTurn(project.id, user.token, 502, answer.body.error!);
      // The project is free again: the next turn runs.
      llm.script(sequence(say('I am back. What next?')));
      const next = await editor.instruct(project.id, { instruction: 'hello again' });
      checkTurnAnswer(next, project.id);
      assert.equal(next.body.assistant_text, 'I am back. What next?');
      assert.deepEqual(await movements(user.userId), [
        { delta: -TURN, reason: 'agent_turn' },
        { delta: -TURN, reason: 'agent_turn' },
      ]);
    }));

  it('refunds a generation that delivered nothing ([sandbox:fail]); the turn answers 200, the 5 stays', () =>
    logged(async () => {
      llm.script(
        sequence(
          call('generate_video', {
            prompt: 'a storm at sea [sandbox:fail]',
            duration_seconds: 5,
            resolution: '480p',
          }),
          say('The generation failed. What next?'),
        ),
      );
      const { user, editor, project, seen } = await setUp();
      const answer = await editor.instruct(project.id, { instruction: 'a storm' });
      const { creditsCharged, mediaStarted } = checkTurnAnswer(answer, project.id);
      assert.equal(creditsCharged, TURN, 'the refunded media is not part of the turn charge');
      assert.equal(mediaStarted.length, 1);
      assert.equal(mediaStarted[0]!.data.credits, VIDEO_5S_480P);
      assert.equal(answer.body.media_gen_done, false);
      assert.deepEqual(answer.body.assets_created, []);
      const failed = ofType(answer.body.agent_events, 'media.failed');
      assert.equal(failed.length, 1, JSON.stringify(answer.body.agent_events));
      assert.equal(failed[0]!.data.job_id, mediaStarted[0]!.data.job_id);
      assert.equal(failed[0]!.data.refunded_credits, VIDEO_5S_480P);
      const finished = ofType(answer.body.agent_events, 'tool.finished');
      assert.equal(finished[0]!.data.ok, false);
      assert.match(String(finished[0]!.data.summary), /^generation failed: /);
      const tool = requestsOf(seen)[1]!.body.messages.at(-1)!;
      assert.match(JSON.parse(String(tool.content)).error as string, /^generation failed: /);
      assert.equal(await balanceOf(service, user.token), CREDITS - TURN);
      assert.deepEqual(await movements(user.userId), [
        { delta: -TURN, reason: 'agent_turn' },
        { delta: -VIDEO_5S_480P, reason: 'job' },
        { delta: VIDEO_5S_480P, reason: 'refund' },
      ]);
      assert.equal((await editor.state(project.id)).body.assets.length, 0);
    }));

  it('ends the turn with 402 when the generation does not fit the balance; the 5 stays, nothing else', () =>
    logged(async () => {
      llm.script(
        sequence(
          call('generate_video', { prompt: 'a long shot', duration_seconds: 5, resolution: '480p' }),
          say('Not reached. What next?'),
        ),
      );
      const user = await editorUser(service, { credits: TURN + 100 });
      const editor = editorClient(() => service, user.token);
      const project = await editor.createProject({ name: 'Tight budget' });
      const seen = llm.requests.length;
      const answer = await editor.instruct(project.id, { instruction: 'a long shot' });
      assert.equal(answer.status, 402, JSON.stringify(answer.body));
      assert.equal(answer.body.credits_required, VIDEO_5S_480P);
      assert.equal(answer.body.credits_remaining, 100);
      assert.equal(requestsOf(seen).length, 1, 'the model is not asked again');
      const events = (await historyOf(project.id, user.token)).filter((event) => event.turn_id !== null);
      assert.equal(events.at(-1)!.type, 'turn.failed');
      assert.equal(events.at(-1)!.data.status, 402);
      assert.equal(ofType(events, 'media.started').length, 0);
      assert.equal(await balanceOf(service, user.token), 100);
      const ledger = (await ledgerOf(service, user.userId)).map((entry) => entry.delta);
      assert.deepEqual(ledger, [-TURN, TURN + 100], 'the turn charge and the grant, nothing else');
    }));

  it('keeps a delivered media and its charge when the LLM fails afterwards (502), charged once', () =>
    logged(async () => {
      let calls = 0;
      llm.script(() => {
        calls += 1;
        return calls === 1
          ? call('generate_video', { prompt: 'a calm sea', duration_seconds: 5, resolution: '480p' })
          : { kind: 'error', status: 500, message: 'The server had an error', type: 'server_error' };
      });
      const { user, editor, project } = await setUp();
      const answer = await editor.instruct(project.id, { instruction: 'a calm sea' });
      checkFailure(answer, 502);
      const events = await checkFailedTurn(project.id, user.token, 502, answer.body.error!);
      assert.equal(ofType(events, 'media.completed').length, 1);
      const created = ofType(events, 'asset.created');
      assert.equal(created.length, 1);
      const state = await editor.state(project.id);
      assert.deepEqual(
        state.body.assets.map((asset) => [asset.id, asset.kind]),
        [[(created[0]!.data.asset as { id: string }).id, 'video']],
      );
      assert.equal(await balanceOf(service, user.token), CREDITS - TURN - VIDEO_5S_480P);
      assert.deepEqual(await movements(user.userId), [
        { delta: -TURN, reason: 'agent_turn' },
        { delta: -VIDEO_5S_480P, reason: 'job' },
      ]);
    }));

  it('streams the reply to a WebSocket client while the LLM is still sending it', (t) =>
    logged(async () => {
      const pieces = Array.from({ length: 20 }, (_, at) => `word${at} `);
      pieces.push('ready?');
      llm.script(sequence({ kind: 'message', chunks: pieces, chunkDelayMs: 30 }));
      const { user, editor, project } = await setUp();
      const socket = await openEventsSocket(service.url, project.id, { token: user.token });
      const deltaArrivals: number[] = [];
      socket.ws.on('message', (data: Buffer) => {
        const event = JSON.parse(data.toString('utf8')) as EditorEvent;
        if (event.type === 'assistant.delta') deltaArrivals.push(now());
      });
      const chunkSent: number[] = [];
      llm.onChunk((_text, sentAt) => chunkSent.push(sentAt));
      try {
        const answer = await editor.instruct(project.id, { instruction: 'talk slowly' });
        const answeredAt = now();
        checkTurnAnswer(answer, project.id);
        assert.equal(answer.body.assistant_text, pieces.join(''));
        assert.equal(chunkSent.length, pieces.length);
        const lastChunk = chunkSent.at(-1)!;
        assert.ok(deltaArrivals.length >= 2, `deltas in several events: ${deltaArrivals.length}`);
        const first = deltaArrivals[0]!;
        t.diagnostic(
          `first delta ${Math.round(first - chunkSent[0]!)} ms after the first chunk, ` +
            `${Math.round(lastChunk - first)} ms before the last one; answer ${Math.round(answeredAt - lastChunk)} ms after it`,
        );
        assert.ok(first < answeredAt, 'the first delta arrives before the answer');
        assert.ok(
          first < lastChunk - 200,
          `the first delta arrived ${Math.round(lastChunk - first)} ms before the last chunk was sent`,
        );
        await socket.waitFor('turn.completed', (events) =>
          events.some((event) => event.type === 'turn.completed'),
        );
        assert.equal(deltas(socket.events), answer.body.assistant_text);
      } finally {
        llm.onChunk(null);
        await socket.close();
      }
    }));

  it('records the usage of the completions: turn.completed, the thread and /metrics', () =>
    logged(async () => {
      llm.script(
        sequence(
          {
            kind: 'message',
            tool_calls: [{ name: 'list_assets', arguments: '{}' }],
            usage: { prompt_tokens: 1234, completion_tokens: 17 },
          },
          {
            kind: 'message',
            text: 'Nothing yet. What next?',
            usage: { prompt_tokens: 1300, completion_tokens: 9 },
          },
        ),
      );
      const { editor, project, videoId } = await setUp();
      const before = await agentMetrics();
      const answer = await editor.instruct(project.id, { instruction: 'what do we have' });
      checkTurnAnswer(answer, project.id);
      const usage = { prompt_tokens: 2534, completion_tokens: 26, total_tokens: 2560, completions: 2 };
      const completed = ofType(answer.body.agent_events, 'turn.completed')[0]!;
      assert.deepEqual(completed.data.usage, usage);
      const messages = (await editor.messages(project.id, videoId)).body.messages as {
        role: string;
        usage?: unknown;
      }[];
      assert.deepEqual(
        messages.map((message) => message.role),
        ['user', 'assistant'],
      );
      assert.deepEqual(messages[1]!.usage, usage);
      const after = await agentMetrics();
      assert.deepEqual(
        {
          prompt: after.prompt - before.prompt,
          completion: after.completion - before.completion,
          completions: after.completions - before.completions,
          turns: after.turns - before.turns,
        },
        { prompt: 2534, completion: 26, completions: 2, turns: 1 },
      );
    }));

  it("keeps the LLM's words as data: HTML in a reply, extra tool properties, another project's asset", () =>
    logged(async () => {
      const { user, editor, project, videoId } = await setUp();
      const other = await editor.createProject({ name: 'Other' });
      const upload = await editor.upload(other.id, makeMedia('wav'), 'audio/wav');
      assert.equal(upload.status, 200, JSON.stringify(upload.body));
      const foreign = upload.body.asset.id;
      const stateOf = async (id: string) => (await editor.state(id)).body as ProjectState;
      const [mineBefore, otherBefore] = [await stateOf(project.id), await stateOf(other.id)];

      // A reply with HTML comes back verbatim, as JSON.
      const html = '<img src=x onerror=alert(1)> Shall I go on?';
      llm.script(sequence(say(html)));
      const reply = await editor.instruct(project.id, { instruction: 'say something' });
      checkTurnAnswer(reply, project.id);
      assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(reply.body.assistant_text, html);
      assert.equal(deltas(reply.body.agent_events), html);
      const thread = await editor.messages(project.id, videoId);
      assert.match(thread.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal((thread.body.messages as { text: string }[]).at(-1)!.text, html);

      // Extra properties in a tool call's arguments: refused as invalid, nothing changes.
      const extra = { track: 'music', asset_id: 'va_x', op_id: 'evil', video_id: 'vv_other' };
      llm.script(sequence(call('add_clip', extra), say('That did not work. What next?')));
      const refused = await editor.instruct(project.id, { instruction: 'add it' });
      checkTurnAnswer(refused, project.id);
      let finished = ofType(refused.body.agent_events, 'tool.finished');
      assert.equal(finished.length, 1);
      assert.equal(finished[0]!.data.ok, false);
      assert.match(String(finished[0]!.data.summary), /^invalid arguments: /);
      assert.deepEqual(refused.body.clips_created, []);

      // An asset of another project: a tool error, nothing changes in either project.
      llm.script(sequence(call('add_clip', { track: 'music', asset_id: foreign }), say('No. What next?')));
      const crossed = await editor.instruct(project.id, { instruction: `use ${foreign} as music` });
      checkTurnAnswer(crossed, project.id);
      finished = ofType(crossed.body.agent_events, 'tool.finished');
      assert.equal(finished.length, 1);
      assert.equal(finished[0]!.data.ok, false);
      assert.equal(finished[0]!.data.summary, 'Asset not found');
      const toolMessage = llm.requests.at(-1)!.body.messages.at(-1)!;
      assert.deepEqual(JSON.parse(String(toolMessage.content)), { ok: false, error: 'Asset not found' });
      assert.deepEqual(crossed.body.clips_created, []);

      const [mineAfter, otherAfter] = [await stateOf(project.id), await stateOf(other.id)];
      assert.deepEqual(mineAfter.clips, []);
      assert.equal(mineAfter.project.revision, mineBefore.project.revision);
      assert.deepEqual(otherAfter, otherBefore);
      assert.equal(await balanceOf(service, user.token), CREDITS - 3 * TURN);
    }));
});
