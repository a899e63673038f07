// The whole service as a cluster (docs/deploy.md): deploy/local/cluster.sh starts
// 3 nats-server (one JetStream cluster, streams with 3 replicas), one jongodb and 3 service nodes as real
// processes; requests are spread across the nodes. Jobs submitted round-robin and polled on other nodes all
// complete, each announced by exactly one signed webhook delivery and charged exactly once; a multi-turn
// builtin-agent conversation instructed on node-2 streams every event, in order and without a gap, to a
// WebSocket client on node-3; an export started on node-3 is a real mp4 that another node serves.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startTestCluster,
  type ClusterProcess,
  type LocalCluster,
  type ThreeNodes,
} from '../helpers/local-cluster.ts';
import { skipWithoutNats } from '../helpers/nats.ts';
import { call, type ApiAnswer } from '../helpers/service.ts';
import { jobsClient, type Job } from '../helpers/jobs.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import {
  assertBodyMatchesJob,
  assertSigned,
  bodyOf,
  header,
  hookedKeys,
  readDeliveries,
} from '../helpers/webhooks.ts';
import {
  checkTurnAnswer,
  editorClient,
  editorUser,
  ledgerOf,
  videoTrack,
  type EditorEvent,
  type InstructAnswer,
} from '../helpers/editor.ts';
import { openEventsSocket, type EventsSocket } from '../helpers/events-socket.ts';
import { probeMedia } from '../helpers/ffprobe.ts';
import { sleep, until } from '../helpers/wait.ts';

const IMAGE_PRICE = 50;
const TURN_CREDITS = 5;

