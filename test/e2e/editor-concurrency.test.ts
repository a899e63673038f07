// Agent turns under concurrency (docs/editor.md, Agent turns): the turns of one project run one at a
// time in a queue kept as actor state, a slow turn holds back only its own project (even when every project
// shares one JetStream actor partition), and the queue is bounded (TURN_QUEUE_MAX, then 429 without a charge).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startNats, skipWithoutNats, type TestNats } from '../helpers/nats.ts';
import { call, startService, type ApiAnswer, type RunningService } from '../helpers/service.ts';
import {
  balanceOf,
  editorClient,
  editorUser,
  ledgerOf,
  overlappingSpans,
  turnSpan,
  videoTrack,
  withServiceLogs,
  type InstructAnswer,
} from '../helpers/editor.ts';
import { until } from '../helpers/wait.ts';

/** Fast sandbox media and no per-key rate limit in the way of many concurrent calls. */
const FAST = {
  SANDBOX_VIDEO_MS: '300',
  SANDBOX_IMAGE_MS: '200',
  PROVIDER_POLL_INTERVAL_MS: '100',
  RATE_LIMIT_PER_MINUTE: '100000',
};

interface Timed {
  answer: ApiAnswer<InstructAnswer>;
  /** Milliseconds from the test's reference time to the answer. */
  at: number;
}

/** The user's generation jobs (`GET /api/v1/jobs`), newest first. */
async function jobsOf(service: RunningService, token: string) {
  const answer = await call<{ jobs: { job_id: string; status: string }[] }>(
    service.url,
    'GET',
    '/api/v1/jobs?limit=100',
    { token },
  );
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.jobs;
}

