// A cancel racing the end of a job, hundreds of times: the service as a process with the sandbox provider
// (short processing times, fast polls), a real MongoDB-wire server. Each iteration sends the DELETE close to
// the moment the job finishes, so that about half the cancels win and half arrive after completion (or after
// a scripted failure); every iteration must end in exactly one terminal state with the matching refund, and
// every user's balance and ledger must account for every job at the end, and every job must have been
// announced by exactly one webhook delivery naming the state it ended in.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, type ApiAnswer, type RunningService } from '../helpers/service.ts';
import { jobsClient, type Job } from '../helpers/jobs.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { assertSigned, bodyOf, header, hookedKeys, type HookedKey } from '../helpers/webhooks.ts';

const ITERATIONS = 300;
const USERS = 5;
/** Iterations in flight at once (the machine has 2 cores; ffmpeg renders every normal job). */
const CONCURRENCY = 4;
/** Every third iteration is scripted to fail, so a cancel also races the failure path (which refunds too). */
const FAIL_EVERY = 3;
const IMAGE_COST = 50;
const INITIAL_CREDITS = 10_000;
/** The sandbox's processing time of `[sandbox:fail]` jobs (normal jobs pick theirs per iteration). */
const SANDBOX_IMAGE_MS = 100;
const POLL_INTERVAL_MS = 25;
/** A won race must be at least this frequent for each outcome, or the test did not exercise the race. */
const MIN_SHARE = 0.1;

type Kind = 'normal' | 'fail';

/** What one iteration did and saw: printed with any failed assertion as the evidence. */
interface Iteration {
  index: number;
  user: number;
  kind: Kind;
  providerMs: number;
  cancelAfterMs: number;
  jobId?: string;
  cancel?: { status: number; body: unknown };
  job?: Job;
}

/**
 * Chooses when to send the DELETE, per kind: an up-down staircase on the offset from the provider's
 * processing time. A won cancel moves the next one later, a lost one earlier, so the offsets settle where the
 * job finishes (about half won) whatever the render queue and poll timing add; a jitter varies the delays
 * around that point. The step doubles while the outcome repeats and falls back at each reversal, so the
 * offsets also reach that point when a loaded machine makes renders take seconds, not milliseconds.
 */
function staircase(startMs: number, stepMs: number) {
  let offset = startMs;
  let step = stepMs;
  let lastWon: boolean | undefined;
  return {
    next: () => Math.max(0, offset + Math.round((Math.random() * 2 - 1) * 2 * stepMs)),
    record(won: boolean) {
      step = won === lastWon ? Math.min(2 * step, 64 * stepMs) : stepMs;
      lastWon = won;
      offset = Math.max(-SANDBOX_IMAGE_MS, offset + (won ? step : -step));
    },
  };
}

