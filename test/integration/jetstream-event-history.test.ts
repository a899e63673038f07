// The cluster-mode event history on a real nats-server: events the bus publishes on core NATS are captured by
// MF_EVENTS and replayed from there when JetStream provably holds every event after the asked seq; anything
// else (nothing kept, a hole, an older start, a missing stream, a stopped server) is asked of the durable
// history, here an in-memory fake that counts its calls.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { createNatsEventBus, eventSubject } from '../../src/platform/nats/event-bus.ts';
import { createJetStreamEventHistory } from '../../src/editor/jetstream-event-history.ts';
import { EVENTS_STREAM, ensureEventsStream } from '../../src/editor/events-stream.ts';
import type { EventBus } from '../../src/platform/core/event-bus.ts';
import type { EventHistory, ProjectEvent } from '../../actors/ports/event-history.ts';
import { skipWithoutNats, startNats, type TestNats } from '../helpers/nats.ts';
import { until } from '../helpers/wait.ts';

const HOUR_MS = 3_600_000;
const KEEP = 5;
const STREAM_OPTIONS = { replicas: 1, maxAgeMs: HOUR_MS, maxPerProject: KEEP };

/** An in-memory durable history that counts how often it is asked. */
function fakeDurable() {
  const projects = new Map<string, ProjectEvent[]>();
  const calls = { since: 0, deleteProject: 0 };
  const history: EventHistory = {
    async append(projectId, events) {
      const first = events[0]?.seq ?? Infinity;
      const kept = (projects.get(projectId) ?? []).filter((event) => event.seq < first);
      projects.set(projectId, [...kept, ...structuredClone(events)]);
    },
    async since(projectId, afterSeq) {
      calls.since++;
      return { events: (projects.get(projectId) ?? []).filter((e) => e.seq > afterSeq), complete: true };
    },
    async deleteProject(projectId) {
      calls.deleteProject++;
      projects.delete(projectId);
    },
  };
  return { history, calls, projects };
}

const event = (projectId: string, seq: number): ProjectEvent => ({
  type: 'clip.updated',
  seq,
  ts: new Date(1_700_000_000_000 + seq).toISOString(),
  project_id: projectId,
  video_id: null,
  turn_id: null,
  data: { clip: { id: `clip_${seq}` }, revision: seq },
});

