// The webhook service against a real MongoDB-wire server (deliveries, jobs and keys repositories), real
// receivers on loopback and the real egress guard, driven by a manual clock and a recording scheduler:
// announcements are stored once and scheduled once, early runs wait, the jobs' outbox sweep announces jobs
// whose announcement was lost (the service subscribed to `job.finished`, as the feature wires it), the
// webhooks' sweep reschedules overdue deliveries, and a DNS name that rebinds to loopback between attempts
// never reaches it.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Db } from 'mongodb';
import { pino } from 'pino';
import { createManualClock } from '../../src/platform/core/clock.ts';
import { createMongoApiKeys } from '../../src/accounts/mongo/api-keys.ts';
import { createMongoJobs } from '../../src/jobs/mongo-jobs.ts';
import { createMongoWebhookDeliveries } from '../../src/webhooks/mongo-deliveries.ts';
import { jobsOnServer } from '../../src/jobs/mongo-jobs.ts';
import { webhookDeliveriesOnServer } from '../../src/webhooks/mongo-deliveries.ts';
import { createGuardedFetch } from '../../src/platform/net/guarded-fetch.ts';
import { createWebhooks, deliveryIdOf } from '../../src/webhooks/webhooks-service.ts';
import { createJobOutbox, type JobEvents } from '../../src/jobs/job-outbox.ts';
import { createDomainEvents } from '../../src/platform/core/domain-events.ts';
import { type WebhookPost } from '../../src/webhooks/ports/webhook-post.ts';
import type { AuditEntry } from '../../src/platform/audit/audit-sink.ts';
import type { ApiKeysRepository } from '../../src/accounts/ports/api-keys-repository.ts';
import type { JobRecord, JobsRepository } from '../../src/jobs/ports/jobs-repository.ts';
import type { WebhookDeliveriesRepository } from '../../src/webhooks/ports/webhook-deliveries-repository.ts';
import { compatOf, useMongoClient } from '../helpers/mongo.ts';
import { imageJobRecord } from '../helpers/job-records.ts';

const SECRET = 'whsec_integration_secret';
const DELAYS = [1000, 2000, 3000];
const MINUTE = 60_000;

