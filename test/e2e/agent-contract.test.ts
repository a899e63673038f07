// One contract for both agent adapters (docs/editor.md, Agent turns): the same cases and the
// same assertions run against the builtin director (AGENT=builtin) and the LLM agent (AGENT=llm) talking to the
// fake Chat Completions server playing `director()` (test/fakes/llm-scripts.ts), which understands the same
// phrases. Each adapter gets its own service process (one jongodb, one database each) and drives one
// conversation through its cases in order; a last suite compares the two runs' outcomes.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, type ApiAnswer, type RunningService } from '../helpers/service.ts';
import {
  balanceOf,
  checkTurnAnswer,
  editorClient,
  editorUser,
  ledgerOf,
  makeMedia,
  videoTrack,
  withServiceLogs,
  type Clip,
  type EditorEvent,
  type InstructAnswer,
  type ProjectState,
  type ThreadMessage,
} from '../helpers/editor.ts';
import { openEventsSocket } from '../helpers/events-socket.ts';
import { startFakeLlm, type FakeLlm } from '../fakes/llm-server.ts';
import { director } from '../fakes/llm-scripts.ts';

const CREDITS = 100_000;
const TURN = 5;
/** Both directors generate each scene as a 5-second standard video at 480p: 5 × 101 (docs/api.md, Pricing). */
const SCENE_SECONDS = 5;
const SCENE_CREDITS = 505;
const STORYBOARD = 'a 3-scene video about a lighthouse at dawn';
const TRACKS = ['video', 'voice', 'sfx', 'music'] as const;
const CASE_TIMEOUT_MS = 90_000;

/** The sandbox's short timings, shared by both adapters' services. */
const SANDBOX_ENV = {
  SANDBOX_VIDEO_MS: '300',
  SANDBOX_IMAGE_MS: '200',
  PROVIDER_POLL_INTERVAL_MS: '200',
  PROVIDER_TIMEOUT_MS: '60000',
  RATE_LIMIT_PER_MINUTE: '100000',
};

/** A service running one adapter, and how to stop what was started for it. */
interface AgentService {
  service: RunningService;
  stop(): Promise<void>;
}

type StartAgentService = (mongoUri: string, db: string) => Promise<AgentService>;

/** What one adapter's run ended with, compared across adapters by the last suite. */
interface RunSummary {
  clipsPerTrack: Record<string, number>;
  /** durations of the final video track's clips (seconds, rounded to 0.1), in order */
  videoDurations: number[];
  /** `credits_charged` of each turn, in order */
  creditsPerTurn: number[];
  /** the ledger's movements after the grant: total charged */
  totalCharged: number;
}

const summaries = new Map<string, RunSummary>();

// One jongodb for the file: each adapter's service uses its own database.
let mongo: Promise<TestMongo> | undefined;
const sharedMongo = () => (mongo ??= startMongo());
after(async () => {
  await (await mongo)?.stop();
});

const ofType = (events: EditorEvent[], type: string) => events.filter((event) => event.type === type);
const round1 = (value: number) => Math.round(value * 10) / 10;

/** One instruct turn as the suite saw it. */
interface Turn {
  instruction: string;
  answer: ApiAnswer<InstructAnswer>;
  turnId: string;
  creditsCharged: number;
}

