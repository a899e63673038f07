// Generation jobs across the death of the service (single-node mode): one jongodb outlives several service
// processes. Jobs processing when the service stops (SIGTERM or SIGKILL) complete once after a restart, and a
// job whose service died between its debit and the provider's answer is refunded exactly once by the sweeper.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, adminClient, call, type RunningService } from '../helpers/service.ts';
import { probeMedia } from '../helpers/ffprobe.ts';
import { download, jobsClient, type Job } from '../helpers/jobs.ts';
import { startFakeFal, type FakeFal } from '../fakes/fal-queue-server.ts';
import { until } from '../helpers/wait.ts';

interface LedgerEntry {
  delta: number;
  reason: string;
  op_id: string;
  job_id?: string;
}

describe('generation jobs across a restart of the service', () => {
  let mongo: TestMongo;
  let db: MongoClient;
  let service: RunningService;
  let fal: FakeFal | undefined;
  // One media folder for every process: a restarted node must serve (and read the sandbox's outputs from)
  // the same store as the one that died.
  const mediaDir = mkdtempSync(join(tmpdir(), 'mf-restart-media-'));

  const sandboxEnv = () => ({
    MONGO_URL: mongo.uri,
    MEDIA_DIR: mediaDir,
    // Long enough that every job is still processing when the service is stopped right after submitting.
    SANDBOX_VIDEO_MS: '3000',
    SANDBOX_IMAGE_MS: '2500',
    // One render at a time, so the later jobs are still queued (not rendered) when the process dies.
    SANDBOX_RENDER_CONCURRENCY: '1',
    PROVIDER_POLL_INTERVAL_MS: '100',
    RATE_LIMIT_PER_MINUTE: '100000',
    // No periodic sweep within the test: only the start-up resume can bring the jobs back to life.
    JOB_SWEEP_INTERVAL_MS: '600000',
  });

  before(async () => {
    mongo = await startMongo();
    db = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
    await db.connect();
    service = await startService(sandboxEnv());
  });
  after(async () => {
    await service?.stop('SIGKILL');
    await fal?.stop();
    await db?.close();
    await mongo?.stop();
  });

  // A getter: every call goes to the service running now, not the one that was killed.
  const { account, balance, submitVideo, submitImage, getJob, waitForEnd } = jobsClient(() => service);
  const admin = () => adminClient(service);
  const ledgerOf = async (userId: string) => {
    const answer = await admin().call<{ entries: LedgerEntry[] }>('GET', `/users/${userId}/ledger`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body.entries;
  };
  const adminBalance = async (userId: string) =>
    (await admin().call<{ user: { credits: number } }>('GET', `/users/${userId}`)).body.user.credits;
  // The sandbox's own collection (README "Providers"): its requests outlive the service, like a real provider's.
  const pendingRenders = () =>
    db.db('mediaforge').collection('sandbox_requests').countDocuments({ state: 'pending' });
  const claimedRenders = () =>
    db
      .db('mediaforge')
      .collection('sandbox_requests')
      .countDocuments({ state: 'pending', render_owner: { $ne: null } });

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`completes, once and charged once, the jobs that were processing when the service got ${signal}`, async () => {
      const { userId, token } = await account(10_000);
      const requests: Array<{ submit: () => ReturnType<typeof submitVideo>; cost: number; check: Check }> = [
        {
          submit: () => submitVideo(token, { prompt: `${signal} harbour at night`, duration_seconds: 5 }),
          cost: 1135,
          check: { kind: 'video', seconds: 5, size: [1280, 720], audio: true },
        },
        {
          submit: () =>
            submitVideo(token, {
              prompt: `${signal} portrait`,
              duration_seconds: 4,
              resolution: '480p',
              aspect_ratio: '9:16',
              generate_audio: false,
            }),
          cost: 404,
          check: { kind: 'video', seconds: 4, size: [480, 854], audio: false },
        },
        {
          submit: () => submitImage(token, { prompt: `${signal} fox`, num_images: 2, aspect_ratio: '16:9' }),
          cost: 100,
          check: { kind: 'images', count: 2, size: [1024, 576] },
        },
      ];
      const submitted: Array<{ jobId: string; cost: number; check: Check }> = [];
      for (const request of requests) {
        const answer = await request.submit();
        assert.equal(answer.status, 202, JSON.stringify(answer.body));
        assert.equal(answer.body.credits_consumed, request.cost);
        submitted.push({ jobId: answer.body.job_id as string, cost: request.cost, check: request.check });
      }
      const charged = submitted.reduce((sum, job) => sum + job.cost, 0);
      for (const { jobId } of submitted) {
        assert.equal(
          (await getJob(token, jobId)).body.status,
          'processing',
          'still processing before the stop',
        );
      }

      const exit = await service.stop(signal);
      if (signal === 'SIGKILL') assert.equal(exit.signal, 'SIGKILL');
      else assert.equal(exit.code, 0, 'a graceful stop exits 0');
      // Without an unfinished render the restart would only have polls to resume, not renders to redo.
      assert.ok((await pendingRenders()) >= 1, 'some render was cut off by the stop');
      if (signal === 'SIGTERM') {
        assert.equal(await claimedRenders(), 0, 'a graceful stop hands its unfinished renders back');
      }

      service = await startService(sandboxEnv());
      const jobs: Job[] = [];
      // After SIGKILL the dead process's render claims must lapse (15 s) before the new one renders them again.
      for (const { jobId } of submitted) jobs.push(await waitForEnd(token, jobId, 45_000));

      for (const [i, job] of jobs.entries()) {
        const { check } = submitted[i]!;
        assert.equal(job.status, 'completed', JSON.stringify(job));
        assert.equal(job.error, null);
        assert.equal(job.refunded_credits, 0);
        const urls = check.kind === 'video' ? [job.result?.video] : (job.result?.images ?? []);
        assert.equal(urls.length, check.kind === 'video' ? 1 : check.count, JSON.stringify(job.result));
        for (const url of urls) {
          assert.ok(
            url !== undefined && url.startsWith(`${service.url}/media/`),
            `served by the new process: ${url}`,
          );
          const media = await probeMedia(await download(url));
          const picture = media.streams.find((s) => s.codecType === 'video')!;
          assert.deepEqual([picture.width, picture.height], check.size, url);
          if (check.kind === 'video') {
            assert.equal(picture.codecName, 'h264');
            assert.ok(
              Math.abs(media.durationSeconds - check.seconds) <= 0.1,
              `duration ${media.durationSeconds}`,
            );
            assert.equal(
              media.streams.some((s) => s.codecType === 'audio'),
              check.audio,
            );
          } else {
            assert.equal(picture.codecName, 'png');
          }
        }
      }
      assert.equal(await pendingRenders(), 0, 'every interrupted render was done again');

      // Charged exactly once and never refunded: one debit per job, nothing else besides the opening grant.
      assert.equal(await balance(token), 10_000 - charged);
      const entries = await ledgerOf(userId);
      assert.equal(entries.length, 1 + submitted.length, JSON.stringify(entries));
      for (const { jobId, cost } of submitted) {
        assert.deepEqual(
          entries.filter((e) => e.job_id === jobId).map((e) => [e.delta, e.op_id]),
          [[-cost, `${jobId}:debit`]],
        );
      }
      // Completed once: the list shows each job once, with the result and completion time it first got.
      const list = await call<{ jobs: Job[] }>(service.url, 'GET', '/api/v1/jobs', { token });
      assert.deepEqual(
        list.body.jobs.map((j) => [j.job_id, j.status, j.completed_at, j.result]),
        jobs.map((j) => [j.job_id, j.status, j.completed_at, j.result]).reverse(),
      );
    });
  }

  it('refunds exactly once, then removes, a job whose service was killed between the debit and the provider answer', async () => {
    // fal (faked) holds the submit open: the service sits inside provider.submit, the debit already done.
    fal = await startFakeFal();
    fal.setBehaviour({ hang: ['submit'] });
    const falEnv = (extra: Record<string, string> = {}) => ({
      MONGO_URL: mongo.uri,
      MEDIA_DIR: mediaDir,
      PROVIDER: 'fal',
      FAL_KEY: fal!.key,
      FAL_QUEUE_URL: fal!.url,
      WEBHOOK_ALLOW_PRIVATE: 'true', // the fake listens on loopback
      PROVIDER_POLL_INTERVAL_MS: '100',
      RATE_LIMIT_PER_MINUTE: '100000',
      ...extra,
    });
    await service.stop();
    service = await startService(falEnv());

    const { userId, token } = await account(5000);
    const pending = submitImage(token, { prompt: 'a lighthouse', num_images: 2 });
    pending.catch(() => undefined); // awaited below; the kill makes it reject
    const submits = () => fal!.requests.filter((r) => r.method === 'POST');
    await until(
      'submits received by fal',
      async () => submits().length,
      (n) => n === 1,
    );
    assert.equal(await adminBalance(userId), 4900, 'the debit came before the provider call');
    assert.deepEqual(
      (await call<{ jobs: Job[] }>(service.url, 'GET', '/api/v1/jobs', { token })).body.jobs,
      [],
    );

    assert.equal((await service.stop('SIGKILL')).signal, 'SIGKILL');
    await assert.rejects(pending, 'the client never gets an answer');

    service = await startService(falEnv({ SUBMIT_ABANDONED_MS: '1000', JOB_SWEEP_INTERVAL_MS: '200' }));
    await until(
      'balance after the sweep',
      () => adminBalance(userId),
      (credits) => credits === 5000,
    );
    // Several more sweeps (every 200 ms) pass over the same ground: none may refund again.
    await new Promise((resolve) => setTimeout(resolve, 1500)); // a wait for nothing: several sweeps, no second refund
    assert.equal(await adminBalance(userId), 5000);

    const entries = (await ledgerOf(userId)).filter((e) => e.job_id !== undefined);
    const jobId = entries[0]?.job_id;
    assert.ok(jobId, JSON.stringify(entries));
    assert.deepEqual(
      entries.map((e) => [e.job_id, e.delta, e.op_id]).sort((a, b) => Number(a[1]) - Number(b[1])),
      [
        [jobId, -100, `${jobId}:debit`],
        [jobId, 100, `${jobId}:refund`],
      ],
    );
    const read = await getJob(token, jobId);
    assert.deepEqual([read.status, read.body], [404, { error: 'Job not found' }]);
    assert.deepEqual(
      (await call<{ jobs: Job[] }>(service.url, 'GET', '/api/v1/jobs', { token })).body.jobs,
      [],
    );
    assert.equal(submits().length, 1, 'the restarted service does not submit the abandoned job again');
  });
});

/** What a finished job's files must be. */
type Check =
  | { kind: 'video'; seconds: number; size: [number, number]; audio: boolean }
  | { kind: 'images'; count: number; size: [number, number] };
