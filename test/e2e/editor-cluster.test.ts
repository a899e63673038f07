// Agent turns in cluster mode (docs/editor.md, docs/deploy.md): three service processes on one
// nats-server (JetStream) and one MongoDB. Turns on one project sent to different nodes still run one at a
// time; when the node running a turn is killed with SIGKILL, the turn's lease lapses, it fails (`turn.failed`,
// status 500) and the turn queued on another node runs; credits stay exact and the media the dead turn asked
// for still become an asset of the project. A turn queued by a killed node costs the project one lease.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
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
  type EditorEvent,
  type InstructAnswer,
} from '../helpers/editor.ts';
import { until } from '../helpers/wait.ts';

const TURN_LEASE_MS = 3000;
/** Below the lease: a partition stalled by a message the dead node held resumes before the lease ends. */
const ACTOR_ACK_WAIT_MS = 2000;
const MONGO_DB = 'mf_editor_cluster';

const ok = (answer: ApiAnswer<InstructAnswer>, what: string) =>
  assert.equal(answer.status, 200, `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);

describe('agent turns in cluster mode', { skip: skipWithoutNats() }, () => {
  let mongo: TestMongo;
  let nats: TestNats;
  let db: MongoClient;
  const nodes: RunningService[] = [];

  const startNode = (name: string) =>
    startService({
      MONGO_URL: mongo.uri,
      MONGO_DB,
      NATS_URL: nats.url,
      NODE_ID: name,
      MEDIA_STORE: 'gridfs', // every node reads every file (a job's media are copied into the project)
      SANDBOX_VIDEO_MS: '300',
      SANDBOX_IMAGE_MS: '200',
      PROVIDER_POLL_INTERVAL_MS: '100',
      RATE_LIMIT_PER_MINUTE: '100000',
      TURN_LEASE_MS: String(TURN_LEASE_MS),
      ACTOR_ACK_WAIT_MS: String(ACTOR_ACK_WAIT_MS),
    });

  before(async () => {
    [mongo, nats] = await Promise.all([startMongo(), startNats()]);
    // One at a time: the first creates the streams and consumers the others join.
    for (const name of ['node-a', 'node-b', 'node-c']) nodes.push(await startNode(name));
    db = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
    await db.connect();
  });
  after(async () => {
    await db?.close();
    await Promise.all(nodes.map((node) => node.stop()));
    await Promise.all([mongo?.stop(), nats?.stop()]);
  });

  /** The project's kept events, in seq order, read straight from MongoDB (there is no events endpoint yet). */
  async function storedEvents(projectId: string): Promise<EditorEvent[]> {
    const buckets = await db
      .db(MONGO_DB)
      .collection<{ project_id: string; events: EditorEvent[] }>('project_event_buckets')
      .find({ project_id: projectId })
      .toArray();
    return buckets.flatMap((bucket) => bucket.events).sort((a, b) => a.seq - b.seq);
  }

  it('runs the turns of one project sent to different nodes one at a time', () =>
    withServiceLogs(
      () => nodes,
      async () => {
        const [a, b, c] = nodes as [RunningService, RunningService, RunningService];
        const { token } = await editorUser(a);
        const on = [a, b, c].map((node) => editorClient(() => node, token));
        const project = await on[0]!.createProject({ name: 'harbour' });
        const board = await on[1]!.instruct(project.id, {
          instruction: 'a 6-scene video about a harbour at night',
        });
        ok(board, 'storyboard');

        const answers = await Promise.all(
          Array.from({ length: 6 }, (_, i) => on[i % 3]!.instruct(project.id, { instruction: 'continue' })),
        );
        answers.forEach((answer, i) => ok(answer, `continue ${i} (node ${i % 3})`));
        const spans = [board, ...answers].map((answer) => turnSpan(answer.body));
        assert.deepEqual(overlappingSpans(spans), null, `turns interleaved: ${JSON.stringify(spans)}`);
        assert.ok(
          answers.every((answer) => answer.body.media_gen_done),
          'each continue generated a scene',
        );

        for (const client of on) {
          const state = await client.state(project.id);
          assert.equal(state.status, 200);
          const clips = videoTrack(state.body);
          assert.equal(clips.length, answers.length, 'one clip per generation');
          assert.deepEqual(
            clips.map((clip) => clip.idx),
            clips.map((_, i) => i),
          );
          assert.equal(new Set(clips.map((clip) => clip.id)).size, clips.length);
          assert.equal(
            new Set(clips.map((clip) => clip.asset_id)).size,
            clips.length,
            'no asset placed twice',
          );
          const inRunOrder = [...answers].sort((x, y) => turnSpan(x.body).started - turnSpan(y.body).started);
          inRunOrder.forEach((answer, k) => assert.equal(answer.body.clips_created[0]?.id, clips[k]!.id));
        }
      },
    ));

  it('fails the turn of a killed node within its lease and runs the turn queued on another node', () =>
    withServiceLogs(
      () => nodes,
      async () => {
        const [a, b, victim] = nodes as [RunningService, RunningService, RunningService];
        const { userId, token } = await editorUser(a, { credits: 10_000 });
        const onA = editorClient(() => a, token);
        const onB = editorClient(() => b, token);
        const onVictim = editorClient(() => victim, token);
        const project = await onA.createProject({ name: 'lighthouse' });
        const board = await onA.instruct(project.id, {
          instruction: 'a 2-scene video about a lighthouse [sandbox:delay=8000]',
        });
        ok(board, 'storyboard');

        // The victim runs a slow generation turn...
        const doomed = onVictim.instruct(project.id, { instruction: 'continue' }).then(
          (answer) => ({ answer }),
          (error: unknown) => ({ error }),
        );
        const jobs = await until(
          'the slow turn submits its generation',
          async () =>
            (
              await call<{ jobs: { job_id: string; status: string; credits_consumed: number }[] }>(
                a.url,
                'GET',
                '/api/v1/jobs?limit=10',
                { token },
              )
            ).body.jobs,
          (list) => list.length === 1,
          10_000,
          100,
        );
        const job = jobs[0]!;
        assert.equal(job.status, 'processing');

        // ...while another turn for the same project waits on node B (charged once it has its place).
        const charged = await balanceOf(a, token);
        const queuedAt = Date.now();
        const queued = onB.instruct(project.id, { instruction: 'a 2-scene video about a harbour' });
        await until(
          'the queued turn is charged',
          () => balanceOf(a, token),
          (credits) => credits === charged - 5,
          10_000,
          50,
        );
        const kill = Date.now();
        const killed = await victim.stop('SIGKILL');
        assert.equal(killed.signal, 'SIGKILL');

        const waited = await queued;
        const grantedAfter = Date.now() - kill;
        ok(waited, 'queued turn');
        assert.ok(
          grantedAfter <= TURN_LEASE_MS + 5000,
          `the queued turn completed ${grantedAfter} ms after the kill (lease ${TURN_LEASE_MS} ms)`,
        );
        const outcome = await doomed;
        assert.ok('error' in outcome, `the killed node answered: ${JSON.stringify(outcome)}`);

        // turn.failed (500) for the killed turn, emitted within the lease after the kill, before the queued turn.
        const events = await storedEvents(project.id);
        const doomedStart = events.find(
          (event) => event.type === 'turn.started' && event.data.instruction === 'continue',
        );
        assert.ok(doomedStart, `no turn.started of the killed turn in ${JSON.stringify(events)}`);
        const doomedId = doomedStart.turn_id!;
        const mediaStarted = events.find(
          (event) => event.type === 'media.started' && event.turn_id === doomedId,
        );
        assert.equal(mediaStarted?.data.job_id, job.job_id, 'the slow job is the killed turn’s');
        const ends = events.filter(
          (event) =>
            event.turn_id === doomedId && (event.type === 'turn.failed' || event.type === 'turn.completed'),
        );
        assert.equal(ends.length, 1, JSON.stringify(ends));
        const failure = ends[0]!;
        assert.equal(failure.type, 'turn.failed');
        assert.equal(failure.data.status, 500);
        const failedAfter = Date.parse(failure.ts) - kill;
        console.log(
          `kill → turn.failed ${failedAfter} ms; kill → queued turn answered ${grantedAfter} ms ` +
            `(queued ${kill - queuedAt} ms before the kill)`,
        );
        assert.ok(
          failedAfter >= 0 && failedAfter <= TURN_LEASE_MS + 1500,
          `turn.failed ${failedAfter} ms after the kill (lease ${TURN_LEASE_MS} ms)`,
        );
        const queuedSpan = turnSpan(waited.body);
        assert.ok(queuedSpan.started > failure.seq, 'the queued turn started after the killed one failed');
        assert.equal(
          events.filter((event) => event.turn_id === doomedId && event.seq > failure.seq).length,
          0,
          'nothing of the killed turn after its failure',
        );

        // The generation finishes on a surviving node (MF_JOBS is shared) and its media become a project asset.
        const assetId = `va_${job.job_id.replace(/^job_/, '')}`;
        const state = await until(
          'the killed turn’s media become an asset',
          async () => (await onA.state(project.id)).body,
          (body) => body.assets.some((asset) => asset.id === assetId),
          60_000,
          250,
        );
        const asset = state.assets.find((one) => one.id === assetId)!;
        assert.equal(asset.source, 'agent_generate');
        assert.equal(asset.kind, 'video');
        assert.equal(videoTrack(state).length, 0, 'the killed turn placed no clip');
        const finalJob = await call<{ status: string; refunded_credits: number }>(
          a.url,
          'GET',
          `/api/v1/jobs/${job.job_id}`,
          { token },
        );
        assert.equal(finalJob.body.status, 'completed', JSON.stringify(finalJob.body));

        // A later turn on a survivor places one clip of the newest storyboard; nothing is duplicated.
        const next = await onB.instruct(project.id, { instruction: 'continue' });
        ok(next, 'continue after the failure');
        assert.equal(next.body.media_gen_done, true);
        const after = (await onA.state(project.id)).body;
        const clips = videoTrack(after);
        assert.deepEqual(
          clips.map((clip) => [clip.idx, clip.asset_id]),
          [[0, next.body.clips_created[0]!.asset_id]],
        );
        assert.notEqual(clips[0]!.asset_id, assetId);
        assert.equal(new Set(after.assets.map((one) => one.id)).size, after.assets.length);

        // Credits: one 5-credit charge per turn (storyboard, killed continue, queued, last continue); the killed
        // turn's media charge kept (its job completed), never refunded; the ledger adds up to the balance.
        const ledger = await ledgerOf(a, userId);
        const turnCharges = ledger.filter((entry) => entry.reason === 'agent_turn');
        assert.ok(turnCharges.every((entry) => entry.delta === -5));
        const turnIds = [
          turnSpan(board.body).turnId,
          doomedId,
          queuedSpan.turnId,
          turnSpan(next.body).turnId,
        ];
        assert.deepEqual(
          turnCharges.map((entry) => entry.op_id).sort(),
          turnIds.map((id) => `turn:${id}`).sort(),
          `exactly one charge per turn: ${JSON.stringify(ledger)}`,
        );
        const ofJob = ledger.filter((entry) => entry.job_id === job.job_id);
        assert.deepEqual(
          ofJob.map((entry) => [entry.reason, entry.delta]),
          [['job', -job.credits_consumed]],
          'the completed job is charged once and not refunded',
        );
        const balance = await balanceOf(a, token);
        assert.equal(
          balance,
          ledger.reduce((sum, entry) => sum + entry.delta, 0),
          'the ledger explains the balance',
        );
        const nextJobCredits = ledger
          .filter((entry) => entry.reason === 'job' && entry.job_id !== job.job_id)
          .reduce((sum, entry) => sum - entry.delta, 0);
        assert.equal(balance, 10_000 - 4 * 5 - job.credits_consumed - nextJobCredits);
        assert.equal(ledger.filter((entry) => entry.reason === 'refund').length, 0, JSON.stringify(ledger));
      },
    ));
  it('drops the queued turn of a killed node after one lease and runs the next', () =>
    withServiceLogs(
      () => nodes,
      async () => {
        const [a, b] = nodes as [RunningService, RunningService];
        const { userId, token } = await editorUser(a, { credits: 10_000 });
        const onA = editorClient(() => a, token);
        const onB = editorClient(() => b, token);
        const project = await onA.createProject({ name: 'bridge' });
        ok(
          await onA.instruct(project.id, {
            instruction: 'a 2-scene video about a bridge [sandbox:delay=4000]',
          }),
          'storyboard',
        );
        // A slow turn runs on A; behind it wait a turn on B, then another on A.
        const slow = onA.instruct(project.id, { instruction: 'continue' });
        let credits = await until(
          'the slow turn is charged and generating',
          async () => ({
            jobs: (await call<{ jobs: unknown[] }>(a.url, 'GET', '/api/v1/jobs', { token })).body.jobs.length,
            credits: await balanceOf(a, token),
          }),
          (seen) => seen.jobs === 1,
          10_000,
          100,
        ).then((seen) => seen.credits);
        const orphan = onB.instruct(project.id, { instruction: 'a 2-scene video about a river' }).then(
          (answer) => ({ answer }),
          (error: unknown) => ({ error }),
        );
        credits = await until(
          'B’s turn is queued',
          () => balanceOf(a, token),
          (now) => now === credits - 5,
        );
        const last = onA.instruct(project.id, { instruction: 'a 2-scene video about a valley' });
        await until(
          'A’s second turn is queued',
          () => balanceOf(a, token),
          (now) => now === credits - 5,
        );
        const killed = await b.stop('SIGKILL');
        assert.equal(killed.signal, 'SIGKILL');

        const slowAnswer = await slow;
        const slowEnd = Date.now();
        ok(slowAnswer, 'slow continue');
        const lastAnswer = await last;
        const gap = Date.now() - slowEnd;
        ok(lastAnswer, 'the turn queued behind the dead node’s');
        console.log(
          `slow turn end → next turn answered ${gap} ms (the dead node's granted turn lapsing between)`,
        );
        assert.ok(gap <= TURN_LEASE_MS + 3000, `${gap} ms between the slow turn and the next`);
        assert.ok('error' in (await orphan), 'the killed node never answered');

        // The dead node's turn never began: it left no event, and the turns around it did not interleave.
        const events = await storedEvents(project.id);
        const slowSpan = turnSpan(slowAnswer.body);
        const lastSpan = turnSpan(lastAnswer.body);
        assert.ok(lastSpan.started > slowSpan.ended);
        const turnIds = new Set(events.map((event) => event.turn_id).filter((id) => id !== null));
        const storyboardId = events.find((event) => event.type === 'turn.started')!.turn_id;
        assert.deepEqual(
          [...turnIds].sort(),
          [storyboardId, slowSpan.turnId, lastSpan.turnId].sort(),
          'no event of the dropped turn',
        );
        // Its charge is given back by the lease sweep, once: a turn that never ran is not a turn.
        const ran = new Set([storyboardId, slowSpan.turnId, lastSpan.turnId].map((id) => `turn:${id}`));
        const ledger = await until(
          'the dropped turn’s charge is refunded',
          () => ledgerOf(a, userId),
          (entries) => entries.some((entry) => entry.reason === 'agent_turn_dropped'),
          10_000,
          100,
        );
        const dropped = ledger.filter((entry) => entry.reason === 'agent_turn' && !ran.has(entry.op_id!));
        assert.equal(dropped.length, 1, JSON.stringify(ledger));
        assert.deepEqual(
          ledger
            .filter((entry) => entry.reason === 'agent_turn_dropped')
            .map((entry) => [entry.op_id, entry.delta]),
          [[`${dropped[0]!.op_id}:refund`, 5]],
        );
        const opIds = ledger.map((entry) => entry.op_id);
        assert.equal(new Set(opIds).size, opIds.length, 'no charge applied twice');
        assert.equal(
          await balanceOf(a, token),
          ledger.reduce((sum, entry) => sum + entry.delta, 0),
        );
      },
    ));
});
