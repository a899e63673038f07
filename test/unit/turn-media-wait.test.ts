// A turn waiting for its media's job (src/editor/turns/turn-media.ts): it hears the job end as `job.finished`
// instead of polling the jobs store; it reads the job once at the start (it may have ended already), and, in
// cluster mode only, again every `recheckMs` (another node may end it, whose event never reaches this one);
// it announces `media.progress` while it waits, and stops waiting at once when the turn loses its project.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import type { ProjectCommands } from '../../actors/index.ts';
import { createDomainEvents } from '../../src/platform/core/domain-events.ts';
import type { JobEvents } from '../../src/jobs/job-outbox.ts';
import type { JobRecord } from '../../src/jobs/ports/jobs-repository.ts';
import { createTurnMedia } from '../../src/editor/turns/turn-media.ts';
import { TurnLost, TurnSession, type TurnEventDraft } from '../../src/editor/turns/turn-session.ts';
import { imageJobRecord } from '../helpers/job-records.ts';

const silent = pino({ level: 'silent' });
const JOB_ID = 'job_wait1';

function setUp(options: { recheckMs?: number; progressIntervalMs?: number } = {}) {
  const events = createDomainEvents<JobEvents>({ log: silent });
  const base = imageJobRecord({ id: JOB_ID, userId: 'usr_1', keyId: 'key_1', now: new Date() });
  let stored: JobRecord = { ...base, status: 'processing', origin: originOf() };
  let reads = 0;
  const sent: TurnEventDraft[] = [];
  const added: string[] = [];
  const commands = {
    turn_events: async (_projectId: string, message: { events: TurnEventDraft[] }) => {
      sent.push(...message.events);
      return { events: [] };
    },
  } as unknown as ProjectCommands;
  const media = createTurnMedia({
    jobsService: {
      submitImage: async () => ({
        job_id: JOB_ID,
        status: 'processing' as const,
        model: 'imgmodel-2',
        credits_consumed: 50,
        credits_remaining: 950,
        poll_url: `/api/v1/jobs/${JOB_ID}`,
      }),
      submitVideo: () => Promise.reject(new Error('not used')),
    },
    jobs: {
      get: async () => {
        reads++;
        return stored;
      },
    },
    jobEvents: events,
    generated: {
      add: async (job) => {
        added.push(job.id);
        return { asset: { id: `va_${job.id}` }, events: [] } as never;
      },
    },
    ...(options.recheckMs !== undefined ? { recheckMs: options.recheckMs } : {}),
    progressIntervalMs: options.progressIntervalMs ?? 60_000,
    logger: silent,
  });
  const session = new TurnSession(
    commands,
    { userId: 'usr_1', keyId: 'key_1', scopes: ['video-editor:write'] },
    'vp_1',
    'vv_1',
    'turn_1',
  );
  const generate = () => media.image(session, { prompt: 'a lighthouse' }, '16:9', [], () => '');
  return {
    events,
    session,
    generate,
    sent,
    added,
    reads: () => reads,
    /** The job as the jobs slice ends it: the store first, then (in the process that ended it) the event. */
    end(): JobRecord {
      stored = { ...stored, status: 'completed', media_ids: ['med_1.png'], completed_at: new Date() };
      return stored;
    },
  };
}

const originOf = () => ({ project_id: 'vp_1', video_id: 'vv_1', turn_id: 'turn_1' });

describe('turn media: waiting for the job', () => {
  it('hears the job end as job.finished, reading the store only once (single node)', async () => {
    const t = setUp();
    const outcome = t.generate();
    await sleep(50);
    assert.equal(t.reads(), 1, 'no polling while the job runs');
    assert.deepEqual(t.added, []);
    const started = Date.now();
    await t.events.publish('job.finished', t.end());
    const result = await outcome;
    // Nothing else could end it: a single node never reads the job again (reads stays 1). The bound is loose
    // so that a loaded machine's late timers do not count.
    assert.ok(Date.now() - started < 1000, 'the event ends the wait');
    assert.equal(result.ok, true);
    assert.deepEqual(t.added, [JOB_ID]);
    assert.equal(t.reads(), 1);
  });

  it('ignores other jobs’ ends', async () => {
    const t = setUp();
    const outcome = t.generate();
    await sleep(10);
    await t.events.publish('job.finished', { ...t.end(), id: 'job_other' });
    await sleep(30);
    assert.deepEqual(t.added, [], 'still waiting');
    await t.events.publish('job.finished', t.end());
    assert.equal((await outcome).ok, true);
  });

  it('finds a job that ended before the turn listened in its first read', async () => {
    const t = setUp();
    t.end(); // ended, and its event told, before the turn waits
    const result = await t.generate();
    assert.equal(result.ok, true);
    assert.equal(t.reads(), 1);
  });

  it('in cluster mode reads the job again every recheckMs: a job ended on another node reaches the turn', async () => {
    const t = setUp({ recheckMs: 20 });
    const outcome = t.generate();
    // Waits for the rereads rather than a fixed time (a loaded machine delays timers); the job ends in any case,
    // so a failure never leaves the wait running.
    let readsWhileRunning: number;
    try {
      for (const stop = Date.now() + 5000; t.reads() < 3 && Date.now() < stop;) await sleep(10);
      readsWhileRunning = t.reads();
      assert.ok(readsWhileRunning >= 3, `${readsWhileRunning} reads in 5 s with a 20 ms recheck`);
    } finally {
      t.end(); // on another node: the store changes, no event here
    }
    const result = await outcome;
    assert.equal(result.ok, true);
    assert.ok(t.reads() <= readsWhileRunning + 2);
  });

  it('announces media.progress while it waits', async () => {
    const t = setUp({ progressIntervalMs: 25 });
    const outcome = t.generate();
    await sleep(90);
    await t.events.publish('job.finished', t.end());
    await outcome;
    const progress = t.sent.filter((event) => event.type === 'media.progress');
    assert.ok(progress.length >= 2, `${progress.length} progress events`);
    const elapsed = progress.map((event) => Number(event.data.elapsed_ms));
    assert.deepEqual(
      elapsed,
      [...elapsed].sort((a, b) => a - b),
    );
    assert.ok(elapsed[0]! >= 25);
    assert.equal(t.reads(), 1, 'progress reads nothing');
  });

  it('stops waiting at once when the turn loses its project (the job goes on without it)', async () => {
    const t = setUp();
    const outcome = t.generate();
    await sleep(20);
    const lostAt = Date.now();
    t.session.markLost();
    await assert.rejects(outcome, TurnLost);
    assert.ok(Date.now() - lostAt < 40);
    await t.events.publish('job.finished', t.end());
    assert.deepEqual(t.added, [], 'a lost turn adds nothing (the editor’s job.finished subscriber does)');
  });
});
