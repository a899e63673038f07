// The ended-job outbox (src/jobs/job-outbox.ts) over an in-memory jobs store and a real event channel, with
// a manual clock. Crash-safety, one step at a time: the process dying after the job's end was written (before
// announcing, while announcing, or between the subscribers' work and the confirmation), or a subscriber
// failing, leaves the job flagged, and the sweep — a minute after the end — announces it again until every
// subscriber has handled it; announcing twice changes nothing for an idempotent subscriber.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createManualClock } from '../../src/platform/core/clock.ts';
import { createDomainEvents, NotHandledYet } from '../../src/platform/core/domain-events.ts';
import { createJobOutbox, OUTBOX_GRACE_MS, type JobEvents } from '../../src/jobs/job-outbox.ts';
import type { JobRecord, JobsRepository } from '../../src/jobs/ports/jobs-repository.ts';
import { imageJobRecord } from '../helpers/job-records.ts';

const silent = pino({ level: 'silent' });

/** The two outbox calls of the jobs repository, over a map, as MongoDB answers them (oldest end first). */
function memoryJobs() {
  const stored = new Map<string, JobRecord>();
  let failNotified = false;
  const repository: Pick<JobsRepository, 'notifyDue' | 'notified'> = {
    async notifyDue(before, limit) {
      return [...stored.values()]
        .filter((job) => job.notify_due && job.completed_at!.getTime() < before.getTime())
        .sort((a, b) => a.completed_at!.getTime() - b.completed_at!.getTime())
        .slice(0, limit);
    },
    async notified(ids) {
      if (failNotified) throw new Error('the process died before the confirmation was written');
      for (const id of ids) stored.set(id, { ...stored.get(id)!, notify_due: false });
    },
  };
  return {
    repository,
    /** Step (1): the write that ends a job, its flag set with it. */
    end(id: string, at: number): JobRecord {
      const job: JobRecord = {
        ...imageJobRecord({ id, userId: 'usr_1', keyId: 'key_1', now: new Date(at) }),
        status: 'completed',
        notify_due: true,
        completed_at: new Date(at),
      };
      stored.set(id, job);
      return job;
    },
    flagged: (id: string) => stored.get(id)!.notify_due,
    failConfirmations(fail: boolean) {
      failNotified = fail;
    },
  };
}

/** An idempotent subscriber (a webhook delivery, an asset): its effect is recorded once per job. */
function idempotentSubscriber() {
  const done = new Set<string>();
  let calls = 0;
  let failing = false;
  return {
    handle: async (job: JobRecord) => {
      calls++;
      if (failing) throw new Error('the database is unavailable');
      done.add(job.id);
    },
    done,
    calls: () => calls,
    fail(on: boolean) {
      failing = on;
    },
  };
}

function setUp() {
  const clock = createManualClock();
  const jobs = memoryJobs();
  const events = createDomainEvents<JobEvents>({ log: silent });
  const outbox = createJobOutbox({ jobs: jobs.repository, events, clock, logger: silent });
  const webhooks = idempotentSubscriber();
  const assets = idempotentSubscriber();
  events.subscribe('job.finished', webhooks.handle);
  events.subscribe('job.finished', assets.handle);
  return { clock, jobs, events, outbox, webhooks, assets };
}