describe('a cancel racing the end of a job', () => {
  let mongo: TestMongo;
  let service: RunningService;
  let receiver: WebhookReceiver;

  before(async () => {
    receiver = await startWebhookReceiver();
    mongo = await startMongo();
    service = await startService({
      MONGO_URL: mongo.uri,
      SANDBOX_IMAGE_MS: String(SANDBOX_IMAGE_MS),
      PROVIDER_POLL_INTERVAL_MS: String(POLL_INTERVAL_MS),
      // Far beyond any render wait: a time-out would be a third outcome this test is not about.
      PROVIDER_TIMEOUT_MS: '120000',
      RATE_LIMIT_PER_MINUTE: '1000000',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
    await receiver?.close();
  });

  const { balance, submitImage, getJob } = jobsClient(() => service);
  const EVENTS: Record<string, string> = {
    completed: 'job.completed',
    failed: 'job.failed',
    cancelled: 'job.cancelled',
  };

  it(`has exactly one terminal state and refund per job over ${ITERATIONS} races`, async (t) => {
    // Each user's one key has a webhook on the receiver: every job's end is announced there.
    const users: HookedKey[] = await Promise.all(
      Array.from({ length: USERS }, async (_, i) => {
        const [key] = await hookedKeys(service, 1, () => `${receiver.origin}/user/${i}`, INITIAL_CREDITS);
        return key!;
      }),
    );
    const stairs: Record<Kind, ReturnType<typeof staircase>> = {
      normal: staircase(40, 10),
      fail: staircase(20, 10),
    };
    const outcomes: Record<Kind, { won: number; lost: number }> = {
      normal: { won: 0, lost: 0 },
      fail: { won: 0, lost: 0 },
    };
    const done: Iteration[] = [];

    async function race(index: number): Promise<void> {
      const kind: Kind = index % FAIL_EVERY === FAIL_EVERY - 1 ? 'fail' : 'normal';
      // Normal jobs vary the provider's processing time (50..150 ms) through the delay marker.
      const providerMs = kind === 'fail' ? SANDBOX_IMAGE_MS : 50 + Math.floor(Math.random() * 101);
      const run: Iteration = {
        index,
        user: index % USERS,
        kind,
        providerMs,
        cancelAfterMs: providerMs + stairs[kind].next(),
      };
      const evidence = () => `iteration ${JSON.stringify(run)}`;
      const { token } = users[run.user]!;
      const marker = kind === 'fail' ? '[sandbox:fail]' : `[sandbox:delay=${providerMs}]`;

      const submitted = await submitImage(token, { prompt: `race ${index} ${marker}` });
      assert.equal(submitted.status, 202, `${evidence()} ${JSON.stringify(submitted.body)}`);
      assert.equal(submitted.body.credits_consumed, IMAGE_COST, evidence());
      run.jobId = submitted.body.job_id as string;
      await sleep(run.cancelAfterMs);
      const cancel = await call(service.url, 'DELETE', `/api/v1/jobs/${run.jobId}`, { token });
      run.cancel = { status: cancel.status, body: cancel.body };
      // No wait: after a 200 the job is cancelled, after a 409 it already left processing for good.
      const read = await getJob(token, run.jobId);
      assert.equal(read.status, 200, evidence());
      run.job = read.body;

      const won = cancel.status === 200;
      if (won) {
        assert.deepEqual(
          cancel.body,
          { job_id: run.jobId, status: 'cancelled', refunded_credits: IMAGE_COST },
          evidence(),
        );
        assert.deepEqual(
          [run.job.status, run.job.refunded_credits, run.job.result, run.job.error],
          ['cancelled', IMAGE_COST, null, null],
          evidence(),
        );
      } else {
        assert.equal(cancel.status, 409, evidence());
        if (kind === 'normal') {
          assert.deepEqual([run.job.status, run.job.refunded_credits], ['completed', 0], evidence());
          assert.equal(run.job.result?.images?.length, 1, evidence());
        } else {
          assert.deepEqual([run.job.status, run.job.refunded_credits], ['failed', IMAGE_COST], evidence());
          assert.match(run.job.error ?? '', /failed/, evidence());
        }
      }
      assert.equal(run.job.credits_consumed, IMAGE_COST, evidence());
      assert.ok(run.job.completed_at, evidence());
      stairs[kind].record(won);
      outcomes[kind][won ? 'won' : 'lost']++;
      done.push(run);
    }

    // A few workers take the iterations in turn; the first failure stops them from starting new ones, and
    // is reported once every worker has finished the iteration it was running.
    let nextIndex = 0;
    let firstError: unknown;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (firstError === undefined && nextIndex < ITERATIONS) {
          try {
            await race(nextIndex++);
          } catch (error) {
            firstError ??= error;
          }
        }
      }),
    );
    if (firstError !== undefined) throw firstError;
    const won = outcomes.normal.won + outcomes.fail.won;
    t.diagnostic(
      `${ITERATIONS} races in ${Date.now() - started} ms: cancel won ${won}, lost ${ITERATIONS - won} ` +
        `(normal ${outcomes.normal.won}/${outcomes.normal.lost}, fail ${outcomes.fail.won}/${outcomes.fail.lost})`,
    );
    // Both outcomes, for both kinds, often enough that the race itself was exercised.
    for (const kind of ['normal', 'fail'] as const) {
      const { won: kindWon, lost } = outcomes[kind];
      const total = kindWon + lost;
      assert.ok(kindWon >= MIN_SHARE * total, `${kind}: cancel won only ${kindWon} of ${total}`);
      assert.ok(lost >= MIN_SHARE * total, `${kind}: cancel lost only ${lost} of ${total}`);
    }

    for (const [userNo, user] of users.entries()) {
      const mine = new Map(done.filter((r) => r.user === userNo).map((r) => [r.jobId!, r]));
      // Every job of the user, as the list shows it once none is left processing (all should be already).
      let listed: Job[];
      const deadline = Date.now() + 10_000;
      for (;;) {
        listed = [];
        let cursor: string | null = null;
        do {
          const page: ApiAnswer<{ jobs: Job[]; next_cursor: string | null }> = await call(
            service.url,
            'GET',
            `/api/v1/jobs?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
            { token: user.token },
          );
          assert.equal(page.status, 200);
          listed.push(...page.body.jobs);
          cursor = page.body.next_cursor;
        } while (cursor);
        if (listed.every((job) => job.status !== 'processing')) break;
        assert.ok(Date.now() < deadline, `user ${userNo}: jobs still processing ${JSON.stringify(listed)}`);
        await sleep(100);
      }
      assert.deepEqual(new Set(listed.map((job) => job.job_id)), new Set(mine.keys()), `user ${userNo}`);
      for (const job of listed) {
        const run = mine.get(job.job_id)!;
        assert.deepEqual(
          [job.status, job.refunded_credits],
          [run.job!.status, run.job!.refunded_credits],
          `a terminal job changed later: ${JSON.stringify(job)} ${JSON.stringify(run)}`,
        );
      }

      const completed = listed.filter((job) => job.status === 'completed').length;
      assert.equal(
        await balance(user.token),
        INITIAL_CREDITS - IMAGE_COST * completed,
        `user ${userNo}: only completed jobs keep their charge`,
      );

      const ledger = await call<{
        entries: Array<{ delta: number; balance_after: number; op_id: string; job_id?: string }>;
      }>(service.url, 'GET', `/api/admin/v1/users/${user.userId}/ledger`, { token: service.adminToken });
      assert.equal(ledger.status, 200);
      const { entries } = ledger.body;
      // Newest first: each entry starts from the balance the one before it left.
      for (let i = 0; i + 1 < entries.length; i++) {
        assert.equal(
          entries[i]!.balance_after - entries[i]!.delta,
          entries[i + 1]!.balance_after,
          `user ${userNo}: ledger chain broken at ${JSON.stringify(entries[i])}`,
        );
      }
      assert.equal(entries[0]?.balance_after, INITIAL_CREDITS - IMAGE_COST * completed);
      const byJob = new Map<string, typeof entries>();
      for (const entry of entries.filter((e) => e.job_id !== undefined)) {
        byJob.set(entry.job_id!, [...(byJob.get(entry.job_id!) ?? []), entry]);
      }
      assert.deepEqual(new Set(byJob.keys()), new Set(mine.keys()), `user ${userNo}: ledger jobs`);
      for (const job of listed) {
        const jobEntries = byJob.get(job.job_id)!;
        const debits = jobEntries.filter((e) => e.op_id === `${job.job_id}:debit`);
        const refunds = jobEntries.filter((e) => e.op_id === `${job.job_id}:refund`);
        const evidence = `${JSON.stringify(jobEntries)} ${JSON.stringify(mine.get(job.job_id))}`;
        assert.equal(jobEntries.length, debits.length + refunds.length, `unexpected entries ${evidence}`);
        assert.deepEqual(
          debits.map((e) => e.delta),
          [-IMAGE_COST],
          `exactly one debit per job ${evidence}`,
        );
        assert.deepEqual(
          refunds.map((e) => e.delta),
          job.status === 'completed' ? [] : [IMAGE_COST],
          `one refund for a cancelled or failed job, none for a completed one ${evidence}`,
        );
      }
    }

    // One delivery per job, signed with its user's secret, naming the state the job ended in.
    await receiver.waitFor(ITERATIONS, 30_000);
    await sleep(500); // nothing more may come
    assert.equal(receiver.requests.length, ITERATIONS, 'exactly one delivery per job');
    const runs = new Map(done.map((run) => [run.jobId!, run]));
    const deliveryIds = new Set<string>();
    for (const req of receiver.requests) {
      const body = bodyOf(req);
      const run = runs.get(body.job_id);
      assert.ok(run, `a delivery for a job of this test: ${body.job_id}`);
      assert.equal(req.path, `/user/${run.user}`);
      assertSigned(req, users[run.user]!.secret, { event: EVENTS[run.job!.status] });
      assert.deepEqual(
        [body.status, body.error === null, body.result === null],
        [run.job!.status, run.job!.error === null, run.job!.result === null],
        `the delivery tells the state the job ended in: ${JSON.stringify(body)} ${JSON.stringify(run)}`,
      );
      deliveryIds.add(header(req, 'x-svc-delivery-id'));
      runs.delete(body.job_id);
    }
    assert.equal(deliveryIds.size, ITERATIONS);
    assert.equal(runs.size, 0, 'every job was announced');
  });
});
