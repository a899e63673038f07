// Generation jobs in cluster mode: two service processes on one MongoDB and one nats-server poll their jobs
// through the JetStream work queue MF_JOBS. Jobs submitted on either node complete (whichever node polls
// them), and the jobs of a node killed with SIGKILL are completed by the survivor.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { JOBS_STREAM } from '../../src/jobs/job-poll-queue.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startNats, skipWithoutNats, type TestNats } from '../helpers/nats.ts';
import { startService, type RunningService } from '../helpers/service.ts';
import { probeMedia } from '../helpers/ffprobe.ts';
import { download, jobsClient } from '../helpers/jobs.ts';

describe('generation jobs in cluster mode', { skip: skipWithoutNats() }, () => {
  let mongo: TestMongo;
  let nats: TestNats;
  let nodeA: RunningService;
  let nodeB: RunningService;

  const startNode = (name: string) =>
    startService({
      MONGO_URL: mongo.uri,
      NATS_URL: nats.url,
      NODE_ID: name,
      MEDIA_STORE: 'gridfs', // both nodes serve every result
      SANDBOX_VIDEO_MS: '300',
      SANDBOX_IMAGE_MS: '200',
      PROVIDER_POLL_INTERVAL_MS: '100',
      RATE_LIMIT_PER_MINUTE: '100000',
    });

  before(async () => {
    [mongo, nats] = await Promise.all([startMongo(), startNats()]);
    nodeA = await startNode('node-a');
    nodeB = await startNode('node-b');
  });
  after(async () => {
    await Promise.all([nodeA?.stop(), nodeB?.stop()]);
    await Promise.all([mongo?.stop(), nats?.stop()]);
  });

  const onA = jobsClient(() => nodeA);
  const onB = jobsClient(() => nodeB);

  async function queuedPolls(): Promise<number> {
    const connection = await connect({ servers: nats.url });
    try {
      return (await (await jetstreamManager(connection)).streams.info(JOBS_STREAM)).state.messages;
    } finally {
      await connection.close();
    }
  }

  it('completes jobs submitted on either node and leaves nothing queued', async () => {
    const { token } = await onA.account(10_000);
    const video = await onA.submitVideo(token, { prompt: 'harbour', duration_seconds: 4 });
    const images = await onB.submitImage(token, { prompt: 'boats', num_images: 2 });
    assert.deepEqual([video.status, images.status], [202, 202]);

    const videoJob = await onB.waitForEnd(token, video.body.job_id as string);
    const imageJob = await onA.waitForEnd(token, images.body.job_id as string);
    assert.deepEqual([videoJob.status, imageJob.status], ['completed', 'completed']);
    const media = await probeMedia(await download(videoJob.result!.video!));
    assert.ok(Math.abs(media.durationSeconds - 4) <= 0.1, `duration ${media.durationSeconds}`);
    assert.equal(imageJob.result!.images!.length, 2);
    assert.equal(await onA.balance(token), 10_000 - 908 - 100);
    assert.equal(await queuedPolls(), 0, 'a finished job leaves MF_JOBS');
  });

  it('completes the jobs of a node killed with SIGKILL on the surviving node', async () => {
    const { token } = await onA.account(10_000);
    const submitted: string[] = [];
    for (let i = 0; i < 4; i++) {
      const answer = await onA.submitImage(token, { prompt: `slow ${i} [sandbox:delay=1500]` });
      assert.equal(answer.status, 202);
      submitted.push(answer.body.job_id as string);
    }
    await nodeA.stop('SIGKILL');
    // A render node A was running is taken over when its lease runs out (15 s); a poll it held
    // unacknowledged comes back after ack_wait (30 s); the other jobs go on at once.
    for (const jobId of submitted) {
      const job = await onB.waitForEnd(token, jobId, 60_000);
      assert.equal(job.status, 'completed', JSON.stringify(job));
      // Whichever node finished it, the survivor serves the file (GridFS).
      const served = await fetch(`${nodeB.url}${new URL(job.result!.images![0]!).pathname}`);
      assert.equal(served.status, 200);
      assert.equal(served.headers.get('content-type'), 'image/png');
      await served.arrayBuffer();
    }
    assert.equal(await onB.balance(token), 10_000 - 4 * 50, 'charged once each, nothing refunded');
  });
});