describe('a 3-node cluster started by deploy/local/cluster.sh', { skip: skipWithoutNats() }, () => {
  let cluster: LocalCluster;
  let nodes: ThreeNodes;
  const receivers: WebhookReceiver[] = [];
  const sockets: EventsSocket[] = [];
  /** The admin API as one node serves it; the admin token is the cluster's. */
  const on = (node: ClusterProcess) => ({ url: node.url, adminToken: cluster.adminToken });

  before(async () => {
    ({ cluster, nodes } = await startTestCluster({
      SANDBOX_VIDEO_MS: '300',
      SANDBOX_IMAGE_MS: '100',
      PROVIDER_POLL_INTERVAL_MS: '100',
      PROVIDER_TIMEOUT_MS: '60000',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_DELAYS_MS: '300,600,900',
      WEBHOOK_TIMEOUT_MS: '2000',
    }));
  });
  after(async () => {
    await Promise.all(sockets.map((socket) => socket.close().catch(() => undefined)));
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await cluster?.down();
  });

  /** Runs a test body; on failure prints the status and the nodes' warnings and errors first. */
  async function withClusterLogs(body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (error) {
      const lines = cluster.nodes
        .flatMap((node) =>
          cluster
            .logs(node.name)
            .split('\n')
            .filter((line) => /"level":(40|50|60)\b|^mediaforge:/.test(line))
            .map((line) => `${node.name}: ${line}`),
        )
        .slice(-80);
      console.log(`${await cluster.status()}\nnode warnings and errors:\n${lines.join('\n')}`);
      throw error;
    }
  }

  it('runs 3 NATS nodes as one JetStream cluster whose streams have 3 replicas, and 3 healthy nodes', async () => {
    assert.equal(cluster.nats.length, 3);
    const jsz = (await (
      await fetch(`${cluster.nats[0]!.monitorUrl}/jsz?streams=true&config=true`)
    ).json()) as {
      meta_cluster?: { leader?: string; cluster_size?: number };
      account_details?: { stream_detail?: { name: string; config: { num_replicas: number } }[] }[];
    };
    assert.ok(jsz.meta_cluster?.leader, 'a JetStream meta leader');
    assert.equal(jsz.meta_cluster?.cluster_size, 3);
    const streams = (jsz.account_details ?? []).flatMap((account) => account.stream_detail ?? []);
    assert.ok(streams.length >= 3, JSON.stringify(streams.map((s) => s.name)));
    for (const stream of streams) assert.equal(stream.config.num_replicas, 3, stream.name);
    for (const node of nodes) {
      const health = await call<{ ok: boolean; node_id: string; nats: string; mongo: string }>(
        node.url,
        'GET',
        '/healthz',
      );
      assert.equal(health.status, 200, JSON.stringify(health.body));
      assert.deepEqual(
        [health.body.ok, health.body.node_id, health.body.nats, health.body.mongo],
        [true, node.name, 'up', 'up'],
      );
    }
    assert.match(await cluster.status(), /node-3 .*alive.*healthz=200/);
  });

  it('completes jobs submitted round-robin and polled on other nodes, each with one signed webhook delivery and one charge', () =>
    withClusterLogs(async () => {
      const hook = await startWebhookReceiver();
      receivers.push(hook);
      const credits = 10_000;
      // Admin calls on node-1: the user, an image key, its webhook.
      const [key] = await hookedKeys(on(nodes[0]), 1, () => hook.url, credits);
      const { userId, keyId, token, secret } = key!;

      // Nine jobs, submitted at once on node-1, node-2, node-3, node-1, ...; one is made to fail (and be refunded).
      const prompts = [
        'harbour',
        'boats',
        'gulls',
        'lighthouse [sandbox:fail]',
        'nets',
        'tide',
        'pier',
        'buoy',
        'crane',
      ];
      const submitted = await Promise.all(
        prompts.map(async (prompt, i) => {
          const node = i % 3;
          const submitter = nodes[node]!;
          const answer = await jobsClient(() => on(submitter)).submitImage(token, { prompt });
          assert.equal(answer.status, 202, `submit on ${submitter.name}: ${JSON.stringify(answer.body)}`);
          return { jobId: answer.body.job_id as string, node, prompt };
        }),
      );
      assert.equal(new Set(submitted.map((s) => s.jobId)).size, submitted.length);

      // Each is polled on another node than the one it was submitted on.
      const ended = await Promise.all(
        submitted.map(({ jobId, node }) =>
          jobsClient(() => on(nodes[(node + 1) % 3]!)).waitForEnd(token, jobId, 60_000),
        ),
      );
      const byId = new Map<string, Job>(ended.map((job) => [job.job_id, job]));
      for (const { jobId, prompt } of submitted) {
        const job = byId.get(jobId)!;
        const failing = prompt.includes('[sandbox:fail]');
        assert.equal(job.status, failing ? 'failed' : 'completed', JSON.stringify(job));
        assert.equal(job.credits_consumed, IMAGE_PRICE);
        assert.equal(job.refunded_credits, failing ? IMAGE_PRICE : 0, JSON.stringify(job));
        if (!failing) {
          // Every node serves every result (GridFS): fetch it from all three.
          const path = new URL(job.result!.images![0]!).pathname;
          for (const node of nodes) {
            const served = await fetch(`${node.url}${path}`);
            assert.equal(served.status, 200, `${node.name} ${path}`);
            assert.equal(served.headers.get('content-type'), 'image/png');
            assert.ok((await served.arrayBuffer()).byteLength > 0);
          }
        }
      }

      // One delivery per job, signed; then a quiet moment in which no duplicate arrives.
      await hook.waitFor(submitted.length, 30_000);
      await sleep(1500); // a wait for nothing: the quiet moment
      assert.equal(hook.requests.length, submitted.length, 'no delivery twice');
      const deliveryIds = new Set<string>();
      const seenJobs = new Set<string>();
      for (const req of hook.requests) {
        const body = bodyOf(req);
        const job = byId.get(body.job_id);
        assert.ok(job, `a delivery for a job of this test: ${body.job_id}`);
        assertSigned(req, secret, { event: `job.${job.status}`, label: body.job_id });
        assertBodyMatchesJob(body, job, { sameResult: false });
        assert.ok(!seenJobs.has(body.job_id), `one delivery for ${body.job_id}`);
        seenJobs.add(body.job_id);
        deliveryIds.add(header(req, 'x-svc-delivery-id'));
      }
      assert.equal(seenJobs.size, submitted.length);
      assert.equal(deliveryIds.size, submitted.length, 'one delivery id per job');

      // The deliveries route (node-3) agrees: one delivered delivery per job, one attempt each.
      const deliveries = await until(
        'every delivery recorded as delivered',
        () => readDeliveries(on(nodes[2]), keyId),
        (list) => list.length === submitted.length && list.every((d) => d.state === 'delivered'),
        10_000,
        100,
      );
      assert.deepEqual(deliveries.map((d) => d.job_id).sort(), submitted.map((s) => s.jobId).sort());
      assert.deepEqual(
        deliveries.map((d) => d.id).sort(),
        [...deliveryIds].sort(),
        'the ids the receiver saw are the recorded ones',
      );
      for (const delivery of deliveries) assert.equal(delivery.attempts.length, 1, JSON.stringify(delivery));

      // Credits: the balance on each node is the initial one minus what stayed charged.
      const charged = ended.reduce((sum, job) => sum + job.credits_consumed - job.refunded_credits, 0);
      assert.equal(charged, (submitted.length - 1) * IMAGE_PRICE);
      for (const node of nodes) {
        assert.equal(await jobsClient(() => on(node)).balance(token), credits - charged, node.name);
      }
      // The ledger: the grant, one debit per job and one refund for the failed one, nothing twice.
      const ledger = await ledgerOf(on(nodes[1]), userId);
      for (const { jobId, prompt } of submitted) {
        const entries = ledger.filter((entry) => entry.job_id === jobId);
        const debits = entries.filter((entry) => entry.delta < 0);
        const refunds = entries.filter((entry) => entry.delta > 0);
        assert.deepEqual(
          debits.map((entry) => entry.delta),
          [-IMAGE_PRICE],
          `one debit for ${jobId}: ${JSON.stringify(entries)}`,
        );
        assert.deepEqual(
          refunds.map((entry) => entry.delta),
          prompt.includes('[sandbox:fail]') ? [IMAGE_PRICE] : [],
          `refunds of ${jobId}: ${JSON.stringify(entries)}`,
        );
      }
      const opIds = ledger.map((entry) => entry.op_id).filter(Boolean);
      assert.equal(new Set(opIds).size, opIds.length, 'no op_id applied twice');
      assert.equal(
        ledger.reduce((sum, entry) => sum + entry.delta, 0),
        credits - charged,
        'the ledger sums to the balance',
      );
      assert.equal(ledger[0]!.balance_after, credits - charged);
    }));

  it('streams a multi-turn conversation instructed on node-2 to a WebSocket client on node-3, then exports on node-3', () =>
    withClusterLogs(async () => {
      const [n1, n2, n3] = nodes;
      const credits = 100_000;
      const { userId, token } = await editorUser(on(n1), { credits });
      const onNode = nodes.map((node) => editorClient(() => node, token));
      const project = await onNode[0]!.createProject({ name: 'harbour' });
      const state0 = await onNode[0]!.state(project.id);
      assert.equal(state0.status, 200);
      const videoId = state0.body.videos[0]!.id;

      // The events client on node-3, from the start of the project's history; a live-only one on node-1.
      const socket = await openEventsSocket(n3.url, project.id, { token, since: 0 });
      const live = await openEventsSocket(n1.url, project.id, { token });
      sockets.push(socket, live);

      // Three turns on node-2: the storyboard, then a scene per "continue".
      const turns: ApiAnswer<InstructAnswer>[] = [];
      let turnCharges = 0;
      for (const instruction of ['a 2-scene video about a harbour at night', 'continue', 'continue']) {
        const answer = await onNode[1]!.instruct(project.id, { instruction });
        const checked = checkTurnAnswer(answer, project.id);
        turnCharges += checked.creditsCharged;
        turns.push(answer);
      }
      assert.equal(turns[0]!.body.context_appended, true);
      assert.equal(turns[1]!.body.media_gen_done, true, turns[1]!.body.assistant_text);
      assert.equal(turns[2]!.body.media_gen_done, true, turns[2]!.body.assistant_text);
      const turnEvents = turns.flatMap((answer) => answer.body.agent_events);
      const lastTurnSeq = turnEvents.at(-1)!.seq;

      // The socket on another node saw exactly the events the answers returned, in seq order, no gap.
      await socket.waitForSeq(lastTurnSeq, 20_000);
      assertGapless(socket.events);
      assert.deepEqual(
        socket.events.filter((event) => event.turn_id !== null),
        turnEvents,
        'the turns as node-3 streamed them are the instruct answers',
      );
      assert.deepEqual(
        socket.events.filter((event) => event.turn_id === null),
        [],
        'nothing but the turns happened yet',
      );
      assert.deepEqual(
        socket.events.map((event) => event.seq),
        turnEvents.map((event) => event.seq),
      );

      // The live client on node-1 (opened before the first turn) saw the very same stream.
      await live.waitForSeq(lastTurnSeq, 20_000);
      assert.deepEqual(live.events, socket.events, 'node-1 and node-3 streamed the same events');

      // Every node reads the same timeline: two video clips, one per generation.
      for (const client of onNode) {
        const state = await client.state(project.id);
        assert.equal(state.status, 200);
        const clips = videoTrack(state.body, videoId);
        assert.deepEqual(
          clips.map((clip) => clip.id),
          [turns[1]!.body.clips_created[0]!.id, turns[2]!.body.clips_created[0]!.id],
        );
      }

      // Direct edits on node-1 shorten both clips (1 s each); node-3 streams them live.
      const clips = videoTrack((await onNode[0]!.state(project.id)).body, videoId);
      for (const clip of clips) {
        const patched = await onNode[0]!.patchClip(project.id, clip.id, { duration_sec: 1 });
        assert.equal(patched.status, 200, JSON.stringify(patched.body));
      }
      await socket.waitFor(
        'two clip.updated events',
        (events) => events.filter((event) => event.type === 'clip.updated').length === 2,
      );

      // The export on node-3; the file is fetched from another node and decoded.
      const exportStarted = Date.now();
      const exported = await onNode[2]!.exportVideo(project.id, { video_id: videoId });
      assert.equal(exported.status, 200, JSON.stringify(exported.body));
      console.log(
        `${turnEvents.length} turn events (seq 1..${lastTurnSeq}) streamed on node-3; export in ${Date.now() - exportStarted} ms`,
      );
      assert.match(exported.body.asset_id, /^va_/);
      assert.equal(exported.body.video_clip_count, 2);
      assert.ok(
        Math.abs(exported.body.duration_sec - 2) <= 0.1,
        `duration_sec ${exported.body.duration_sec}`,
      );
      const media = new URL(exported.body.video_url);
      // The URL is built by the project actor, on whichever node consumes its partition (each node is its own
      // PUBLIC_BASE_URL here, there is no proxy); the file is read from a node that is neither that one nor node-3.
      assert.ok(
        nodes.some((node) => node.url === media.origin),
        `${media.origin} is a node of the cluster`,
      );
      const reader = nodes.find((node) => node.url !== media.origin && node !== n3)!;
      console.log(
        `export URL names ${nodes.find((node) => node.url === media.origin)!.name}; read from ${reader.name}`,
      );
      const served = await fetch(`${reader.url}${media.pathname}`);
      assert.equal(served.status, 200);
      assert.equal(served.headers.get('content-type'), 'video/mp4');
      const dir = await mkdtemp(join(tmpdir(), 'mf-cluster-export-'));
      const file = join(dir, 'export.mp4');
      await writeFile(file, Buffer.from(await served.arrayBuffer()));
      const probed = await probeMedia(file).finally(() => rm(dir, { recursive: true, force: true }));
      assert.ok(Math.abs(probed.durationSeconds - 2) <= 0.1, `ffprobe duration ${probed.durationSeconds}`);
      const video = probed.streams.filter((stream) => stream.codecType === 'video');
      assert.equal(video.length, 1, JSON.stringify(probed.streams));
      assert.deepEqual([video[0]!.codecName, video[0]!.width, video[0]!.height], ['h264', 720, 1280]);
      assert.match(probed.format, /mp4/);

      // The export's events reach the socket too, and the whole stream stays gapless.
      await socket.waitFor('export.completed', (events) =>
        events.some((event) => event.type === 'export.completed'),
      );
      assertGapless(socket.events);
      const completed = socket.events.find((event) => event.type === 'export.completed')!;
      assert.equal(completed.data.asset_id, exported.body.asset_id);
      assert.ok(socket.events.some((event) => event.type === 'export.started'));
      const exportAsset = (await onNode[0]!.state(project.id)).body.assets.find(
        (asset) => asset.id === exported.body.asset_id,
      );
      assert.deepEqual([exportAsset?.kind, exportAsset?.source], ['video', 'export']);

      // A second client joining on node-1 with since=0 replays the same history.
      const late = await openEventsSocket(n1.url, project.id, { token, since: 0 });
      sockets.push(late);
      const head = socket.events.at(-1)!.seq;
      await late.waitForSeq(head);
      assert.deepEqual(late.events.slice(0, socket.events.length), socket.events);

      // Credits: each turn charged once (5 + its media), nothing else.
      const balance = await call<{ credits: number }>(n2.url, 'GET', '/api/v1/account', { token });
      assert.equal(balance.body.credits, credits - turnCharges);
      const ledger = await ledgerOf(on(n3), userId);
      const turnIds = turns.map((answer) => answer.body.agent_events[0]!.turn_id!);
      for (const turnId of turnIds) {
        const entries = ledger.filter((entry) => entry.op_id?.includes(turnId));
        assert.ok(entries.length >= 1, `the turn ${turnId} is in the ledger: ${JSON.stringify(ledger)}`);
      }
      const opIds = ledger.map((entry) => entry.op_id).filter(Boolean);
      assert.equal(new Set(opIds).size, opIds.length, 'no op_id applied twice');
      assert.equal(
        ledger.reduce((sum, entry) => sum + entry.delta, 0),
        credits - turnCharges,
      );
      assert.equal(
        turnCharges,
        3 * TURN_CREDITS +
          turns
            .flatMap((answer) => answer.body.agent_events.filter((event) => event.type === 'media.started'))
            .reduce((sum, event) => sum + (event.data.credits as number), 0),
      );
    }));
});

/** Seqs strictly consecutive from the first event on (the stream of one project, replayed from 0). */
function assertGapless(events: EditorEvent[]): void {
  assert.ok(events.length > 0);
  assert.equal(events[0]!.seq, 1, `the replay starts at seq 1: ${events[0]!.seq}`);
  events.forEach((event, i) => {
    if (i > 0)
      assert.equal(event.seq, events[i - 1]!.seq + 1, `seq ${event.seq} follows ${events[i - 1]!.seq}`);
  });
}