describe('job outbox', () => {
  it('announces a job that just ended to every subscriber, then clears its flag', async () => {
    const { clock, jobs, outbox, webhooks, assets } = setUp();
    const job = jobs.end('job_live', clock.now());
    await outbox.announce(job);
    assert.deepEqual([[...webhooks.done], [...assets.done]], [['job_live'], ['job_live']]);
    assert.equal(jobs.flagged('job_live'), false);
    clock.advance(2 * OUTBOX_GRACE_MS);
    assert.equal(await outbox.sweep(), 0, 'nothing left for the sweep');
    assert.equal(webhooks.calls(), 1);
  });

  it('a crash after the end, before announcing: the sweep announces the job once the grace has passed', async () => {
    const { clock, jobs, outbox, webhooks, assets } = setUp();
    jobs.end('job_crash', clock.now()); // (1) written; the process dies before (2)
    assert.equal(await outbox.sweep(), 0, 'within the grace the live announcement may still be running');
    assert.equal(webhooks.calls(), 0);
    clock.advance(OUTBOX_GRACE_MS + 1);
    assert.equal(await outbox.sweep(), 1);
    assert.deepEqual([[...webhooks.done], [...assets.done]], [['job_crash'], ['job_crash']]);
    assert.equal(jobs.flagged('job_crash'), false);
  });

  it('a crash between the subscribers’ work and the confirmation: announced again, nothing done twice', async () => {
    const { clock, jobs, outbox, webhooks, assets } = setUp();
    const job = jobs.end('job_half', clock.now());
    jobs.failConfirmations(true); // (2) done, (3) never written
    await outbox.announce(job); // never rejects
    assert.equal(jobs.flagged('job_half'), true);
    jobs.failConfirmations(false);
    clock.advance(OUTBOX_GRACE_MS + 1);
    assert.equal(await outbox.sweep(), 1);
    assert.equal(webhooks.calls(), 2, 'told twice');
    assert.deepEqual([[...webhooks.done], [...assets.done]], [['job_half'], ['job_half']], 'done once');
    assert.equal(jobs.flagged('job_half'), false);
  });

  it('a failing subscriber keeps the job flagged until it succeeds; the others are told again harmlessly', async () => {
    const { clock, jobs, outbox, webhooks, assets } = setUp();
    assets.fail(true);
    await outbox.announce(jobs.end('job_fail', clock.now()));
    assert.equal(jobs.flagged('job_fail'), true);
    assert.deepEqual([...webhooks.done], ['job_fail'], 'the other subscriber did its work regardless');
    clock.advance(OUTBOX_GRACE_MS + 1);
    assert.equal(await outbox.sweep(), 0, 'still failing: not confirmed');
    assert.equal(jobs.flagged('job_fail'), true);
    assets.fail(false);
    assert.equal(await outbox.sweep(), 1);
    assert.equal(jobs.flagged('job_fail'), false);
    assert.deepEqual([...assets.done], ['job_fail']);
    assert.equal(webhooks.calls(), 3);
    assert.equal(await outbox.sweep(), 0);
    assert.equal(webhooks.calls(), 3, 'a confirmed job is not announced again');
  });

  it('a subscriber not ready yet (NotHandledYet) keeps the job flagged like a failure', async () => {
    const { clock, jobs, events, outbox } = setUp();
    let ready = false;
    events.subscribe('job.finished', () => {
      if (!ready) throw new NotHandledYet('its turn adds it');
    });
    await outbox.announce(jobs.end('job_later', clock.now()));
    assert.equal(jobs.flagged('job_later'), true);
    ready = true;
    clock.advance(OUTBOX_GRACE_MS + 1);
    assert.equal(await outbox.sweep(), 1);
    assert.equal(jobs.flagged('job_later'), false);
  });

  it('goes through every flagged job in batches, and stops at a batch holding a job it could not confirm', async () => {
    const { clock, jobs, events, outbox } = setUp();
    const ended = 1203;
    for (let i = 0; i < ended; i++) jobs.end(`job_${String(i).padStart(5, '0')}`, clock.now() + i);
    clock.advance(OUTBOX_GRACE_MS + ended);
    let refuse = 'job_00600'; // in the second batch of 500
    events.subscribe('job.finished', (job) => {
      if (job.id === refuse) throw new Error('not now');
    });
    assert.equal(await outbox.sweep(), 999, 'two batches read; the second is not read again this time');
    assert.equal(jobs.flagged('job_00600'), true);
    assert.equal(jobs.flagged('job_01202'), true, 'the third batch waits for the next sweep');
    refuse = '';
    assert.equal(await outbox.sweep(), ended - 999);
    for (const id of ['job_00000', 'job_00600', 'job_01202']) assert.equal(jobs.flagged(id), false, id);
  });
});