const seqs = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('JetStream event history', { skip: skipWithoutNats() }, () => {
  let nats: TestNats;
  /** The replaying node. */
  let reader: NatsConnection;
  /** The node whose project actor publishes. */
  let publisher: NatsConnection;
  let bus: EventBus;
  let jsm: JetStreamManager;
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });

  before(async () => {
    nats = await startNats();
    reader = await connect({ servers: nats.url });
    publisher = await connect({ servers: nats.url });
    bus = createNatsEventBus({ connection: publisher, logger });
    jsm = await jetstreamManager(reader);
    await ensureEventsStream(reader, STREAM_OPTIONS);
  });

  after(async () => {
    await reader?.close();
    await publisher?.close();
    await nats?.stop();
  });

  /** The seq of the newest event MF_EVENTS holds for the project (0: none, -1: not an event). */
  async function storedHead(projectId: string, manager = jsm): Promise<number> {
    const stored = await manager.streams
      .getMessage(EVENTS_STREAM, { last_by_subj: eventSubject(`project.${projectId}`) })
      .catch(() => null);
    if (!stored) return 0;
    try {
      return stored.json<ProjectEvent>().seq ?? 0;
    } catch {
      return -1; // an unreadable message a test put there on purpose is the newest one for now
    }
  }

  /** What the project actor does: append to the history before commit, publish on the bus after it. */
  async function record(history: EventHistory, projectId: string, list: number[], publish = list) {
    const events = list.map((seq) => event(projectId, seq));
    await history.append(projectId, events, new Date());
    for (const e of events) if (publish.includes(e.seq)) await bus.publish(`project.${projectId}`, e);
    const last = Math.max(...publish);
    await until(
      `MF_EVENTS holds seq ${last} of ${projectId}`,
      () => storedHead(projectId),
      (head) => head === last,
      5000,
      10,
    );
  }

  function historyWith(durable: EventHistory, readTimeoutMs?: number) {
    return createJetStreamEventHistory({ connection: reader, durable, logger, readTimeoutMs });
  }

  it('creates MF_EVENTS from two nodes at once with the asked limits, and brings it to new limits', async () => {
    await jsm.streams.delete(EVENTS_STREAM);
    await Promise.all([
      ensureEventsStream(reader, STREAM_OPTIONS),
      ensureEventsStream(publisher, STREAM_OPTIONS),
    ]);
    const { config } = await jsm.streams.info(EVENTS_STREAM);
    assert.deepEqual(config.subjects, ['mf.events.project.*']);
    assert.equal(config.storage, 'file');
    assert.equal(config.retention, 'limits');
    assert.equal(config.discard, 'old');
    assert.equal(config.max_age, HOUR_MS * 1_000_000, 'max_age is in nanoseconds');
    assert.equal(config.max_msgs_per_subject, KEEP);
    assert.equal(config.num_replicas, 1);

    await Promise.all([
      ensureEventsStream(reader, { ...STREAM_OPTIONS, maxAgeMs: 60_000, maxPerProject: 9 }),
      ensureEventsStream(publisher, { ...STREAM_OPTIONS, maxAgeMs: 60_000, maxPerProject: 9 }),
    ]);
    const updated = (await jsm.streams.info(EVENTS_STREAM)).config;
    assert.equal(updated.max_age, 60_000 * 1_000_000);
    assert.equal(updated.max_msgs_per_subject, 9);
    await ensureEventsStream(reader, STREAM_OPTIONS);
    assert.equal((await jsm.streams.info(EVENTS_STREAM)).config.max_msgs_per_subject, KEEP);
  });

  it('replays published events from JetStream for every since, without asking the durable history', async () => {
    const durable = fakeDurable();
    const history = historyWith(durable.history);
    await record(history, 'replay', seqs(1, KEEP));
    for (const after of [0, 1, 3, KEEP - 1]) {
      const answer = await history.since('replay', after);
      assert.deepEqual(answer, {
        events: seqs(after + 1, KEEP).map((s) => event('replay', s)),
        complete: true,
      });
    }
    assert.equal(durable.calls.since, 0);
  });

  it('does not replay one project’s events to another', async () => {
    const durable = fakeDurable();
    const history = historyWith(durable.history);
    await record(history, 'alpha', [1, 2]);
    await record(history, 'beta', [1, 2, 3]);
    await record(history, 'alpha', [3]);
    assert.deepEqual(
      (await history.since('alpha', 0)).events.map((e) => [e.project_id, e.seq]),
      [
        ['alpha', 1],
        ['alpha', 2],
        ['alpha', 3],
      ],
    );
    assert.deepEqual(
      (await history.since('beta', 1)).events.map((e) => [e.project_id, e.seq]),
      [
        ['beta', 2],
        ['beta', 3],
      ],
    );
    assert.equal(durable.calls.since, 0);
  });

  it('asks the durable history when JetStream holds nothing after the asked seq (at the head)', async () => {
    const durable = fakeDurable();
    const history = historyWith(durable.history);
    await record(history, 'head', [1, 2, 3]);
    assert.deepEqual(await history.since('head', 3), { events: [], complete: true });
    assert.equal(durable.calls.since, 1);
  });

  it('appends to the durable history only; JetStream gets events from the bus', async () => {
    const durable = fakeDurable();
    const history = historyWith(durable.history);
    await history.append('unpublished', [event('unpublished', 1), event('unpublished', 2)], new Date());
    assert.equal(durable.projects.get('unpublished')?.length, 2);
    assert.equal(await storedHead('unpublished'), 0);
    const answer = await history.since('unpublished', 0);
    assert.deepEqual(
      answer.events.map((e) => e.seq),
      [1, 2],
    );
    assert.equal(durable.calls.since, 1, 'answered by the durable history');
  });

  it('falls back to the durable history over a hole in JetStream, and uses JetStream after it', async () => {
    const durable = fakeDurable();
    const history = historyWith(durable.history);
    await record(history, 'hole', [1, 2, 3, 4, 5], [1, 2, 4, 5]); // seq 3 was never published
    const answer = await history.since('hole', 0);
    assert.deepEqual(
      answer.events.map((e) => e.seq),
      [1, 2, 3, 4, 5],
    );
    assert.equal(durable.calls.since, 1);
    assert.deepEqual(
      (await history.since('hole', 3)).events.map((e) => e.seq),
      [4, 5],
    );
    assert.equal(durable.calls.since, 1, 'after the hole JetStream is complete');
  });

  it('falls back when since is older than the maxPerProject events JetStream keeps', async () => {
    const durable = fakeDurable();
    const history = historyWith(durable.history);
    await record(history, 'limited', seqs(1, 8)); // MF_EVENTS keeps 4..8
    assert.deepEqual(
      (await history.since('limited', 0)).events.map((e) => e.seq),
      seqs(1, 8),
    );
    assert.deepEqual(
      (await history.since('limited', 2)).events.map((e) => e.seq),
      seqs(3, 8),
    );
    assert.equal(durable.calls.since, 2);
    assert.deepEqual(
      (await history.since('limited', 3)).events.map((e) => e.seq),
      seqs(4, 8),
    );
    assert.equal(durable.calls.since, 2, 'from seq 4 on JetStream has everything');
  });

  it('skips an unreadable message with a warning and still replays the events around it', async () => {
    const durable = fakeDurable();
    const history = historyWith(durable.history);
    await record(history, 'garbled', [1]);
    publisher.publish(eventSubject('project.garbled'), 'not json');
    await record(history, 'garbled', [2]);
    warnings.length = 0;
    assert.deepEqual(
      (await history.since('garbled', 0)).events.map((e) => e.seq),
      [1, 2],
    );
    assert.equal(durable.calls.since, 0);
    assert.ok(warnings.some((line) => line.includes('unreadable replay event skipped')));
  });

  it('deleteProject deletes the durable history and purges the project from JetStream', async () => {
    const durable = fakeDurable();
    const history = historyWith(durable.history);
    await record(history, 'doomed', [1, 2, 3]);
    await record(history, 'survivor', [1]);
    await history.deleteProject('doomed');
    assert.equal(durable.calls.deleteProject, 1);
    assert.equal(await storedHead('doomed'), 0);
    assert.deepEqual(await history.since('doomed', 0), { events: [], complete: true });
    assert.equal(durable.calls.since, 1, 'nothing in JetStream: the durable history answered');
    assert.equal(await storedHead('survivor'), 1, 'other projects keep theirs');
  });

  it('falls back to the durable history when MF_EVENTS is missing', async () => {
    const durable = fakeDurable();
    const history = historyWith(durable.history);
    await record(history, 'orphan', [1, 2]);
    await jsm.streams.delete(EVENTS_STREAM);
    try {
      const started = Date.now();
      assert.deepEqual(
        (await history.since('orphan', 0)).events.map((e) => e.seq),
        [1, 2],
      );
      assert.equal(durable.calls.since, 1);
      assert.ok(Date.now() - started < 2000, 'a missing stream answers at once, not after a time-out');
    } finally {
      await ensureEventsStream(reader, STREAM_OPTIONS);
    }
  });

  it('falls back to the durable history within the time-out when the NATS server is stopped', async () => {
    const lonely = await startNats();
    const connection = await connect({
      servers: lonely.url,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 100,
    });
    try {
      await ensureEventsStream(connection, STREAM_OPTIONS);
      const durable = fakeDurable();
      const readTimeoutMs = 500;
      const history = createJetStreamEventHistory({
        connection,
        durable: durable.history,
        logger,
        readTimeoutMs,
      });
      const events = [event('stranded', 1), event('stranded', 2)];
      await history.append('stranded', events, new Date());
      for (const e of events) connection.publish(eventSubject('project.stranded'), JSON.stringify(e));
      const lonelyJsm = await jetstreamManager(connection);
      await until(
        'MF_EVENTS holds seq 2',
        () => storedHead('stranded', lonelyJsm),
        (head) => head === 2,
        5000,
        10,
      );
      assert.equal((await history.since('stranded', 0)).events.length, 2);
      assert.equal(durable.calls.since, 0, 'while the server runs, JetStream answers');

      await lonely.stop();
      const started = Date.now();
      const answer = await history.since('stranded', 0);
      const elapsed = Date.now() - started;
      assert.deepEqual(
        answer.events.map((e) => e.seq),
        [1, 2],
      );
      assert.equal(durable.calls.since, 1);
      // Without the time-out it would never answer (the client reconnects for ever); the slack over it is for a
      // loaded 2-core machine, where a timer may fire half a second late.
      assert.ok(elapsed < readTimeoutMs + 1500, `answered after ${elapsed} ms`);
    } finally {
      await connection.close();
      await lonely.stop().catch(() => undefined);
    }
  });
});
