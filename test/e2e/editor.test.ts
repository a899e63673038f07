// The video editor's agent turns end to end, and the validation of projects and turns (docs/editor.md,
// docs/errors.md): the service as a process with the builtin director and the sandbox provider
// (short timings), real HTTP, real renders.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, adminClient, type RunningService } from '../helpers/service.ts';
import {
  accountClient,
  checkTurnAnswer,
  editorClient,
  editorUser,
  videoTrack,
  type Asset,
  type EditorEvent,
  type ThreadMessage,
} from '../helpers/editor.ts';

const STORYBOARD = 'a 3-scene video about a lighthouse at dawn';
const TURN_CREDITS = 5;
const DB = 'editor_turns';

describe('editor agent turns and validation', () => {
  let mongo: TestMongo;
  let service: RunningService;

  before(async () => {
    mongo = await startMongo();
    service = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: DB,
      SANDBOX_VIDEO_MS: '300',
      SANDBOX_IMAGE_MS: '200',
      PROVIDER_POLL_INTERVAL_MS: '200',
      PROVIDER_TIMEOUT_MS: '60000',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  /** A fresh editor user with its clients and a new project (9:16). */
  async function setUp(credits = 100_000) {
    const user = await editorUser(service, { credits });
    const editor = editorClient(() => service, user.token);
    const account = accountClient(() => service, user.token);
    const project = await editor.createProject({ name: 'Lighthouse' });
    const state = await editor.state(project.id);
    return { user, editor, account, project, videoId: state.body.videos[0]!.id };
  }

  const ledger = async (userId: string) =>
    (
      await adminClient(service).call<{ entries: { delta: number; reason: string; job_id?: string }[] }>(
        'GET',
        `/users/${userId}/ledger`,
      )
    ).body.entries;

  /**
   * The project's stored event history, read from MongoDB: there is no events endpoint to read it through
   * yet (this file does not open the events WebSocket), and a failed turn's events reach no HTTP answer.
   */
  async function storedEvents(projectId: string): Promise<EditorEvent[]> {
    const client = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
    try {
      const buckets = await client
        .db(DB)
        .collection<{ events: EditorEvent[] }>('project_event_buckets')
        .find({ project_id: projectId })
        .toArray();
      return buckets.flatMap((bucket) => bucket.events).sort((a, b) => a.seq - b.seq);
    } finally {
      await client.close();
    }
  }

  it('plans a 3-scene storyboard, then generates one scene per "continue" turn until 3 video clips, charging 5 per turn plus each job', async () => {
    const { user, editor, account, project, videoId } = await setUp();
    const startBalance = await account.balance();
    const turns: { turnId: string; instruction: string; reply: string }[] = [];
    const seqs: number[] = [];
    let charged = 0;

    // The storyboard turn: context only, no media.
    const plan = await editor.instruct(project.id, { instruction: STORYBOARD });
    const planned = checkTurnAnswer(plan, project.id);
    assert.equal(plan.body.context_appended, true);
    assert.equal(plan.body.media_gen_done, false);
    assert.deepEqual([plan.body.assets_created, plan.body.clips_created], [[], []]);
    assert.equal(plan.body.aspect_ratio_changed, null);
    assert.equal(planned.mediaStarted.length, 0);
    assert.equal(planned.creditsCharged, TURN_CREDITS);
    assert.ok(plan.body.agent_events.some((event) => event.type === 'context.appended'));
    assert.deepEqual(await account.jobs(), [], 'a storyboard makes no job');
    charged += TURN_CREDITS;
    assert.equal(await account.balance(), startBalance - charged);
    seqs.push(...plan.body.agent_events.map((event) => event.seq));
    turns.push({ turnId: planned.turnId, instruction: STORYBOARD, reply: plan.body.assistant_text });

    const afterPlan = await editor.state(project.id);
    const context = afterPlan.body.project.context_md;
    assert.match(context, /Storyboard: a lighthouse at dawn/);
    const scenes = [...context.matchAll(/^\d+\. (.+)$/gm)].map((match) => match[1]!);
    assert.equal(scenes.length, 3, context);

    for (let scene = 1; scene <= 3; scene++) {
      const jobsBefore = (await account.jobs()).length;
      const turn = await editor.instruct(project.id, { instruction: 'continue' });
      const checked = checkTurnAnswer(turn, project.id);
      const { body } = turn;
      assert.equal(body.media_gen_done, true, `scene ${scene}: ${body.assistant_text}`);
      assert.equal(body.context_appended, false);
      assert.equal(body.aspect_ratio_changed, null);
      assert.equal(checked.mediaStarted.length, 1, 'exactly one media generation');
      const jobs = await account.jobs();
      assert.equal(jobs.length, jobsBefore + 1, 'one job per continue turn');
      const job = jobs[0]!;
      assert.equal(job.status, 'completed');
      const started = checked.mediaStarted[0]!.data;
      assert.equal(started.job_id, job.job_id);
      assert.equal(started.kind, 'video');
      assert.equal(started.credits, job.credits_consumed);
      assert.ok(job.credits_consumed > 0);
      assert.ok(
        body.agent_events.some(
          (event) => event.type === 'media.completed' && event.data.job_id === job.job_id,
        ),
      );
      assert.equal(checked.creditsCharged, TURN_CREDITS + job.credits_consumed);

      assert.equal(body.assets_created.length, 1);
      const asset = body.assets_created[0]!;
      assert.deepEqual([asset.kind, asset.source], ['video', 'agent_generate']);
      assert.equal(asset.metadata.prompt, scenes[scene - 1], 'scene n is generated from storyboard line n');
      assert.equal(body.clips_created.length, 1);
      const clip = body.clips_created[0]!;
      assert.deepEqual(
        [clip.track, clip.idx, clip.asset_id, clip.video_id],
        ['video', scene - 1, asset.id, videoId],
      );

      charged += TURN_CREDITS + job.credits_consumed;
      assert.equal(await account.balance(), startBalance - charged, `balance after scene ${scene}`);
      turns.push({ turnId: checked.turnId, instruction: 'continue', reply: body.assistant_text });
      seqs.push(...body.agent_events.map((event) => event.seq));

      // Revisions on the turn's events end at the project's revision.
      const state = await editor.state(project.id);
      const revisions = body.agent_events
        .map((event) => event.data.revision)
        .filter((revision): revision is number => typeof revision === 'number');
      assert.ok(revisions.length >= 2, 'asset.created and clip.created carry revisions');
      assert.equal(revisions.at(-1), state.body.project.revision);
    }

    // Nothing else happened in the project: its seqs run 1..n over the turns without a gap.
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i + 1),
    );

    // The state: three video clips idx 0..2, each on a generated asset whose URL downloads as mp4.
    const state = await editor.state(project.id);
    assert.equal(state.status, 200);
    const clips = videoTrack(state.body);
    assert.deepEqual(
      clips.map((clip) => clip.idx),
      [0, 1, 2],
    );
    assert.equal(state.body.clips.length, 3, 'no clip on another track');
    for (const [i, clip] of clips.entries()) {
      const asset = state.body.assets.find((one) => one.id === clip.asset_id) as Asset;
      assert.ok(asset, `clip ${clip.id} points at a library asset`);
      assert.deepEqual([asset.kind, asset.source], ['video', 'agent_generate']);
      assert.equal(asset.metadata.prompt, scenes[i]);
      assert.equal(typeof asset.metadata.model, 'string');
      assert.ok((asset.metadata.model as string).length > 0);
      const media = await fetch(asset.url);
      assert.equal(media.status, 200, asset.url);
      assert.equal(media.headers.get('content-type'), 'video/mp4');
      assert.ok((await media.arrayBuffer()).byteLength > 1000);
    }
    assert.equal(state.body.project.context_md, context, 'continue turns leave the storyboard as it was');

    // The ledger: one -5 entry per turn and each job's charge, nothing else since the grant.
    const jobs = await account.jobs();
    const entries = (await ledger(user.userId)).filter((entry) => entry.delta < 0);
    assert.equal(entries.filter((entry) => entry.delta === -TURN_CREDITS).length, 4, JSON.stringify(entries));
    assert.equal(
      -entries.reduce((sum, entry) => sum + entry.delta, 0),
      4 * TURN_CREDITS + jobs.reduce((sum, job) => sum + job.credits_consumed, 0),
    );
    for (const job of jobs) {
      assert.ok(
        entries.some((entry) => entry.job_id === job.job_id && entry.delta === -job.credits_consumed),
        `the ledger holds the charge of ${job.job_id}`,
      );
    }

    // The thread: user then assistant for each turn, in order, with the turn's id.
    const thread = await editor.messages(project.id, videoId);
    assert.equal(thread.status, 200);
    const messages = thread.body.messages as ThreadMessage[];
    assert.deepEqual(
      messages.map((message) => [message.role, message.turn_id, message.text]),
      turns.flatMap((turn) => [
        ['user', turn.turnId, turn.instruction],
        ['assistant', turn.turnId, turn.reply],
      ]),
    );

    // A fourth "continue" has nothing left to generate: it says so, charges 5 and makes no job.
    const done = await editor.instruct(project.id, { instruction: 'continue' });
    const checkedDone = checkTurnAnswer(done, project.id);
    assert.equal(done.body.media_gen_done, false);
    assert.equal(checkedDone.mediaStarted.length, 0);
    assert.equal((await account.jobs()).length, 3);
    assert.equal(await account.balance(), startBalance - charged - TURN_CREDITS);
  });

  it('reports a scene whose job fails ([sandbox:fail]): 200, media.started then media.failed with the full refund, no clip, 5 credits', async () => {
    const { editor, account, project } = await setUp();
    const plan = await editor.instruct(project.id, {
      instruction: 'a 3-scene video about a lighthouse [sandbox:fail]',
    });
    checkTurnAnswer(plan, project.id);
    const balance = await account.balance();

    const turn = await editor.instruct(project.id, { instruction: 'continue' });
    const checked = checkTurnAnswer(turn, project.id);
    assert.equal(turn.body.media_gen_done, false);
    assert.deepEqual([turn.body.assets_created, turn.body.clips_created], [[], []]);
    assert.match(turn.body.assistant_text, /failed/i);
    const media = turn.body.agent_events.filter((event) => event.type.startsWith('media.'));
    assert.deepEqual(
      media.map((event) => event.type).filter((type) => type !== 'media.progress'),
      ['media.started', 'media.failed'],
    );
    const jobs = await account.jobs();
    assert.equal(jobs.length, 1);
    const job = jobs[0]!;
    assert.equal(job.status, 'failed');
    assert.ok(job.credits_consumed > 0);
    assert.equal(job.refunded_credits, job.credits_consumed);
    const failed = media.find((event) => event.type === 'media.failed')!;
    assert.equal(failed.data.job_id, job.job_id);
    assert.equal(failed.data.refunded_credits, job.credits_consumed);
    assert.equal(typeof failed.data.error, 'string');
    assert.equal(checked.mediaStarted[0]!.data.credits, job.credits_consumed);
    assert.equal(checked.creditsCharged, TURN_CREDITS, 'a refunded generation is not charged');
    assert.equal(await account.balance(), balance - TURN_CREDITS, 'the balance moved by exactly 5');
    const state = await editor.state(project.id);
    assert.deepEqual(state.body.clips, [], 'no clip was added');
  });

  it('answers 402 with the video price when it does not fit, keeps the 5 credits of that turn, adds no clip, and a later turn works', async () => {
    const { editor, account, project, videoId } = await setUp(20);
    const plan = await editor.instruct(project.id, { instruction: STORYBOARD });
    checkTurnAnswer(plan, project.id);
    assert.equal(await account.balance(), 15);
    const revision = (await editor.state(project.id)).body.project.revision;

    const turn = await editor.instruct(project.id, { instruction: 'continue' });
    assert.equal(turn.status, 402, JSON.stringify(turn.body));
    assert.deepEqual(Object.keys(turn.body).sort(), ['credits_remaining', 'credits_required', 'error']);
    assert.equal(typeof turn.body.error, 'string');
    // The builtin director's scene: 5 s at 480p (101 credits per second, docs/api.md, Pricing).
    assert.equal(turn.body.credits_required, 5 * 101);
    assert.equal(turn.body.credits_remaining, 10);
    assert.equal(await account.balance(), 20 - 2 * TURN_CREDITS, 'the turn keeps its 5 credits');
    assert.deepEqual(await account.jobs(), [], 'no job was made');

    const state = await editor.state(project.id);
    assert.deepEqual([state.body.clips, state.body.assets], [[], []]);
    assert.equal(state.body.project.revision, revision);
    const thread = (await editor.messages(project.id, videoId)).body.messages as ThreadMessage[];
    assert.deepEqual(
      thread.map((message) => [message.role, message.text]),
      [
        ['user', STORYBOARD],
        ['assistant', plan.body.assistant_text],
        ['user', 'continue'],
      ],
      'the failed turn keeps its user message and has no reply',
    );
    const failedTurnId = thread[2]!.turn_id;
    assert.notEqual(failedTurnId, thread[0]!.turn_id);
    const history = (await storedEvents(project.id)).filter((event) => event.turn_id === failedTurnId);
    assert.equal(history[0]?.type, 'turn.started', JSON.stringify(history));
    const ended = history.at(-1)!;
    assert.equal(ended.type, 'turn.failed', JSON.stringify(history));
    assert.equal(ended.data.status, 402);
    assert.equal(typeof ended.data.error, 'string');
    assert.ok(!history.some((event) => event.type === 'media.started'), 'no media was started');

    // A turn after it runs normally (its events start right after the failed turn's).
    const next = await editor.instruct(project.id, { instruction: 'make it 16:9' });
    checkTurnAnswer(next, project.id);
    assert.deepEqual(next.body.aspect_ratio_changed, { video_id: videoId, from: '9:16', to: '16:9' });
    assert.equal(await account.balance(), 5);

    // Below 5 credits: 402 for the turn itself, nothing charged, nothing recorded.
    const poor = await setUp(4);
    const refused = await poor.editor.instruct(poor.project.id, { instruction: STORYBOARD });
    assert.deepEqual(
      [refused.status, refused.body],
      [402, { error: refused.body.error, credits_required: 5, credits_remaining: 4 }],
    );
    assert.equal(typeof refused.body.error, 'string');
    assert.equal(await poor.account.balance(), 4);
    const poorThread = await poor.editor.messages(poor.project.id, poor.videoId);
    assert.deepEqual(poorThread.body.messages, []);
    assert.equal((await poor.editor.state(poor.project.id)).body.project.context_md, '');
  });

  it('checks project and instruct bodies with the documented messages word for word, and charges nothing for them', async () => {
    const user = await editorUser(service);
    const editor = editorClient(() => service, user.token);
    const account = accountClient(() => service, user.token);
    const projectCases: [unknown, string][] = [
      [{ name: '' }, 'name must be 1 to 120 characters'],
      [{ name: 'x'.repeat(121) }, 'name must be 1 to 120 characters'],
      [{ name: 7 }, 'name must be 1 to 120 characters'],
      [{ description: 'x'.repeat(1001) }, 'description must be at most 1000 characters'],
      [{ aspect_ratio: '3:4' }, 'aspect_ratio must be one of 9:16, 1:1, 4:5, 16:9, 4:3'],
      [{ name: '', aspect_ratio: '3:4' }, 'name must be 1 to 120 characters'],
    ];
    for (const [body, error] of projectCases) {
      const answer = await editor.send('POST', '', { body });
      assert.deepEqual([answer.status, answer.body], [400, { error }], JSON.stringify(body));
    }
    const badJson = { rawBody: '{"name":', headers: { 'content-type': 'application/json' } };
    const invalid = await editor.send('POST', '', badJson);
    assert.deepEqual([invalid.status, invalid.body], [400, { error: 'Invalid JSON body' }]);
    assert.deepEqual((await editor.send('GET', '')).body, { projects: [] }, 'no project was created');

    const edge = await editor.createProject({
      name: 'x'.repeat(120),
      description: 'd'.repeat(1000),
      aspect_ratio: '4:3',
    });
    assert.deepEqual([edge.name.length, edge.aspect_ratio], [120, '4:3']);

    const instructCases: [unknown, string][] = [
      [{}, 'instruction is required (non-empty string) unless image_urls is given'],
      [{ instruction: '' }, 'instruction is required (non-empty string) unless image_urls is given'],
      [
        { instruction: '', image_urls: [] },
        'instruction is required (non-empty string) unless image_urls is given',
      ],
      [{ instruction: 'x'.repeat(8001) }, 'instruction too long (max 8000 chars)'],
      [
        { instruction: 'hi', image_urls: 'https://x.test/a.png' },
        'image_urls must be an array of at most 10 https URLs',
      ],
      [
        { instruction: 'hi', image_urls: Array.from({ length: 11 }, (_, i) => `https://x.test/${i}.png`) },
        'image_urls must be an array of at most 10 https URLs',
      ],
      [
        { instruction: 'hi', image_urls: ['http://x.test/a.png'] },
        'image_urls must be an array of at most 10 https URLs',
      ],
      [
        { instruction: 'hi', image_urls: ['not a url'] },
        'image_urls must be an array of at most 10 https URLs',
      ],
    ];
    for (const [body, error] of instructCases) {
      const answer = await editor.send('POST', `/${edge.id}/instruct`, { body });
      assert.deepEqual([answer.status, answer.body], [400, { error }], JSON.stringify(body).slice(0, 200));
    }
    const badInstruct = await editor.send('POST', `/${edge.id}/instruct`, badJson);
    assert.deepEqual([badInstruct.status, badInstruct.body], [400, { error: 'Invalid JSON body' }]);

    assert.equal(await account.balance(), 100_000, 'refused turns charge nothing');
    const state = await editor.state(edge.id);
    const thread = await editor.messages(edge.id, state.body.videos[0]!.id);
    assert.deepEqual(thread.body.messages, [], 'refused turns leave no message');
  });
});
