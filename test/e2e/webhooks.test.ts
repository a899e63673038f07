// Job webhooks end to end: the service as a process (single-node mode on a fresh MongoDB-wire server,
// sandbox provider with short timings, short retry delays), real node:http receivers on loopback. The
// signature is checked here from the raw body bytes with our own HMAC, never with the service's code.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, type RunningService } from '../helpers/service.ts';
import { jobsClient } from '../helpers/jobs.ts';
import {
  startWebhookReceiver,
  type ReceivedRequest,
  type ScriptedAnswer,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.ts';
import {
  assertBodyMatchesJob,
  assertSigned,
  bodyOf,
  header,
  hookedKeys,
  readDeliveries,
  readJob,
  setWebhook,
  sleep,
  submitImage,
  until,
  verifies,
  type Delivery,
  type DeliveryAttempt,
} from '../helpers/webhooks.ts';

/** Delays before retries 1..3 (WEBHOOK_RETRY_DELAYS_MS). */
const DELAYS = [500, 1000, 1500] as const;
/** One attempt's time-out (WEBHOOK_TIMEOUT_MS). */
const ATTEMPT_TIMEOUT_MS = 1000;
/**
 * How long the first delivery of a freshly submitted image job may take to reach a receiver: a liveness bound,
 * not a budget (the sandbox renders with ffmpeg, two at a time, on 2 cores shared with another test file; three
 * jobs at once once missed 10 s in a full run).
 */
const FIRST_DELIVERY_MS = 20_000;

/** A `webhook_attempt` audit entry: an attempt as the deliveries route lists it (but `at`), and whose. */
interface AttemptAudit extends Omit<DeliveryAttempt, 'at'> {
  kind: string;
  delivery_id: string;
  job_id: string;
  key_id: string;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

/** Gap between two arrivals, checked against a configured delay ±20 %. */
function assertGap(earlier: ReceivedRequest, later: ReceivedRequest, expectedMs: number, label: string) {
  const gap = later.at - earlier.at;
  assert.ok(
    gap >= expectedMs * 0.8 && gap <= expectedMs * 1.2,
    `${label}: gap ${gap.toFixed(0)} ms, expected ${expectedMs} ms ±20 %`,
  );
}

describe('job webhooks (single-node mode)', () => {
  let mongo: TestMongo;
  let service: RunningService;
  let admin: ReturnType<typeof adminClient>;
  const receivers: WebhookReceiver[] = [];
  const jobs = jobsClient(() => service);

  before(async () => {
    mongo = await startMongo();
    service = await startService({
      MONGO_URL: mongo.uri,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_DELAYS_MS: DELAYS.join(','),
      WEBHOOK_TIMEOUT_MS: String(ATTEMPT_TIMEOUT_MS),
      SANDBOX_IMAGE_MS: '200',
      PROVIDER_POLL_INTERVAL_MS: '100',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
    admin = adminClient(service);
  });
  after(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await service?.stop();
    await mongo?.stop();
  });

  const receiver = async (answers: ScriptedAnswer[] = [], then: ScriptedAnswer = 200) => {
    const started = await startWebhookReceiver(answers, then);
    receivers.push(started);
    return started;
  };

  /** A new user with credits and an image key, its webhook set to `url`. */
  const keyWithHook = async (url: string) => (await hookedKeys(service, 1, () => url))[0]!;
  const setHook = (keyId: string, url: string) => setWebhook(service, keyId, url);

  const clearHook = async (keyId: string) => {
    const answer = await admin.call('DELETE', `/keys/${keyId}/webhook`);
    assert.deepEqual([answer.status, answer.body], [200, { cleared: true }]);
  };

  const submit = (token: string, prompt = 'a webhook fox') => submitImage(service, token, prompt);

  /** Polls the deliveries route until the job's delivery satisfies `done`. */
  const waitForDelivery = async (
    keyId: string,
    jobId: string,
    done: (delivery: Delivery) => boolean,
    timeoutMs = 5_000,
  ): Promise<Delivery> => {
    const list = await until(
      `delivery of ${jobId} as expected`,
      () => readDeliveries(service, keyId),
      (deliveries) => {
        const delivery = deliveries.find((d) => d.job_id === jobId);
        return delivery !== undefined && done(delivery);
      },
      timeoutMs,
      100,
    );
    return list.find((d) => d.job_id === jobId)!;
  };

  /** Polls the audit log until the key has at least `count` webhook attempts; returns them oldest first. */
  const auditAttempts = async (keyId: string, count: number, timeoutMs = 5_000): Promise<AttemptAudit[]> => {
    const entries = await until(
      `${count} webhook_attempt audit entries`,
      async () => {
        const answer = await admin.call<{ entries: AttemptAudit[] }>(
          'GET',
          `/audit?kind=webhook_attempt&key_id=${keyId}&limit=100`,
        );
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        return answer.body.entries;
      },
      (list) => list.length >= count,
      timeoutMs,
      100,
    );
    return [...entries].reverse();
  };

  it('sends the designed headers, a body equal to the job, and a signature that verifies from the raw bytes', async () => {
    const hook = await receiver();
    const { token, secret } = await keyWithHook(hook.url);
    assert.match(secret, /^whsec_/);
    const jobId = await submit(token);
    const [req] = await hook.waitFor(1, FIRST_DELIVERY_MS);
    const now = Date.now();

    assert.equal(req!.path, '/hook');
    assertSigned(req!, secret, { event: 'job.completed' });
    assert.ok(Math.abs(Number(header(req!, 'x-svc-timestamp')) - now / 1000) <= 5, 'timestamp is about now');
    assert.ok(!verifies(req!, `${secret}x`), 'a different secret does not verify');
    const tampered = {
      ...req!,
      body: Buffer.from(req!.body.toString('utf8').replace('completed', 'complete_')),
    };
    assert.ok(!verifies(tampered, secret), 'changed bytes do not verify');

    const body = bodyOf(req!);
    const job = await readJob(service, token, jobId);
    assert.equal(job.status, 'completed');
    assert.equal(body.status, 'completed');
    assert.equal(body.type, 'image');
    assert.equal(body.credits_consumed, 50);
    assert.ok(body.result?.images?.length, 'the result carries the images');
    assertBodyMatchesJob(body, job);
    assert.notEqual(body.model, 'imgmodel-2', 'model is not the public model id either');
    const models = await call<{ models: Array<{ id: string; provider_endpoints: Record<string, string> }> }>(
      service.url,
      'GET',
      '/api/v1/models',
      { token },
    );
    const imageModel = models.body.models.find((m) => m.id === 'imgmodel-2');
    assert.equal(
      body.model,
      imageModel?.provider_endpoints['text-to-image'],
      'the endpoint that served the job',
    );
  });

  it('delivers exactly once per terminal state: completed, failed and cancelled', async () => {
    const hook = await receiver();
    const { token, secret } = await keyWithHook(hook.url);
    const completedId = await submit(token, 'fine');
    const failedId = await submit(token, 'broken [sandbox:fail]');
    const cancelledId = await submit(token, 'stuck [sandbox:hang]');
    const cancel = await call(service.url, 'DELETE', `/api/v1/jobs/${cancelledId}`, { token });
    assert.equal(cancel.status, 200, JSON.stringify(cancel.body));

    const received = await hook.waitFor(3, FIRST_DELIVERY_MS);
    const byJob = new Map(received.map((r) => [bodyOf(r).job_id, r]));
    assert.deepEqual([...byJob.keys()].sort(), [completedId, failedId, cancelledId].sort(), 'one per job');
    for (const [jobId, event, status] of [
      [completedId, 'job.completed', 'completed'],
      [failedId, 'job.failed', 'failed'],
      [cancelledId, 'job.cancelled', 'cancelled'],
    ] as const) {
      const req = byJob.get(jobId)!;
      assertSigned(req, secret, { event });
      const body = bodyOf(req);
      assert.equal(body.status, status);
      assertBodyMatchesJob(body, await readJob(service, token, jobId));
    }
    const failed = bodyOf(byJob.get(failedId)!);
    assert.equal(typeof failed.error, 'string');
    assert.ok(failed.error!.length > 0, 'a failed job carries its error');
    assert.equal(failed.result, null);
    assert.equal(bodyOf(byJob.get(cancelledId)!).result, null);

    const ids = received.map((r) => header(r, 'x-svc-delivery-id'));
    assert.equal(new Set(ids).size, 3, `a different delivery id per job: ${ids.join(', ')}`);

    await sleep(DELAYS[0] + 1000); // a wait for nothing: a second request would come after the first retry delay
    assert.equal(hook.requests.length, 3, 'no second request for any job');
  });

  it('retries 500, 500, 200 at the configured gaps with the same id and bytes and fresh signatures', async () => {
    const hook = await receiver([500, 500], 200);
    const { keyId, token, secret } = await keyWithHook(hook.url);
    const jobId = await submit(token);
    const [first, second, third] = await hook.waitFor(3, FIRST_DELIVERY_MS + DELAYS[0] + DELAYS[1]);
    assertGap(first!, second!, DELAYS[0], 'retry 1');
    assertGap(second!, third!, DELAYS[1], 'retry 2');
    const deliveryId = header(first!, 'x-svc-delivery-id');
    for (const [i, req] of [first!, second!, third!].entries()) {
      assert.equal(header(req, 'x-svc-delivery-id'), deliveryId, `attempt ${i + 1} keeps the delivery id`);
      assert.ok(req.body.equals(first!.body), `attempt ${i + 1} sends the same body bytes`);
      assertSigned(req, secret, { label: `attempt ${i + 1}` });
    }
    assert.equal(bodyOf(first!).job_id, jobId);

    const delivery = await waitForDelivery(keyId, jobId, (d) => d.state !== 'pending');
    assert.deepEqual(Object.keys(delivery).sort(), [
      'attempts',
      'created_at',
      'event',
      'id',
      'job_id',
      'next_attempt_at',
      'state',
    ]);
    assert.equal(delivery.id, deliveryId);
    assert.equal(delivery.event, 'job.completed');
    assert.equal(delivery.state, 'delivered');
    assert.equal(delivery.next_attempt_at, null);
    assert.match(delivery.created_at, ISO);
    assert.deepEqual(
      delivery.attempts.map((a) => [a.attempt, a.url, a.status, a.error]),
      [
        [1, hook.url, 500, null],
        [2, hook.url, 500, null],
        [3, hook.url, 200, null],
      ],
    );
    for (const attempt of delivery.attempts) {
      assert.match(attempt.at, ISO);
      assert.ok(
        attempt.duration_ms >= 0 && attempt.duration_ms < ATTEMPT_TIMEOUT_MS,
        `${attempt.duration_ms}`,
      );
    }

    const audit = await auditAttempts(keyId, 3);
    assert.equal(audit.length, 3, 'one audit entry per attempt');
    assert.deepEqual(
      audit.map((e) => [e.kind, e.delivery_id, e.job_id, e.key_id, e.attempt, e.url, e.status, e.error]),
      [
        ['webhook_attempt', deliveryId, jobId, keyId, 1, hook.url, 500, null],
        ['webhook_attempt', deliveryId, jobId, keyId, 2, hook.url, 500, null],
        ['webhook_attempt', deliveryId, jobId, keyId, 3, hook.url, 200, null],
      ],
    );
    for (const entry of audit) assert.equal(typeof entry.duration_ms, 'number');

    const unknown = await admin.call('GET', '/keys/key_doesnotexist000/deliveries');
    assert.equal(unknown.status, 404, 'the deliveries route answers 404 for an unknown key');
  });

  it('retries 408, 429 and a time-out', async () => {
    const cases = [
      { first: 408 as ScriptedAnswer, gap: DELAYS[0] },
      { first: 429 as ScriptedAnswer, gap: DELAYS[0] },
      { first: 'hang' as ScriptedAnswer, gap: ATTEMPT_TIMEOUT_MS + DELAYS[0] },
    ];
    await Promise.all(
      cases.map(async ({ first, gap }) => {
        const label = String(first);
        const hook = await receiver([first], 200);
        const { keyId, token, secret } = await keyWithHook(hook.url);
        const jobId = await submit(token);
        const [one, two] = await hook.waitFor(2, FIRST_DELIVERY_MS + gap + 2000);
        assert.ok(
          two!.at - one!.at >= gap * 0.8,
          `${label}: retried after ${(two!.at - one!.at).toFixed(0)} ms`,
        );
        assert.equal(header(two!, 'x-svc-delivery-id'), header(one!, 'x-svc-delivery-id'), label);
        assert.ok(two!.body.equals(one!.body), label);
        assertSigned(two!, secret, { label });
        const delivery = await waitForDelivery(keyId, jobId, (d) => d.state !== 'pending');
        assert.equal(delivery.state, 'delivered', label);
        assert.deepEqual(
          delivery.attempts.map((a) => a.status),
          [first === 'hang' ? null : first, 200],
          label,
        );
        if (first === 'hang') {
          const timedOut = delivery.attempts[0]!;
          assert.equal(typeof timedOut.error, 'string', 'a time-out is recorded as an error');
          assert.ok(
            timedOut.duration_ms >= ATTEMPT_TIMEOUT_MS * 0.9 &&
              timedOut.duration_ms <= ATTEMPT_TIMEOUT_MS + 1000,
            `time-out after ${timedOut.duration_ms} ms`,
          );
          const audit = await auditAttempts(keyId, 2);
          assert.deepEqual(
            audit.map((e) => [e.attempt, e.status, typeof e.error]),
            [
              [1, null, 'string'],
              [2, 200, 'object'],
            ],
          );
        }
        assert.equal(hook.requests.length, 2, `${label}: nothing after the 200`);
      }),
    );
  });

  it('makes exactly one attempt on 400 and on 404', async () => {
    await Promise.all(
      [400, 404].map(async (status) => {
        const hook = await receiver([], status);
        const { keyId, token } = await keyWithHook(hook.url);
        const jobId = await submit(token);
        await hook.waitFor(1, FIRST_DELIVERY_MS);
        const delivery = await waitForDelivery(keyId, jobId, (d) => d.state !== 'pending');
        assert.equal(delivery.state, 'failed', `${status}`);
        assert.deepEqual(
          delivery.attempts.map((a) => a.status),
          [status],
        );
        assert.equal(delivery.next_attempt_at, null);
        await sleep(DELAYS[0] + 1000); // a wait for nothing: a second request would come after the first retry delay
        assert.equal(hook.requests.length, 1, `${status}: no retry`);
        const audit = await auditAttempts(keyId, 1);
        assert.deepEqual(
          audit.map((e) => [e.attempt, e.status]),
          [[1, status]],
        );
      }),
    );
  });

  it('gives up after 4 attempts when the receiver always answers 500, each freshly signed', async () => {
    const hook = await receiver([], 500);
    const { keyId, token, secret } = await keyWithHook(hook.url);
    const jobId = await submit(token);
    await hook.waitFor(1, FIRST_DELIVERY_MS);
    const waiting = await waitForDelivery(keyId, jobId, (d) => d.attempts.length >= 1);
    assert.equal(waiting.state, 'pending', 'a delivery waiting for its retry is pending');
    assert.match(waiting.next_attempt_at ?? '', ISO);

    const all = await hook.waitFor(4, DELAYS[0] + DELAYS[1] + DELAYS[2] + 3000);
    for (let i = 1; i < 4; i++) assertGap(all[i - 1]!, all[i]!, DELAYS[i - 1]!, `retry ${i}`);
    for (const [i, req] of all.entries()) {
      assertSigned(req, secret, { label: `attempt ${i + 1}` });
      assert.ok(req.body.equals(all[0]!.body));
    }
    const firstTs = Number(header(all[0]!, 'x-svc-timestamp'));
    const lastTs = Number(header(all[3]!, 'x-svc-timestamp'));
    assert.ok(lastTs - firstTs >= 2, `each attempt is signed at its own time (${firstTs} → ${lastTs})`);

    await sleep(DELAYS[2] + 1500); // a wait for nothing: a fifth attempt would come after the last retry delay
    assert.equal(hook.requests.length, 4, 'no fifth attempt');
    const delivery = await waitForDelivery(keyId, jobId, (d) => d.state !== 'pending');
    assert.equal(delivery.state, 'failed');
    assert.equal(delivery.next_attempt_at, null);
    assert.deepEqual(
      delivery.attempts.map((a) => [a.attempt, a.status]),
      [
        [1, 500],
        [2, 500],
        [3, 500],
        [4, 500],
      ],
    );
    assert.equal((await auditAttempts(keyId, 4)).length, 4);
  });

  it('does not follow a redirect: a 3xx is retried and its Location is never called', async () => {
    const elsewhere = await receiver();
    const hook = await receiver(
      [
        { status: 307, headers: { location: elsewhere.url } },
        { status: 302, headers: { location: elsewhere.url } },
      ],
      200,
    );
    const { keyId, token, secret } = await keyWithHook(hook.url);
    const jobId = await submit(token);
    const received = await hook.waitFor(3, FIRST_DELIVERY_MS + DELAYS[0] + DELAYS[1] + 2000);
    for (const req of received) assertSigned(req, secret);
    const delivery = await waitForDelivery(keyId, jobId, (d) => d.state !== 'pending');
    assert.equal(delivery.state, 'delivered');
    assert.deepEqual(
      delivery.attempts.map((a) => a.status),
      [307, 302, 200],
    );
    await sleep(500); // a wait for nothing: the Location must never be requested
    assert.equal(elsewhere.requests.length, 0, 'the Location was never requested');
    assert.equal(hook.requests.length, 3);
  });

  it('signs the next deliveries with the new secret after a rotation (clear, then PUT)', async () => {
    const hook = await receiver();
    const { keyId, token, secret: oldSecret } = await keyWithHook(hook.url);
    await submit(token);
    const [beforeRotation] = await hook.waitFor(1, FIRST_DELIVERY_MS);
    assertSigned(beforeRotation!, oldSecret, { label: 'before the rotation' });
    await clearHook(keyId);
    const newSecret = await setHook(keyId, hook.url);
    assert.match(newSecret, /^whsec_/, 'the PUT after a clear generates a secret');
    assert.notEqual(newSecret, oldSecret);
    await submit(token);
    const [, afterRotation] = await hook.waitFor(2, FIRST_DELIVERY_MS);
    assertSigned(afterRotation!, newSecret, { label: 'after the rotation' });
    assert.ok(!verifies(afterRotation!, oldSecret), 'the old secret no longer verifies');
  });

  it('sends a retry to the URL set meanwhile: the URL is read at every attempt (a PUT keeps the secret)', async () => {
    // Rotating the secret means clearing the URL, which drops waiting retries (docs/webhooks.md, Rotating the secret; tested below);
    // a PUT over a URL that is set changes only the URL, and the waiting retry follows it.
    const oldHook = await receiver([500], 500);
    const newHook = await receiver();
    const moved = await keyWithHook(oldHook.url);
    const jobId = await submit(moved.token);
    const [first] = await oldHook.waitFor(1, FIRST_DELIVERY_MS);
    assert.equal(await setHook(moved.keyId, newHook.url), '', 'no new secret: the URL was set already');
    assert.ok(
      performance.now() - first!.at < DELAYS[0] * 0.8,
      'the URL changed before the retry was due (test set-up)',
    );
    const [retry] = await newHook.waitFor(1, DELAYS[0] + 3000);
    assert.equal(header(retry!, 'x-svc-delivery-id'), header(first!, 'x-svc-delivery-id'));
    assert.ok(retry!.body.equals(first!.body));
    assertSigned(retry!, moved.secret, { label: 'attempt 2 at the new URL' });
    const delivery = await waitForDelivery(moved.keyId, jobId, (d) => d.state !== 'pending');
    assert.equal(delivery.state, 'delivered');
    assert.deepEqual(
      delivery.attempts.map((a) => [a.url, a.status]),
      [
        [oldHook.url, 500],
        [newHook.url, 200],
      ],
    );
    assert.equal(oldHook.requests.length, 1, 'the old URL got only the first attempt');
  });

  it('sends nothing for a job submitted with a key that has no webhook', async () => {
    const hook = await receiver();
    // Two keys of one user: the webhook belongs to one key, not to the user.
    const hooked = await keyWithHook(hook.url);
    const bare = await admin.createKey(hooked.userId, ['image:write']);
    const bareJob = await submit(bare.apiKey, 'no hook here');
    const hookedJob = await submit(hooked.token, 'hooked');
    const [req] = await hook.waitFor(1, FIRST_DELIVERY_MS);
    assert.equal(bodyOf(req!).job_id, hookedJob, 'deliveries are flowing');
    const bareEnd = await jobs.waitForEnd(bare.apiKey, bareJob);
    assert.equal(bareEnd.status, 'completed');
    await sleep(1500); // a wait for nothing: no delivery may come for the bare key's job
    assert.deepEqual(
      hook.requests.map((r) => bodyOf(r).job_id),
      [hookedJob],
      'no request for the job of the key without a webhook',
    );
    assert.deepEqual(await readDeliveries(service, bare.id), []);
  });

  it('stops a delivery waiting for its retry when the URL is cleared: state dropped', async () => {
    const hook = await receiver([], 500);
    const { keyId, token } = await keyWithHook(hook.url);
    const jobId = await submit(token);
    const [first] = await hook.waitFor(1, FIRST_DELIVERY_MS);
    await clearHook(keyId);
    assert.ok(
      performance.now() - first!.at < DELAYS[0] * 0.8,
      'cleared before the retry was due (test set-up)',
    );
    const delivery = await waitForDelivery(keyId, jobId, (d) => d.state !== 'pending', DELAYS[0] + 3000);
    assert.equal(delivery.state, 'dropped');
    assert.equal(delivery.next_attempt_at, null);
    assert.deepEqual(
      delivery.attempts.map((a) => a.status),
      [500],
    );
    await sleep(DELAYS[0] + DELAYS[1] + 500); // a wait for nothing: retries 2 and 3 would have come by now
    assert.equal(hook.requests.length, 1, 'no attempt after the URL was cleared');
  });

  it("delivers a revoked key's job", async () => {
    const hook = await receiver();
    const { userId, keyId, token, secret } = await keyWithHook(hook.url);
    const reader = await admin.createKey(userId, ['image:write']);
    const jobId = await submit(token, 'slow enough [sandbox:delay=1500]');
    const revoked = await admin.call('DELETE', `/keys/${keyId}`);
    assert.deepEqual([revoked.status, revoked.body], [200, { id: keyId, revoked: true }]);
    assert.equal(
      (await call(service.url, 'GET', '/api/v1/account', { token })).status,
      401,
      'the key is revoked',
    );
    assert.equal(
      (await readJob(service, reader.apiKey, jobId)).status,
      'processing',
      'revoked before the job ended',
    );

    const [req] = await hook.waitFor(1, FIRST_DELIVERY_MS);
    assertSigned(req!, secret, { event: 'job.completed' });
    assertBodyMatchesJob(bodyOf(req!), await readJob(service, reader.apiKey, jobId));
    const delivery = await waitForDelivery(keyId, jobId, (d) => d.state !== 'pending');
    assert.equal(delivery.state, 'delivered');
  });

  it('survives hostile receivers: a 10 MiB answer and a slow trickle', async () => {
    const hugeBytes = 10 * 1024 * 1024;
    const huge = (_req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(hugeBytes) });
      res.end(Buffer.alloc(hugeBytes, 0x61));
    };
    const trickle = (_req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.flushHeaders();
      const timer = setInterval(() => res.write('.'), 100);
      res.on('close', () => clearInterval(timer));
    };
    const hugeHook = await receiver([], huge);
    const trickleHook = await receiver([trickle], 200);
    const healthyHook = await receiver();
    const hugeKey = await keyWithHook(hugeHook.url);
    const trickleKey = await keyWithHook(trickleHook.url);
    const healthyKey = await keyWithHook(healthyHook.url);
    const [hugeJob, trickleJob, healthyJob] = await Promise.all([
      submit(hugeKey.token),
      submit(trickleKey.token),
      submit(healthyKey.token),
    ]);
    await Promise.all([hugeHook, trickleHook, healthyHook].map((h) => h.waitFor(1, FIRST_DELIVERY_MS)));

    const hugeDelivery = await waitForDelivery(hugeKey.keyId, hugeJob, (d) => d.state !== 'pending');
    assert.equal(hugeDelivery.state, 'delivered', 'a 2xx with a huge body is a success');
    assert.deepEqual(
      hugeDelivery.attempts.map((a) => a.status),
      [200],
    );
    assert.ok(hugeDelivery.attempts[0]!.duration_ms <= ATTEMPT_TIMEOUT_MS + 500, 'bounded by the time-out');

    const trickled = await waitForDelivery(trickleKey.keyId, trickleJob, (d) => d.attempts.length >= 1);
    const firstTrickle = trickled.attempts[0]!;
    assert.ok(
      firstTrickle.duration_ms <= ATTEMPT_TIMEOUT_MS + 500,
      `a trickling answer takes at most the time-out (${firstTrickle.duration_ms} ms)`,
    );
    assert.ok(
      firstTrickle.status === 200 || typeof firstTrickle.error === 'string',
      JSON.stringify(firstTrickle),
    );
    const trickling = trickleHook.requests[0]!;
    const closedAt = await until(
      'the service closes a trickling connection instead of reading it forever',
      () => trickling.closedAt,
      (at) => at !== undefined,
      ATTEMPT_TIMEOUT_MS + 2000,
      50,
    );
    assert.ok(closedAt! - trickling.at <= ATTEMPT_TIMEOUT_MS + 1000);

    const healthy = await waitForDelivery(healthyKey.keyId, healthyJob, (d) => d.state !== 'pending');
    assert.equal(healthy.state, 'delivered');
    assert.equal(service.proc.child.exitCode, null, 'the service is still running');
    const health = await call(service.url, 'GET', '/healthz');
    assert.equal(health.status, 200);
    // And it still delivers afterwards.
    const afterJob = await submit(healthyKey.token, 'after the storm');
    const [, afterReq] = await healthyHook.waitFor(2, FIRST_DELIVERY_MS);
    assert.equal(bodyOf(afterReq!).job_id, afterJob);
  });
});