function agentContract(name: string, startAgentService: StartAgentService): void {
  describe(`agent contract: ${name}`, () => {
    let running: AgentService | undefined;
    const service = () => running!.service;
    // The conversation every case continues.
    let user: Awaited<ReturnType<typeof editorUser>>;
    let editor: ReturnType<typeof editorClient>;
    let projectId: string;
    let videoId: string;
    const turns: Turn[] = [];

    before(async () => {
      running = await startAgentService((await sharedMongo()).uri, `agent_contract_${name}`);
      user = await editorUser(service(), { credits: CREDITS });
      editor = editorClient(service, user.token);
      const project = await editor.createProject({ name: 'Lighthouse' });
      projectId = project.id;
      videoId = (await stateOf(projectId)).videos[0]!.id;
    });
    after(async () => {
      await running?.stop();
    });

    // The cases continue one conversation: once one fails, those that need the conversation where it
    // expects are skipped (the comparison then fails for want of a summary) rather than failing confusingly.
    let broken: string | undefined;
    function step(title: string, options: { needsEarlier: boolean }, body: () => Promise<void>): void {
      it(title, { timeout: CASE_TIMEOUT_MS }, async (t) => {
        if (broken !== undefined && options.needsEarlier) return t.skip(`an earlier case failed: ${broken}`);
        try {
          await withServiceLogs(() => [running?.service], body);
        } catch (error) {
          broken ??= title;
          throw error;
        }
      });
    }

    async function stateOf(id: string): Promise<ProjectState> {
      const answer = await editor.state(id);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return answer.body;
    }

    /** One turn: a 200 that passes `checkTurnAnswer`, kept for the thread and event cases. */
    async function instruct(instruction: string): Promise<Turn> {
      const answer = await editor.instruct(projectId, { instruction });
      const { turnId, creditsCharged } = checkTurnAnswer(answer, projectId);
      const turn = { instruction, answer, turnId, creditsCharged };
      turns.push(turn);
      return turn;
    }

    /** The credit movements after the grant, oldest first. */
    async function movements(): Promise<{ delta: number; reason: string; job_id?: string }[]> {
      const entries = (await ledgerOf(service(), user.userId)).slice().reverse();
      assert.equal(entries[0]?.delta, CREDITS, `the first entry is the grant: ${JSON.stringify(entries)}`);
      return entries
        .slice(1)
        .map((entry) => ({ delta: entry.delta, reason: entry.reason, job_id: entry.job_id }));
    }

    step(
      `builds the timeline: "${STORYBOARD}", then 3 × "continue", one 5 s scene and one clip per turn`,
      { needsEarlier: true },
      async () => {
        const plan = await instruct(STORYBOARD);
        assert.equal(plan.answer.body.context_appended, true, plan.answer.body.assistant_text);
        assert.equal(plan.answer.body.media_gen_done, false);
        assert.deepEqual([plan.answer.body.assets_created, plan.answer.body.clips_created], [[], []]);
        assert.equal(plan.creditsCharged, TURN);
        assert.equal(ofType(plan.answer.body.agent_events, 'context.appended').length, 1);
        const planned = await stateOf(projectId);
        assert.match(planned.project.context_md, /^#{1,6} Storyboard: a lighthouse at dawn$/m);
        const scenes = [...planned.project.context_md.matchAll(/^\d+\. (.+)$/gm)].map((match) => match[1]);
        assert.equal(scenes.length, 3, planned.project.context_md);
        assert.deepEqual(planned.clips, [], 'a plan places nothing');

        const placed: Clip[] = [];
        for (let scene = 0; scene < 3; scene++) {
          const turn = await instruct('continue');
          const body = turn.answer.body;
          assert.equal(body.media_gen_done, true, `scene ${scene + 1}: ${body.assistant_text}`);
          assert.equal(body.context_appended, false);
          assert.equal(turn.creditsCharged, TURN + SCENE_CREDITS);
          const media = ofType(body.agent_events, 'media.started');
          assert.equal(media.length, 1, 'one media generation');
          assert.deepEqual([media[0]!.data.kind, media[0]!.data.credits], ['video', SCENE_CREDITS]);

          assert.equal(body.assets_created.length, 1, 'exactly one asset');
          const asset = body.assets_created[0]!;
          assert.deepEqual([asset.kind, asset.source], ['video', 'agent_generate']);
          const seconds = Number(asset.metadata.duration_sec);
          assert.ok(Math.abs(seconds - SCENE_SECONDS) < 0.5, `a ${SCENE_SECONDS} s scene: ${seconds}`);
          const completed = ofType(body.agent_events, 'media.completed');
          assert.deepEqual(
            completed.map((event) => [event.data.job_id, event.data.asset_id]),
            [[media[0]!.data.job_id, asset.id]],
          );

          assert.equal(body.clips_created.length, 1, 'exactly one clip');
          const clip = body.clips_created[0]!;
          assert.deepEqual(
            [clip.track, clip.idx, clip.asset_id, clip.video_id],
            ['video', scene, asset.id, videoId],
            'the clip goes on the video track at the next idx',
          );
          placed.push(clip);
          const state = await stateOf(projectId);
          assert.deepEqual(
            videoTrack(state).map((one) => [one.id, one.idx]),
            placed.map((one, idx) => [one.id, idx]),
          );
        }

        const state = await stateOf(projectId);
        assert.deepEqual(
          videoTrack(state).map((clip) => clip.idx),
          [0, 1, 2],
        );
        assert.equal(state.clips.length, 3, 'no clip on another track');
        assert.equal(state.assets.length, 3);

        const moves = await movements();
        assert.deepEqual(
          moves.filter((move) => move.reason === 'agent_turn').map((move) => move.delta),
          [-TURN, -TURN, -TURN, -TURN],
          JSON.stringify(moves),
        );
        const charges = moves.filter((move) => move.reason !== 'agent_turn');
        assert.deepEqual(
          charges.map((move) => [move.reason, move.delta]),
          [
            ['job', -SCENE_CREDITS],
            ['job', -SCENE_CREDITS],
            ['job', -SCENE_CREDITS],
          ],
          JSON.stringify(moves),
        );
        assert.equal(await balanceOf(service(), user.token), CREDITS - 4 * TURN - 3 * SCENE_CREDITS);
      },
    );

    step(
      '"use <asset of another project> as music": 200, a failed add_clip, no clip, only the 5 charged',
      { needsEarlier: true },
      async () => {
        const other = await editor.createProject({ name: 'Other' });
        const upload = await editor.upload(other.id, makeMedia('wav'), 'audio/wav');
        assert.equal(upload.status, 200, JSON.stringify(upload.body));
        const foreign = upload.body.asset.id;
        const [mineBefore, otherBefore] = [await stateOf(projectId), await stateOf(other.id)];
        const movesBefore = (await movements()).length;

        const turn = await instruct(`use ${foreign} as music`);
        const body = turn.answer.body;
        const started = ofType(body.agent_events, 'tool.started').filter(
          (event) => event.data.name === 'add_clip',
        );
        assert.ok(started.length >= 1, 'the agent tried add_clip');
        for (const event of started) {
          const args = event.data.arguments as { asset_id?: unknown; track?: unknown };
          assert.deepEqual([args.track, args.asset_id], ['music', foreign]);
        }
        const finished = ofType(body.agent_events, 'tool.finished').filter(
          (event) => event.data.name === 'add_clip',
        );
        assert.ok(finished.length >= 1);
        for (const event of finished) {
          assert.equal(event.data.ok, false, 'ids of the project only');
          assert.match(String(event.data.summary), /not found/i);
        }
        assert.deepEqual([body.clips_created, body.assets_created], [[], []]);
        assert.equal(ofType(body.agent_events, 'clip.created').length, 0);
        assert.equal(turn.creditsCharged, TURN);

        const [mineAfter, otherAfter] = [await stateOf(projectId), await stateOf(other.id)];
        assert.deepEqual(mineAfter.clips, mineBefore.clips, 'no clip created');
        assert.equal(mineAfter.project.revision, mineBefore.project.revision);
        assert.deepEqual(otherAfter, otherBefore);
        assert.deepEqual(
          (await movements()).slice(movesBefore).map((move) => [move.reason, move.delta]),
          [['agent_turn', -TURN]],
        );
      },
    );

    step('"remove clip 2": clip.removed, the video track closes up', { needsEarlier: true }, async () => {
      const before = videoTrack(await stateOf(projectId));
      assert.equal(before.length, 3);
      const movesBefore = (await movements()).length;

      const turn = await instruct('remove clip 2');
      const body = turn.answer.body;
      assert.deepEqual(
        ofType(body.agent_events, 'clip.removed').map((event) => event.data.clip_id),
        [before[1]!.id],
      );
      assert.deepEqual([body.clips_created, body.assets_created], [[], []]);
      assert.equal(body.media_gen_done, false);
      assert.equal(turn.creditsCharged, TURN);

      const state = await stateOf(projectId);
      assert.deepEqual(
        videoTrack(state).map((clip) => [clip.id, clip.idx]),
        [
          [before[0]!.id, 0],
          [before[2]!.id, 1],
        ],
      );
      assert.equal(state.clips.length, 2);
      assert.deepEqual(
        (await movements()).slice(movesBefore).map((move) => [move.reason, move.delta]),
        [['agent_turn', -TURN]],
      );
    });

    step(
      'every turn: a reply ending with "?", ordered events, deltas make the reply, paired tools',
      { needsEarlier: false },
      async () => {
        if (broken === undefined) assert.equal(turns.length, 6, 'the turns of the cases above');
        for (const turn of turns) {
          const where = `${name}, "${turn.instruction}"`;
          checkTurnAnswer(turn.answer, projectId);
          const { assistant_text: text, agent_events: events } = turn.answer.body;
          assert.match(text, /\?\s*$/, where);
          assert.equal(events[0]!.type, 'turn.started', where);
          assert.deepEqual(
            [events[0]!.data.instruction, events[0]!.data.image_urls],
            [turn.instruction, []],
            where,
          );
          assert.equal(events.at(-1)!.type, 'turn.completed', where);
          assert.equal(ofType(events, 'turn.started').length, 1, where);
          assert.equal(ofType(events, 'turn.completed').length, 1, where);
          assert.equal(ofType(events, 'turn.failed').length, 0, where);

          const deltas = ofType(events, 'assistant.delta');
          assert.ok(deltas.length >= 1, `${where}: the reply comes as assistant.delta`);
          assert.equal(deltas.map((event) => String(event.data.text)).join(''), text, where);

          const started = events.flatMap((event, at) =>
            event.type === 'tool.started' ? [{ event, at }] : [],
          );
          const finished = events.flatMap((event, at) =>
            event.type === 'tool.finished' ? [{ event, at }] : [],
          );
          assert.equal(started.length, finished.length, `${where}: every tool.started has its tool.finished`);
          assert.equal(new Set(started.map(({ event }) => event.data.call_id)).size, started.length, where);
          for (const start of started) {
            const ends = finished.filter(({ event }) => event.data.call_id === start.event.data.call_id);
            assert.equal(
              ends.length,
              1,
              `${where}: one tool.finished for ${String(start.event.data.call_id)}`,
            );
            assert.equal(ends[0]!.event.data.name, start.event.data.name, where);
            assert.equal(typeof start.event.data.arguments, 'object', where);
            assert.ok(ends[0]!.at > start.at, `${where}: tool.finished follows its tool.started`);
            assert.equal(typeof ends[0]!.event.data.ok, 'boolean', where);
          }
          assert.ok(ofType(events, 'media.started').length <= 1, `${where}: at most one media.started`);
        }
      },
    );

    step(
      'the events socket replays each turn as its answer held it, seq without gaps',
      { needsEarlier: false },
      async () => {
        assert.ok(turns.length > 0, 'a turn to replay');
        const answered = turns.flatMap((turn) => turn.answer.body.agent_events);
        const socket = await openEventsSocket(service().url, projectId, { token: user.token, since: 0 });
        try {
          const history = await socket.waitForSeq(answered.at(-1)!.seq);
          const turnIds = new Set(turns.map((turn) => turn.turnId));
          assert.deepEqual(
            history.filter((event) => event.turn_id !== null && turnIds.has(event.turn_id)),
            answered,
          );
          assert.deepEqual(
            history.map((event) => event.seq),
            history.map((_, at) => at + 1),
          );
        } finally {
          await socket.close();
        }
      },
    );

    step(
      'the thread holds user/assistant pairs in order with the replies',
      { needsEarlier: false },
      async () => {
        const answer = await editor.messages(projectId, videoId);
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        const messages = answer.body.messages as ThreadMessage[];
        assert.deepEqual(
          messages.map((message) => [message.role, message.text, message.turn_id]),
          turns.flatMap((turn) => [
            ['user', turn.instruction, turn.turnId],
            ['assistant', turn.answer.body.assistant_text, turn.turnId],
          ]),
        );
        const times = messages.map((message) => Date.parse(message.created_at));
        assert.deepEqual(
          times,
          [...times].sort((a, b) => a - b),
          'oldest first',
        );
      },
    );

    step('records the final timeline', { needsEarlier: true }, async () => {
      const state = await stateOf(projectId);
      const durationOf = (clip: Clip) => {
        const asset = state.assets.find((one) => one.id === clip.asset_id);
        return round1(Number(clip.duration_sec ?? asset?.metadata.duration_sec));
      };
      const moves = await movements();
      summaries.set(name, {
        clipsPerTrack: Object.fromEntries(
          TRACKS.map((track) => [track, state.clips.filter((clip) => clip.track === track).length]),
        ),
        videoDurations: videoTrack(state).map(durationOf),
        creditsPerTurn: turns.map((turn) => turn.creditsCharged),
        totalCharged: -moves.reduce((sum, move) => sum + move.delta, 0),
      });
      assert.deepEqual(summaries.get(name)!.creditsPerTurn, [
        TURN,
        TURN + SCENE_CREDITS,
        TURN + SCENE_CREDITS,
        TURN + SCENE_CREDITS,
        TURN,
        TURN,
      ]);
    });
  });
}

agentContract('builtin', async (mongoUri, db) => {
  const service = await startService({ MONGO_URL: mongoUri, MONGO_DB: db, AGENT: 'builtin', ...SANDBOX_ENV });
  return { service, stop: async () => void (await service.stop()) };
});

agentContract('llm', async (mongoUri, db) => {
  const llm: FakeLlm = await startFakeLlm();
  llm.script(director());
  try {
    const service = await startService({
      MONGO_URL: mongoUri,
      MONGO_DB: db,
      AGENT: 'llm',
      LLM_BASE_URL: llm.url,
      LLM_API_KEY: llm.apiKey,
      ...SANDBOX_ENV,
    });
    return {
      service,
      stop: async () => {
        await service.stop();
        await llm.close();
      },
    };
  } catch (error) {
    await llm.close();
    throw error;
  }
});

describe('agent contract: both adapters end alike', () => {
  it('same clips per track, same durations, same credits per turn', () => {
    const builtin = summaries.get('builtin');
    const llm = summaries.get('llm');
    assert.ok(builtin && llm, `both runs recorded a summary: ${[...summaries.keys()].join(', ')}`);
    assert.deepEqual(builtin.clipsPerTrack, { video: 2, voice: 0, sfx: 0, music: 0 });
    assert.deepEqual(llm.clipsPerTrack, builtin.clipsPerTrack);
    assert.deepEqual(llm.videoDurations, builtin.videoDurations);
    assert.deepEqual(llm.creditsPerTurn, builtin.creditsPerTurn);
    assert.equal(llm.totalCharged, builtin.totalCharged);
    assert.equal(builtin.totalCharged, 6 * TURN + 3 * SCENE_CREDITS);
  });
});
