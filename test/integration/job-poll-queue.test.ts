// The cluster-mode job poller on a real nats-server: first polls wait for their delay, "again" comes back
// after the poll interval, "done" ends the job's polling, a job scheduled many times (from several nodes) is
// queued once, two nodes share the jobs without ever polling one job twice at once, and a node that dies
// mid-poll hands its job to the other after ack_wait.
import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { createJetStreamPollQueue, JOBS_STREAM } from '../../src/jobs/job-poll-queue.ts';
import type { PollVerdict } from '../../src/platform/scheduling/work-scheduler.ts';
import { startNats, skipWithoutNats, type TestNats } from '../helpers/nats.ts';

const INTERVAL_MS = 100;
const ACK_WAIT_MS = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, limitMs = 15_000, what = 'condition') {
  const deadline = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** What one node's poll function saw: when each job was polled, and how many polls of a job ran at once. */
class PollLog {
  readonly times = new Map<string, number[]>();
  readonly nodes = new Map<string, Set<string>>();
  private readonly running = new Map<string, number>();
  overlaps = 0;

  async poll(node: string, jobId: string, verdict: () => PollVerdict | Promise<PollVerdict>) {
    this.times.set(jobId, [...(this.times.get(jobId) ?? []), Date.now()]);
    this.nodes.set(jobId, (this.nodes.get(jobId) ?? new Set()).add(node));
    const running = (this.running.get(jobId) ?? 0) + 1;
    if (running > 1) this.overlaps++;
    this.running.set(jobId, running);
    try {
      await sleep(5); // a provider round trip, so overlapping polls would actually overlap
      return await verdict();
    } finally {
      this.running.set(jobId, this.running.get(jobId)! - 1);
    }
  }

  count = (jobId: string) => this.times.get(jobId)?.length ?? 0;
}

describe('JetStream job poll queue', { skip: skipWithoutNats() }, () => {
  let nats: TestNats;
  const connections: NatsConnection[] = [];
  const queues: Array<{ close(): Promise<void> }> = [];
  const logger = pino({ level: 'silent' });

  beforeEach(async () => {
    nats = await startNats();
  });
  afterEach(async () => {
    for (const queue of queues.splice(0)) await queue.close().catch(() => undefined);
    for (const connection of connections.splice(0)) await connection.close().catch(() => undefined);
    await nats.stop();
  });

  async function node(poll: (jobId: string) => Promise<PollVerdict>, concurrency = 8) {
    const connection = await connect({ servers: nats.url });
    connections.push(connection);
    const queue = await createJetStreamPollQueue({
      connection,
      poll,
      intervalMs: INTERVAL_MS,
      jobLifetimeMs: 60_000,
      replicas: 1,
      ackWaitMs: ACK_WAIT_MS,
      concurrency,
      logger,
    });
    queues.push(queue);
    return { connection, queue };
  }

  it('polls after the delay, again every interval, and never after "done"', async () => {
    const log = new PollLog();
    const { queue } = await node((id) => log.poll('a', id, () => (log.count(id) < 4 ? 'again' : 'done')));
    const scheduledAt = Date.now();
    queue.schedule('job_a', 400);
    await until(() => log.count('job_a') === 4, 10_000, 'four polls');
    await sleep(5 * INTERVAL_MS); // a wait for nothing: no poll may come after "done"
    const times = log.times.get('job_a')!;
    assert.equal(times.length, 4, 'no poll after "done"');
    assert.ok(times[0]! - scheduledAt >= 390, `first poll after ${times[0]! - scheduledAt} ms`);
    for (let i = 1; i < times.length; i++) {
      assert.ok(times[i]! - times[i - 1]! >= INTERVAL_MS - 10, `gap ${times[i]! - times[i - 1]!} ms`);
    }
    const jsm = await jetstreamManager(connections[0]!);
    assert.equal((await jsm.streams.info(JOBS_STREAM)).state.messages, 0, 'a finished job leaves the queue');
  });

  it('queues a job once however often and from however many nodes it is scheduled', async () => {
    const log = new PollLog();
    const a = await node((id) => log.poll('a', id, () => (log.count(id) < 6 ? 'again' : 'done')));
    const b = await node((id) => log.poll('b', id, () => (log.count(id) < 6 ? 'again' : 'done')));
    for (let i = 0; i < 10; i++) {
      a.queue.schedule('job_twice', 0);
      b.queue.schedule('job_twice', 0);
    }
    await until(() => log.count('job_twice') === 6, 10_000, 'six polls');
    await sleep(5 * INTERVAL_MS); // a wait for nothing: no second chain of polls may follow
    assert.equal(log.count('job_twice'), 6, 'one chain of polls, not twenty');
    assert.equal(log.overlaps, 0);
  });

  it('shares jobs between nodes, never polling one job on two at once', async () => {
    const log = new PollLog();
    const verdict = (id: string): PollVerdict => (log.count(id) < 3 ? 'again' : 'done');
    const a = await node((id) => log.poll('a', id, () => verdict(id)));
    await node((id) => log.poll('b', id, () => verdict(id)));
    const jobs = Array.from({ length: 40 }, (_, i) => `job_${i}`);
    for (const id of jobs) a.queue.schedule(id, 0);
    await until(() => jobs.every((id) => log.count(id) >= 3), 20_000, 'every job done');
    await sleep(3 * INTERVAL_MS); // a wait for nothing: no fourth poll of any job
    assert.deepEqual(
      jobs.filter((id) => log.count(id) !== 3),
      [],
      'each job polled exactly three times',
    );
    assert.equal(log.overlaps, 0);
    const byNode = (name: string) => jobs.filter((id) => log.nodes.get(id)!.has(name)).length;
    assert.ok(byNode('a') > 0 && byNode('b') > 0, `node a polled ${byNode('a')} jobs, node b ${byNode('b')}`);
  });

  it('hands the job of a node that died mid-poll to another after ack_wait', async () => {
    const log = new PollLog();
    let release!: () => void;
    const stuck = new Promise<PollVerdict>((resolve) => (release = () => resolve('again')));
    const doomed = await node((id) => log.poll('doomed', id, () => stuck));
    doomed.queue.schedule('job_orphan', 0);
    await until(() => log.count('job_orphan') === 1, 10_000, 'the first poll');
    // The node vanishes without acknowledging (no drain, no nak), as a killed process would.
    await doomed.connection.close();
    const diedAt = Date.now();
    await node((id) => log.poll('survivor', id, () => 'done'));
    await until(() => log.count('job_orphan') === 2, 10_000, 'the survivor’s poll');
    const waited = log.times.get('job_orphan')![1]! - diedAt;
    assert.ok(waited <= ACK_WAIT_MS + 3000, `redelivered after ${waited} ms`);
    assert.deepEqual([...log.nodes.get('job_orphan')!].sort(), ['doomed', 'survivor']);
    release();
  });

  it('polls again after a poll that threw, and drops a malformed message without stopping', async () => {
    const log = new PollLog();
    const { queue, connection } = await node((id) =>
      log.poll('a', id, () => {
        if (log.count(id) === 1) throw new Error('database unreachable');
        return 'done';
      }),
    );
    connection.publish('mf.jobs.poll', 'not json');
    queue.schedule('job_retry', 0);
    await until(() => log.count('job_retry') === 2, 10_000, 'the retry');
    const [first, second] = log.times.get('job_retry')!;
    assert.ok(second! - first! >= INTERVAL_MS - 10, 'retried after the poll interval');
    const jsm = await jetstreamManager(connection);
    // The stream empties once the job is done and the garbage dropped (each acknowledged, no longer stored).
    let left = -1;
    for (const deadline = Date.now() + 5_000; Date.now() < deadline; await sleep(20)) {
      left = (await jsm.streams.info(JOBS_STREAM)).state.messages;
      if (left === 0) break;
    }
    assert.equal(left, 0, 'nothing left: garbage dropped');
  });
});