describe('webhook service (manual clock, real repositories and receivers)', () => {
  const mongo = useMongoClient();
  const clock = createManualClock(Date.UTC(2026, 10, 21));
  let db: Db;
  let keys: ApiKeysRepository;
  let jobs: JobsRepository;
  let deliveries: WebhookDeliveriesRepository;
  const scheduled: Array<{ id: string; delayMs: number }> = [];
  const audited: AuditEntry[] = [];
  let receiver: http.Server;
  let receiverUrl: string;
  const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
  let answer = 200;
  let keyNo = 0;
  let jobNo = 0;

  const service = (post: WebhookPost, allowPrivate: boolean) =>
    createWebhooks({
      deliveries,
      keys,
      audit: { append: async (entry) => void audited.push(entry) },
      post,
      schedule: (id, delayMs) => void scheduled.push({ id, delayMs }),
      clock,
      logger: pino({ level: 'silent' }),
      retryDelaysMs: DELAYS,
      timeoutMs: 1000,
      allowPrivate,
      retentionDays: 30,
    });
  let webhooks: ReturnType<typeof service>;

  before(async () => {
    db = mongo.client.db('webhooks');
    keys = await createMongoApiKeys(db);
    const compat = await compatOf(db); // built as the service wires them
    jobs = jobsOnServer(compat, await createMongoJobs(db));
    deliveries = webhookDeliveriesOnServer(compat, await createMongoWebhookDeliveries(db));
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
        res.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    webhooks = service(createGuardedFetch().post, true);
  });
  after(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

  async function key(url: string | null): Promise<string> {
    const id = `key_wh${++keyNo}`;
    await keys.create({
      id,
      user_id: 'usr_1',
      name: '',
      scopes: ['image:write'],
      hash: `hash_${id}`,
      prefix: 'sk_test',
      created_at: new Date(clock.now()),
      revoked_at: null,
      webhook: url ? { url, secret: SECRET } : null,
    });
    return id;
  }

  /** A job that completed now (clock time), submitted with `keyId`, stored as the completion writes it. */
  async function completedJob(keyId: string): Promise<JobRecord> {
    const draft = imageJobRecord({
      id: `job_wh${++jobNo}`,
      userId: 'usr_1',
      keyId,
      now: new Date(clock.now()),
    });
    await jobs.insert({
      ...draft,
      status: 'processing',
      provider: { endpoint: 'fal-ai/nano-banana', requestId: 'r1' },
    });
    const done = await jobs.finish(
      draft.id,
      ['processing'],
      { status: 'completed', result: { images: ['http://media.test/media/a.png'] }, media_ids: [] },
      new Date(clock.now()),
    );
    return done!;
  }

  const scheduledFor = (id: string) => scheduled.filter((entry) => entry.id === id);

  it('stores one delivery per job and schedules it once, at once; a key without a URL gets none', async () => {
    const job = await completedJob(await key(receiverUrl));
    await webhooks.jobFinished(job);
    await webhooks.jobFinished(job); // announced twice (a redelivered poll, the sweeper): still one
    const id = deliveryIdOf(job.id);
    assert.deepEqual(scheduledFor(id), [{ id, delayMs: 0 }]);
    const stored = await deliveries.get(id);
    assert.equal(stored?.state, 'pending');
    assert.equal(stored?.event, 'job.completed');
    const body = JSON.parse(stored!.body) as Record<string, unknown>;
    assert.equal(body.model, 'fal-ai/nano-banana', 'model is the provider endpoint id');
    assert.deepEqual(body.result, { images: ['http://media.test/media/a.png'] });

    const silent = await completedJob(await key(null));
    await webhooks.jobFinished(silent);
    assert.equal(await deliveries.get(deliveryIdOf(silent.id)), null);
    assert.equal(scheduledFor(deliveryIdOf(silent.id)).length, 0);
  });

  it('waits when run early, then sends the signed body and schedules the retry the answer calls for', async () => {
    const job = await completedJob(await key(receiverUrl));
    await webhooks.jobFinished(job);
    const id = deliveryIdOf(job.id);
    clock.advance(-500); // a run that comes before its time (a resume, a redelivery) sends nothing
    assert.equal(await webhooks.attempt(id), 500);
    clock.advance(500);
    const before = received.length;
    answer = 503;
    assert.equal(await webhooks.attempt(id), DELAYS[0]);
    answer = 200;
    assert.equal(await webhooks.attempt(id), DELAYS[0], 'the retry is not due yet');
    clock.advance(DELAYS[0]!);
    assert.equal(await webhooks.attempt(id), 'done');
    const sent = received.slice(before);
    assert.equal(sent.length, 2);
    const stored = await deliveries.get(id);
    for (const { headers, body } of sent) {
      assert.equal(body, stored!.body, 'the same bytes every attempt');
      const ts = headers['x-svc-timestamp'] as string;
      const v1 = createHmac('sha256', SECRET).update(`${ts}.${body}`).digest('hex');
      assert.equal(headers['x-svc-signature'], `t=${ts},v1=${v1}`);
      assert.equal(headers['x-svc-delivery-id'], id);
    }
    assert.equal(stored?.state, 'delivered');
    assert.deepEqual(
      stored?.attempts.map((a) => a.status),
      [503, 200],
    );
    const mine = audited.filter((entry) => entry.delivery_id === id);
    assert.deepEqual(
      mine.map((entry) => [entry.kind, entry.attempt, entry.status]),
      [
        ['webhook_attempt', 1, 503],
        ['webhook_attempt', 2, 200],
      ],
    );
    assert.equal(await webhooks.attempt(id), 'done', 'a delivered delivery is never sent again');
    assert.equal(received.length, before + 2);
  });

  it('announces, in the outbox sweep, a job whose announcement was lost, and reschedules an overdue delivery', async () => {
    const events = createDomainEvents<JobEvents>({ log: pino({ level: 'silent' }) });
    events.subscribe('job.finished', (job) => webhooks.jobFinished(job)); // as the webhooks feature does
    const outbox = createJobOutbox({ jobs, events, clock, logger: pino({ level: 'silent' }) });
    const lost = await completedJob(await key(receiverUrl)); // ended; its announcement never ran (a crash)
    assert.equal((await jobs.get(lost.id))?.notify_due, true);
    await outbox.sweep();
    await webhooks.sweep();
    assert.equal(await deliveries.get(deliveryIdOf(lost.id)), null, 'not within the grace period');
    clock.advance(2 * MINUTE);
    await outbox.sweep();
    await webhooks.sweep();
    const id = deliveryIdOf(lost.id);
    assert.equal((await deliveries.get(id))?.state, 'pending');
    assert.equal((await jobs.get(lost.id))?.notify_due, false, 'the flag is cleared once announced');
    assert.deepEqual(scheduledFor(id), [{ id, delayMs: 0 }]);
    clock.advance(2 * MINUTE); // nobody ran it (the schedule was lost too): the next sweep schedules it again
    await webhooks.sweep();
    assert.equal(scheduledFor(id).length, 2);
  });

  it('removes deliveries past retention', async () => {
    const job = await completedJob(await key(receiverUrl));
    await webhooks.jobFinished(job);
    clock.advance(31 * 24 * 60 * MINUTE);
    await webhooks.sweep();
    assert.equal(await deliveries.get(deliveryIdOf(job.id)), null);
  });

  it('never reaches loopback through a DNS name that rebinds between attempts', async () => {
    // What sits on loopback: counts every connection, TLS or not.
    let connections = 0;
    const internal = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
    const port = (internal.address() as AddressInfo).port;
    try {
      // The name first resolves to an address the policy takes as public (127.0.0.2: nothing listens
      // there on this port), then to 127.0.0.1. A second lookup at connect time would reach `internal`.
      let lookups = 0;
      const guard = createGuardedFetch({
        resolve: async () => [{ address: lookups++ === 0 ? '127.0.0.2' : '127.0.0.1', family: 4 }],
        isPublic: (ip) => ip === '127.0.0.2',
      });
      const strict = service(guard.post, false);
      const job = await completedJob(await key(`https://hooks.rebind.test:${port}/hook`));
      await strict.jobFinished(job);
      const id = deliveryIdOf(job.id);
      assert.equal(
        await strict.attempt(id),
        DELAYS[0],
        'the first attempt fails (nothing on the public address)',
      );
      clock.advance(DELAYS[0]!);
      assert.equal(await strict.attempt(id), DELAYS[1], 'the second is refused before connecting');
      const stored = await deliveries.get(id);
      assert.equal(stored?.attempts.length, 2);
      assert.equal(stored?.attempts[0]?.status, null);
      assert.match(stored?.attempts[1]?.error ?? '', /address|private|public|not allowed/i);
      assert.equal(lookups, 2, 'one lookup per attempt');
      assert.equal(connections, 0, 'loopback was never reached');
    } finally {
      await new Promise<void>((resolve) => internal.close(() => resolve()));
    }
  });
});