const ok = (answer: ApiAnswer<InstructAnswer>, what: string) =>
  assert.equal(answer.status, 200, `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);

describe('agent turns under concurrency (single node)', () => {
  let mongo: TestMongo;
  let service: RunningService;

  before(async () => {
    mongo = await startMongo();
    service = await startService({ MONGO_URL: mongo.uri, MONGO_DB: 'mf_single', ...FAST });
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  it('runs concurrent instructs on one project one at a time, each seeing the one before', () =>
    withServiceLogs(
      () => [service],
      async () => {
        const { token } = await editorUser(service);
        const editor = editorClient(() => service, token);
        const project = await editor.createProject({ name: 'harbour' });
        const board = await editor.instruct(project.id, {
          instruction: 'a 6-scene video about a harbour at night',
        });
        ok(board, 'storyboard');
        assert.equal(board.body.context_appended, true);

        // Five "continue"s at once, and direct edits in between (they apply at once, also while a turn runs).
        const turns = Array.from({ length: 5 }, () =>
          editor.instruct(project.id, { instruction: 'continue' }),
        );
        const edits = Array.from({ length: 3 }, (_, i) =>
          editor.send('PATCH', `/${project.id}`, { body: { name: `harbour ${i}` } }),
        );
        const answers = await Promise.all(turns);
        for (const edit of await Promise.all(edits))
          assert.equal(edit.status, 200, JSON.stringify(edit.body));
        answers.forEach((answer, i) => ok(answer, `continue ${i}`));

        // No two turns' [turn.started, turn.completed] intervals overlap (the storyboard's included).
        const spans = [board, ...answers].map((answer) => turnSpan(answer.body));
        assert.deepEqual(overlappingSpans(spans), null, `turns interleaved: ${JSON.stringify(spans)}`);
        assert.ok(spans.every((span) => span.outcome === 'turn.completed'));
        assert.equal(new Set(spans.map((span) => span.turnId)).size, spans.length);

        // Each continue generated the next scene and appended it: in the order the turns ran, turn k added clip k.
        const generating = answers.filter((answer) => answer.body.media_gen_done);
        assert.equal(generating.length, 5, 'every continue of a 6-scene storyboard generates a scene');
        const state = await editor.state(project.id);
        assert.equal(state.status, 200);
        const clips = videoTrack(state.body);
        assert.equal(clips.length, generating.length, 'exactly one clip per generation');
        assert.deepEqual(
          clips.map((clip) => clip.idx),
          clips.map((_, i) => i),
          'video track idx 0..n-1',
        );
        assert.equal(new Set(clips.map((clip) => clip.id)).size, clips.length);
        assert.equal(new Set(clips.map((clip) => clip.asset_id)).size, clips.length, 'no asset placed twice');
        const inRunOrder = [...answers].sort((a, b) => turnSpan(a.body).started - turnSpan(b.body).started);
        inRunOrder.forEach((answer, k) => {
          assert.equal(answer.body.clips_created.length, 1);
          assert.equal(answer.body.clips_created[0]!.id, clips[k]!.id, `turn ${k} added clip ${k}`);
        });
        const prompts = new Set(
          state.body.assets
            .filter((asset) => asset.source === 'agent_generate')
            .map((a) => a.metadata.prompt),
        );
        assert.equal(prompts.size, 5, 'five distinct scenes, none generated twice');
      },
    ));

  it('answers 429 with Retry-After and charges nothing once TURN_QUEUE_MAX turns wait', () =>
    withServiceLogs(
      () => [service],
      async () => {
        const { userId, token } = await editorUser(service);
        const editor = editorClient(() => service, token);
        const project = await editor.createProject({ name: 'queue' });
        const board = await editor.instruct(project.id, {
          instruction: 'a 2-scene video about a lighthouse [sandbox:delay=12000]',
        });
        ok(board, 'storyboard');

        const slow = editor.instruct(project.id, { instruction: 'continue' });
        // The slow turn runs once its generation exists.
        await until(
          'the slow turn submits its generation',
          () => jobsOf(service, token),
          (jobs) => jobs.length === 1,
          10_000,
          100,
        );
        const before = await balanceOf(service, token);

        // TURN_QUEUE_MAX (10) turns wait behind it; each is charged once it has its place.
        let settled = 0;
        const queued = Array.from({ length: 10 }, (_, i) =>
          editor.instruct(project.id, { instruction: `a 2-scene video about meadow ${i}` }).then((answer) => {
            settled += 1;
            return answer;
          }),
        );
        await until(
          'ten queued turns charged',
          () => balanceOf(service, token),
          (credits) => credits === before - 10 * 5,
          10_000,
          50,
        );
        assert.equal(settled, 0, 'the queued turns wait for the slow one');
        const entries = (await ledgerOf(service, userId)).length;

        const refused = await editor.instruct(project.id, {
          instruction: 'a 2-scene video about one too many',
        });
        assert.equal(refused.status, 429, JSON.stringify(refused.body));
        assert.equal(typeof refused.body.error, 'string');
        const retryAfter = Number(refused.headers.get('retry-after'));
        assert.ok(
          Number.isInteger(retryAfter) && retryAfter > 0,
          `Retry-After ${refused.headers.get('retry-after')}`,
        );
        assert.ok(
          Number(refused.headers.get('x-ratelimit-remaining')) > 0,
          'the turn queue refused it, not the per-key rate limit',
        );
        assert.equal(await balanceOf(service, token), before - 50, 'the refused instruct charged nothing');
        assert.equal((await ledgerOf(service, userId)).length, entries, 'and wrote no ledger entry');
        assert.equal(settled, 0);

        const slowAnswer = await slow;
        ok(slowAnswer, 'slow continue');
        assert.equal(slowAnswer.body.media_gen_done, true);
        const waited = await Promise.all(queued);
        waited.forEach((answer, i) => ok(answer, `queued ${i}`));
        const slowSpan = turnSpan(slowAnswer.body);
        const spans = waited.map((answer) => turnSpan(answer.body));
        assert.deepEqual(overlappingSpans([slowSpan, ...spans]), null);
        assert.ok(
          spans.every((span) => span.started > slowSpan.ended),
          'every queued turn ran after the slow one',
        );

        // One 5-credit agent_turn charge per turn that ran (storyboard, slow continue, ten queued), no more.
        const ledger = await ledgerOf(service, userId);
        const turnCharges = ledger.filter((entry) => entry.reason === 'agent_turn');
        assert.ok(turnCharges.every((entry) => entry.delta === -5));
        const turnIds = [turnSpan(board.body), slowSpan, ...spans].map((span) => `turn:${span.turnId}`);
        assert.deepEqual(
          turnCharges.map((entry) => entry.op_id).sort(),
          turnIds.sort(),
          `exactly one charge per turn: ${JSON.stringify(ledger)}`,
        );
      },
    ));

  it('gives back the charge of a queued turn whose project is deleted, and answers it 404', () =>
    withServiceLogs(
      () => [service],
      async () => {
        const { userId, token } = await editorUser(service, { credits: 10_000 });
        const api = editorClient(() => service, token);
        const project = await api.createProject({ name: 'deleted while queued' });
        ok(
          await api.instruct(project.id, {
            instruction: 'a 2-scene video about a harbour [sandbox:delay=4000]',
          }),
          'storyboard',
        );
        const slow = api.instruct(project.id, { instruction: 'continue' });
        await until(
          'the slow turn generates',
          async () => (await jobsOf(service, token)).length,
          (n) => n === 1,
        );
        const before = await balanceOf(service, token);
        const queued = api.instruct(project.id, { instruction: 'make it 16:9' });
        await until(
          'the second turn is charged and waits',
          () => balanceOf(service, token),
          (now) => now === before - 5,
        );
        const deleted = await api.send('DELETE', `/${project.id}`);
        assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
        const [slowAnswer, queuedAnswer] = await Promise.all([slow, queued]);
        assert.equal(queuedAnswer.status, 404, JSON.stringify(queuedAnswer.body));
        assert.equal(slowAnswer.status, 404, JSON.stringify(slowAnswer.body));
        const ledger = await ledgerOf(service, userId);
        const refunds = ledger.filter((entry) => entry.reason === 'agent_turn_dropped');
        assert.equal(refunds.length, 1, JSON.stringify(ledger));
        assert.equal(refunds[0]!.delta, 5);
        // The slow turn had begun: its 5 credits stay (spec 7.5.6); its media job goes on and is charged as a job.
        assert.equal(
          await balanceOf(service, token),
          ledger.reduce((sum, entry) => sum + entry.delta, 0),
        );
      },
    ));
});

describe(
  'a slow turn holds back only its own project (cluster, ACTOR_PARTITIONS=1)',
  { skip: skipWithoutNats() },
  () => {
    let mongo: TestMongo;
    let nats: TestNats;
    let service: RunningService;

    before(async () => {
      [mongo, nats] = await Promise.all([startMongo(), startNats()]);
      service = await startService({
        MONGO_URL: mongo.uri,
        MONGO_DB: 'mf_partition',
        NATS_URL: nats.url,
        NODE_ID: 'node-one',
        ACTOR_PARTITIONS: '1', // every project (and user) actor shares one strictly ordered partition
        ...FAST,
      });
    });
    after(async () => {
      await service?.stop();
      await Promise.all([mongo?.stop(), nats?.stop()]);
    });

    it('finishes 19 other projects’ turns while one project’s generation takes 20 s', () =>
      withServiceLogs(
        () => [service],
        async () => {
          const { token } = await editorUser(service);
          const editor = editorClient(() => service, token);
          const slowProject = await editor.createProject({ name: 'slow' });
          ok(
            await editor.instruct(slowProject.id, {
              instruction: 'a 3-scene video about a lighthouse [sandbox:delay=20000]',
            }),
            'slow storyboard',
          );
          const others = await Promise.all(
            Array.from({ length: 19 }, (_, i) => editor.createProject({ name: `other ${i}` })),
          );
          // Five of them get a storyboard first, so their turn below is a (normal-speed) "continue".
          const continuing = others.slice(0, 5);
          for (const [i, project] of continuing.entries()) {
            ok(
              await editor.instruct(project.id, { instruction: `a 2-scene video about a garden ${i}` }),
              'storyboard',
            );
          }

          const started = Date.now();
          const slow = editor
            .instruct(slowProject.id, { instruction: 'continue' })
            .then((answer): Timed => ({ answer, at: Date.now() - started }));
          await until(
            'the slow turn submits its generation',
            () => jobsOf(service, token),
            (jobs) => jobs.length === 1,
            10_000,
            100,
          );
          const fired = Date.now() - started;
          const fast = others.map((project, i) =>
            editor
              .instruct(project.id, {
                instruction: i < continuing.length ? 'continue' : `a 3-scene video about a forest ${i}`,
              })
              .then((answer): Timed => ({ answer, at: Date.now() - started })),
          );
          const fastDone = await Promise.all(fast);
          const slowDone = await slow;

          fastDone.forEach(({ answer }, i) => ok(answer, `project ${i}`));
          fastDone
            .slice(0, continuing.length)
            .forEach(({ answer }, i) =>
              assert.equal(answer.body.media_gen_done, true, `continue ${i} generated its scene`),
            );
          ok(slowDone.answer, 'slow continue');
          assert.equal(slowDone.answer.body.media_gen_done, true);
          assert.ok(slowDone.at >= 20_000, `the slow turn took ${slowDone.at} ms`);
          const latest = Math.max(...fastDone.map(({ at }) => at));
          console.log(
            `slow turn ${slowDone.at} ms; 19 other turns fired at ${fired} ms, all done by ${latest} ms ` +
              `(each ${fastDone.map(({ at }) => at - fired).join(', ')} ms after firing)`,
          );
          assert.ok(latest < slowDone.at, 'all 19 finished before the slow one');
          assert.ok(
            latest - fired < 15_000,
            `the 19 turns took ${latest - fired} ms; a slow generation held them back`,
          );
        },
      ));
  },
);
