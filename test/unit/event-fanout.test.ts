import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createInProcessEventBus } from '../../actors/runtime/event-bus.ts';
import type { EventBus } from '../../src/platform/core/event-bus.ts';
import type { EventHistory, EventsSince, ProjectEvent } from '../../actors/ports/event-history.ts';
import { createEventFanout } from '../../src/events/event-fanout.ts';
import type { FanoutSink } from '../../src/events/event-feed.ts';
import { ProjectGoneError, type JoiningSocket } from '../../src/events/event-replay.ts';
import { seededRandom } from '../helpers/random.ts';

const P = 'p1';
const topic = (projectId: string) => `project.${projectId}`;

/**
 * The event with this seq written by commit attempt `attempt`: an attempt whose commit failed leaves events in
 * the history that differ (by `data.attempt`) from the ones committed later under the same seqs.
 */
function ev(seq: number, projectId = P, attempt = 0, type = 'clip.updated'): ProjectEvent {
  return {
    type,
    seq,
    ts: new Date(Date.UTC(2025, 0, 1, 0, 0, seq)).toISOString(),
    project_id: projectId,
    video_id: null,
    turn_id: null,
    data: { revision: seq, attempt },
  };
}

const seqs = (events: readonly ProjectEvent[]) => events.map((event) => event.seq);
const range = (from: number, to: number) =>
  Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
/** Lets every queued microtask and the next macrotask run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A read held until the test answers it: with what was stored when it was asked, or with what is stored now. */
interface PendingRead<T> {
  projectId: string;
  atCall: T;
  now(): T;
  resolve(value: T): void;
  reject(error: unknown): void;
}
type Snapshot = 'call' | 'now';

function answer<T>(pending: Array<PendingRead<T>>, index: number, snapshot: Snapshot) {
  const [read] = pending.splice(index, 1);
  assert.ok(read, 'no pending read');
  read.resolve(snapshot === 'call' ? read.atCall : read.now());
}

/**
 * An EventHistory kept in arrays (one per project). `since` answers `{ events, complete }` as the port says
 * (appending from seq n replaces whatever is stored from n on), counts its calls, and can be made slow (each
 * read waits until answered) or made to fail.
 */
function fakeHistory() {
  const kept = new Map<string, ProjectEvent[]>();
  /** Per project, the highest seq no longer kept (0: everything is kept). */
  const forgotten = new Map<string, number>();
  const calls: Array<{ projectId: string; afterSeq: number }> = [];
  const pending: Array<PendingRead<EventsSince>> = [];
  const state = { slow: false, failure: undefined as Error | undefined };

  function read(projectId: string, afterSeq: number): EventsSince {
    const events = (kept.get(projectId) ?? []).filter((event) => event.seq > afterSeq);
    return { events: structuredClone(events), complete: afterSeq >= (forgotten.get(projectId) ?? 0) };
  }

  function add(...events: ProjectEvent[]) {
    for (const event of events) {
      const list = kept.get(event.project_id) ?? [];
      kept.set(event.project_id, [...list.filter((old) => old.seq < event.seq), structuredClone(event)]);
    }
  }

  const history: EventHistory = {
    async append(_projectId, events) {
      add(...events);
    },
    async since(projectId, afterSeq) {
      calls.push({ projectId, afterSeq });
      if (state.failure) throw state.failure;
      const atCall = read(projectId, afterSeq);
      if (!state.slow) return atCall;
      return new Promise<EventsSince>((resolve, reject) =>
        pending.push({ projectId, atCall, now: () => read(projectId, afterSeq), resolve, reject }),
      );
    },
    async deleteProject(projectId) {
      kept.delete(projectId);
    },
  };

  return {
    history,
    calls,
    pending,
    state,
    add,
    /** Drops the project's events up to `seq` (older than what is kept). */
    forget(projectId: string, seq: number) {
      kept.set(
        projectId,
        (kept.get(projectId) ?? []).filter((event) => event.seq > seq),
      );
      forgotten.set(projectId, Math.max(forgotten.get(projectId) ?? 0, seq));
    },
    release(index = 0, snapshot: Snapshot = 'call') {
      answer(pending, index, snapshot);
    },
    failPending(error: Error, index = 0) {
      const [read] = pending.splice(index, 1);
      assert.ok(read, 'no pending history read');
      read.reject(error);
    },
  };
}

/** The projects' committed heads (each project document's seq), read as `committedSeq`; can be made slow. */
function fakeProjects() {
  const heads = new Map<string, number>();
  const calls: string[] = [];
  const pending: Array<PendingRead<number | null>> = [];
  const state = { slow: false };
  const read = (projectId: string) => heads.get(projectId) ?? null;
  return {
    heads,
    calls,
    pending,
    state,
    async committedSeq(projectId: string): Promise<number | null> {
      calls.push(projectId);
      const atCall = read(projectId);
      if (!state.slow) return atCall;
      return new Promise<number | null>((resolve, reject) =>
        pending.push({ projectId, atCall, now: () => read(projectId), resolve, reject }),
      );
    },
    release(index = 0, snapshot: Snapshot = 'call') {
      answer(pending, index, snapshot);
    },
  };
}

/** The real in-process bus, counting subscriptions. */
function countingBus(bus: EventBus) {
  const counts = { subscribed: 0, unsubscribed: 0 };
  const counted: EventBus = {
    publish: (topic_, event) => bus.publish(topic_, event),
    subscribe(topic_, onEvent) {
      counts.subscribed++;
      const unsubscribe = bus.subscribe(topic_, onEvent);
      return () => {
        counts.unsubscribed++;
        unsubscribe();
      };
    },
  };
  return { bus: counted, counts };
}

/**
 * A client's socket as src/events/event-sockets.ts hands it to `join`: replayed events come through `send`, and
 * once `goLive` is called it subscribes to the project's topic (the sink forwards to it). `log` is what the
 * client got, in order: event seqs, `reset <head>`, and `live` where it went live.
 */
class FakeSocket implements JoiningSocket {
  open = true;
  live = false;
  readonly events: ProjectEvent[] = [];
  readonly log: Array<number | string> = [];

  constructor(
    readonly projectId: string,
    private readonly audience: Set<FakeSocket>,
  ) {}

  get seqs() {
    return seqs(this.events);
  }

  get resets() {
    return this.log.filter((entry) => typeof entry === 'string' && entry.startsWith('reset'));
  }

  send(event: ProjectEvent) {
    assert.ok(!this.live, `replayed event ${event.seq} sent after goLive`);
    this.receive(event);
  }

  /** A frame reaching the client (event-sockets' `send` drops it once the socket has closed). */
  receive(event: ProjectEvent) {
    if (!this.open) return;
    this.events.push(event);
    this.log.push(event.seq);
  }

  reset(headSeq: number) {
    assert.ok(!this.live, 'reset after goLive');
    if (this.open) this.log.push(`reset ${headSeq}`);
  }

  goLive() {
    assert.ok(!this.live, 'goLive called twice');
    this.live = true;
    this.log.push('live');
    if (this.open) this.audience.add(this);
  }

  close() {
    this.open = false;
    this.audience.delete(this);
  }
}

/** The sink: records every delivery and forwards it to the project's live sockets (uWS topics). */
function clientSink() {
  const live = new Set<FakeSocket>();
  const delivered: ProjectEvent[] = [];
  /** Deliveries whose JSON is not the event's (not asserted in `deliver`: the fan-out catches sink errors). */
  const badJson: string[] = [];
  const sink: FanoutSink = {
    deliver(event, json) {
      delivered.push(event);
      if (json !== JSON.stringify(event)) badJson.push(json);
      for (const socket of [...live]) if (socket.projectId === event.project_id) socket.receive(event);
    },
  };
  return { sink, live, delivered, badJson };
}

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

/** What becomes of a committed event on its way to this node: heard now, later (in order), or never. */
type Publication = 'publish' | 'queue' | 'lose';

/**
 * The fan-out of one node, with the world around it: a project actor that (1) writes a change's events to the
 * history after the committed head, (2) commits (the project's seq moves), (3) publishes them on the bus — a
 * bus that may be late (`queue`, published later in order) or lose them (`lose`).
 */
function world(options: { windowSize?: number; projects?: string[] } = {}) {
  const { bus, counts } = countingBus(createInProcessEventBus());
  const store = fakeHistory();
  const projects = fakeProjects();
  const clients = clientSink();
  const log = capturingLogger();
  const fanout = createEventFanout({
    bus,
    history: store.history,
    committedSeq: projects.committedSeq,
    sink: clients.sink,
    log: log.logger,
    windowSize: options.windowSize ?? 100,
  });
  /** Per project, the committed events (index seq - 1): all a client may ever get. */
  const committed = new Map<string, ProjectEvent[]>();
  /** Committed events the bus has yet to bring (a lagging bus), in order. */
  const queued: ProjectEvent[] = [];
  let attempts = 0;
  for (const projectId of options.projects ?? [P]) projects.heads.set(projectId, 0);

  const head = (projectId = P) => projects.heads.get(projectId) ?? 0;
  const publish = (...events: ProjectEvent[]) => {
    for (const event of events) void bus.publish(topic(event.project_id), event);
  };

  /** (1) An attempt stores its events after the committed head (replacing the tail of a failed one). */
  function write(count = 1, projectId = P, type = 'clip.updated') {
    attempts++;
    const events = range(head(projectId) + 1, head(projectId) + count).map((seq) =>
      ev(seq, projectId, attempts, type),
    );
    store.add(...events);
    return events;
  }

  /** (2) The commit: the project's seq moves to the attempt's last event. */
  function commitWritten(events: ProjectEvent[]) {
    const first = events[0];
    const last = events.at(-1);
    if (!first || !last) return;
    assert.equal(first.seq, head(first.project_id) + 1, 'an attempt commits right after the head');
    projects.heads.set(first.project_id, last.seq);
    committed.set(first.project_id, [...(committed.get(first.project_id) ?? []), ...events]);
  }

  /** (3) The publication, as the bus brings it to this node. */
  function send(events: ProjectEvent[], how: Publication) {
    if (how === 'publish') publish(...events);
    else if (how === 'queue') queued.push(...events);
  }

  function socket(projectId = P) {
    return new FakeSocket(projectId, clients.live);
  }

  return {
    bus,
    counts,
    store,
    projects,
    clients,
    log,
    fanout,
    queued,
    head,
    publish,
    write,
    commitWritten,
    send,
    socket,
    /** One change of `count` events: written, committed, then published as `how` says. */
    commit(count = 1, how: Publication = 'publish', projectId = P) {
      const events = write(count, projectId);
      commitWritten(events);
      send(events, how);
      return events;
    },
    /** An attempt whose commit failed: its events stay in the history past the head until the next one. */
    fail(count = 1, projectId = P) {
      return write(count, projectId);
    },
    /** The project is deleted: its last event (`project.deleted`) is committed, then the document goes. */
    deleteProject(how: Publication = 'publish', projectId = P) {
      const events = write(1, projectId, 'project.deleted');
      commitWritten(events);
      projects.heads.delete(projectId);
      send(events, how);
      return events;
    },
    /** The late bus brings the next `count` queued events. */
    publishQueued(count = Infinity) {
      publish(...queued.splice(0, count));
    },
    /** The committed events from..to. */
    committed(from: number, to: number, projectId = P) {
      return (committed.get(projectId) ?? []).slice(from - 1, Math.max(from - 1, to));
    },
    /** As event-sockets opens a socket: watch the project, then join at `afterSeq`. */
    connect(afterSeq: number, projectId = P) {
      const unwatch = fanout.watch(projectId);
      const client = socket(projectId);
      const done = fanout.join(projectId, afterSeq, client);
      void done.catch(() => undefined);
      return {
        socket: client,
        done,
        close() {
          client.close();
          unwatch();
        },
      };
    },
  };
}

type World = ReturnType<typeof world>;

/** Warnings and errors the fan-out logged, as `level msg`. */
const logged = (w: World) => w.log.lines.map((line) => `${String(line.level)} ${String(line.msg)}`);

/** A small seeded PRNG, so a failing run can be replayed from its seed. */
const prng = seededRandom;

/**
 * How committed events reach this node: `prompt` — published at the commit; `lagging` — published later, in
 * order (the actor publishes after its commit, and this node hears later still); `lossy` — at the commit, but
 * core NATS loses some for this node (at most once).
 */
type BusModel = 'prompt' | 'lagging' | 'lossy';

interface RunSocket {
  after: number;
  socket: FakeSocket;
  close(): void;
  done: boolean;
  error?: unknown;
}

/**
 * One randomized run: the actor writes, commits (or fails: an uncommitted tail stays in the history) and
 * publishes changes of 1–3 events; sockets pass the handshake at random points (afterSeq at most the committed
 * head then, the head itself for a live-only socket) and open later; now and then one closes (when all have,
 * the feed ends and the next socket starts a fresh one); committed-head and history reads are slow and answered
 * in random order, with what was stored when asked or when answered. At the end the bus brings what it owes
 * (for a lossy bus, a last event shows the gaps, as the next event does in production) and every read is
 * answered. Every open socket must then have exactly afterSeq+1..N (N: the committed head), each once, in
 * order, each as committed; a closed one a prefix of that; and nothing is logged (no event was skipped).
 */
async function propertyRun(seed: number, model: BusModel, options: { failedCommits: boolean }) {
  const rand = prng(seed);
  const int = (n: number) => Math.floor(rand() * n);
  const chance = (p: number) => rand() < p;
  const snapshot = (): Snapshot => (chance(0.5) ? 'call' : 'now');
  const where = `seed ${seed} (${model} bus${options.failedCommits ? '' : ', no failed commit'})`;
  const w = world({ windowSize: 2 + int(8) });
  const total = 6 + int(20);
  for (let i = int(6); i > 0; i--) w.commit(1); // before anybody watches: nobody hears these
  w.store.state.slow = true;
  w.projects.state.slow = true;

  const publication = (): Publication =>
    model === 'lagging' ? 'queue' : model === 'lossy' && chance(0.3) ? 'lose' : 'publish';
  let attempt: ProjectEvent[] | undefined;
  /** afterSeq of sockets past the handshake, not yet open. */
  const handshakes: number[] = [];
  const sockets: RunSocket[] = [];
  /** When each socket comes: the committed head from which its handshake may happen. */
  const arrivals = Array.from({ length: 1 + int(16) }, () => int(total + 1));
  /** A since the client may hold: the head (live only), a recent seq, or any it may have seen. */
  const since = () => {
    const head = w.head();
    const pick = rand();
    return pick < 0.4 ? head : pick < 0.7 ? Math.max(0, head - int(4)) : int(head + 1);
  };

  const open = () => {
    const [after] = handshakes.splice(int(handshakes.length), 1);
    assert.ok(after !== undefined);
    const connection = w.connect(after);
    const entry: RunSocket = { after, socket: connection.socket, close: connection.close, done: false };
    sockets.push(entry);
    connection.done.then(
      () => (entry.done = true),
      (error: unknown) => {
        entry.error = error;
        entry.done = true;
      },
    );
  };

  for (let step = 0; ; step++) {
    assert.ok(step < 20_000, `${where}: the run does not end`);
    const choices: Array<() => unknown> = [];
    if (!attempt && w.head() < total) choices.push(() => (attempt = w.write(1 + int(3))));
    if (attempt) {
      choices.push(() => {
        const events = attempt!;
        attempt = undefined;
        if (options.failedCommits && chance(0.25)) return; // the commit failed: its events stay in the history
        w.commitWritten(events);
        for (const event of events) w.send([event], publication());
      });
    }
    if (w.queued.length > 0) choices.push(() => w.publishQueued(1));
    if (w.store.pending.length > 0) {
      choices.push(() => w.store.release(int(w.store.pending.length), snapshot()));
    }
    if (w.projects.pending.length > 0) {
      choices.push(() => w.projects.release(int(w.projects.pending.length), snapshot()));
    }
    const arriving = arrivals.findIndex((arrival) => arrival <= w.head());
    if (arriving >= 0) {
      choices.push(() => {
        arrivals.splice(arriving, 1);
        handshakes.push(since());
      });
    }
    if (handshakes.length > 0) choices.push(open);
    const openSockets = sockets.filter((entry) => entry.socket.open);
    if (openSockets.length > 0 && chance(0.03)) {
      choices.push(() => openSockets[int(openSockets.length)]!.close());
    }
    if (choices.length === 0) break;
    choices.push(async () => {
      for (let i = 1 + int(4); i > 0; i--) await Promise.resolve();
    });
    await choices[int(choices.length)]!();
  }

  // The end: a lossy bus's gaps show with the next event; the late bus brings what it owes; maybe a last
  // attempt fails, leaving an uncommitted tail in the history; every read is answered.
  if (model === 'lossy') w.commit(1 + int(2));
  if (options.failedCommits && chance(0.5)) w.fail(1 + int(2));
  w.publishQueued();
  for (let round = 0; ; round++) {
    assert.ok(round < 10_000, `${where}: does not settle`);
    await flush();
    if (w.store.pending.length > 0) w.store.release(int(w.store.pending.length), snapshot());
    else if (w.projects.pending.length > 0) w.projects.release(int(w.projects.pending.length), snapshot());
    else break;
  }

  const N = w.head();
  for (const { after, socket, done, error } of sockets) {
    const which = `${where}: the socket with afterSeq ${after} (got ${socket.log.join(' ')}; logged ${logged(w).join(', ') || 'nothing'})`;
    assert.equal(error, undefined, `${which}: ${String(error)}`);
    assert.deepEqual(socket.resets, [], `${which}: a reset`);
    if (socket.open) {
      assert.ok(done && socket.live, `${which}: never went live`);
      assert.deepEqual(socket.seqs, range(after + 1, N), which);
      assert.deepEqual(socket.events, w.committed(after + 1, N), `${which}: an event never committed`);
    } else {
      assert.deepEqual(socket.seqs, range(after + 1, after + socket.events.length), `${which} (closed)`);
      assert.deepEqual(
        socket.events,
        w.committed(after + 1, after + socket.events.length),
        `${which} (closed): an event never committed`,
      );
    }
  }
  const delivered = seqs(w.clients.delivered);
  assert.ok(
    delivered.every((seq, i) => i === 0 || seq > delivered[i - 1]!),
    `${where}: the sink got ${delivered.join(' ')}`,
  );
  for (const event of w.clients.delivered) {
    assert.deepEqual(
      event,
      w.committed(event.seq, event.seq)[0],
      `${where}: the sink got an uncommitted event`,
    );
  }
  assert.deepEqual(w.clients.badJson, [], `${where}: JSON`);
  assert.deepEqual(logged(w), [], `${where}: logged`);
}

describe('EventFanout', () => {
  describe('live delivery', () => {
    it('delivers each committed event once, in order, with its JSON, to the live sockets; repeats are dropped', async () => {
      const w = world();
      const a = w.connect(0);
      await a.done;
      assert.deepEqual(a.socket.log, ['live']);
      w.commit(3);
      w.publish(...w.committed(2, 3), ...w.committed(1, 1)); // heard again
      w.commit(1);
      w.publish(...w.committed(4, 4));
      await flush();
      assert.deepEqual(seqs(w.clients.delivered), [1, 2, 3, 4]);
      assert.deepEqual(w.clients.delivered, w.committed(1, 4));
      assert.deepEqual(a.socket.events, w.committed(1, 4));
      assert.deepEqual(a.socket.log, ['live', 1, 2, 3, 4]);
      assert.deepEqual(w.clients.badJson, []);
      assert.deepEqual(w.store.calls, [], 'no gap, no history read');
      assert.deepEqual(w.projects.calls, [P], 'the feed read the committed head once, when it started');
      assert.deepEqual(logged(w), []);
    });

    it('keeps projects apart: one subscription and one order each; a join on an unwatched project rejects', async () => {
      const w = world({ projects: ['a', 'b', 'c'] });
      const a = w.connect(0, 'a');
      const b = w.connect(0, 'b');
      await Promise.all([a.done, b.done]);
      w.commit(1, 'publish', 'a');
      w.commit(2, 'publish', 'b');
      w.commit(1, 'publish', 'a');
      w.commit(1, 'publish', 'c'); // not watched
      await flush();
      assert.equal(w.counts.subscribed, 2);
      assert.deepEqual(
        w.clients.delivered.map((event) => `${event.project_id}${event.seq}`),
        ['a1', 'b1', 'b2', 'a2'],
      );
      assert.deepEqual(a.socket.seqs, [1, 2]);
      assert.deepEqual(b.socket.seqs, [1, 2]);
      assert.deepEqual(w.fanout.watched().sort(), ['a', 'b']);
      const c = w.socket('c');
      await assert.rejects(w.fanout.join('c', 0, c), /not watched/);
      assert.deepEqual(c.log, []);
    });
  });

  describe('watching', () => {
    it('subscribes once per project however many watch; the last unwatch unsubscribes; unwatch twice is harmless', async () => {
      const w = world();
      const first = w.fanout.watch(P);
      const second = w.fanout.watch(P);
      const third = w.fanout.watch(P);
      assert.equal(w.counts.subscribed, 1);
      assert.deepEqual(w.fanout.watched(), [P]);
      const socket = w.socket();
      await w.fanout.join(P, 0, socket);
      w.commit(1);
      assert.deepEqual(seqs(w.clients.delivered), [1], 'one delivery, not one per watcher');

      first();
      first(); // a second call must not count as another watcher leaving
      second();
      w.commit(1);
      assert.deepEqual(seqs(w.clients.delivered), [1, 2], 'one watcher left: still subscribed');
      assert.equal(w.counts.unsubscribed, 0);

      third();
      assert.equal(w.counts.unsubscribed, 1);
      assert.deepEqual(w.fanout.watched(), []);
      w.commit(1);
      await flush();
      assert.deepEqual(seqs(w.clients.delivered), [1, 2], 'publishing now reaches nothing');

      third();
      first();
      assert.equal(w.counts.unsubscribed, 1);
      assert.equal(w.counts.subscribed, 1);
      assert.deepEqual(socket.seqs, [1, 2]);
    });

    it('a watch after the last unwatch subscribes afresh: a new feed, that reads the committed head again', async () => {
      const w = world();
      const unwatch = w.fanout.watch(P);
      await w.fanout.join(P, 0, w.socket());
      w.commit(2);
      unwatch();
      w.commit(1); // 3: nobody listens
      const again = w.fanout.watch(P);
      assert.equal(w.counts.subscribed, 2);
      const socket = w.socket();
      await w.fanout.join(P, 3, socket);
      assert.deepEqual(w.projects.calls, [P, P]);
      w.commit(1);
      assert.deepEqual(seqs(w.clients.delivered), [1, 2, 4]);
      unwatch(); // a handle of the old feed does not end the new one
      w.commit(1);
      assert.deepEqual(seqs(w.clients.delivered), [1, 2, 4, 5]);
      assert.deepEqual(socket.log, ['live', 4, 5]);
      again();
      assert.deepEqual(w.fanout.watched(), []);
      assert.equal(w.counts.unsubscribed, 2);
    });

    for (const reading of ['the committed head', 'the history'] as const) {
      it(`the work of a feed whose watchers all left (reading ${reading}) never reaches the sink`, async () => {
        const w = world();
        const unwatch = w.fanout.watch(P);
        const old = w.socket();
        await w.fanout.join(P, 0, old);
        w.commit(1);
        w.commit(1, 'lose'); // 2
        if (reading === 'the committed head') w.projects.state.slow = true;
        else w.store.state.slow = true;
        w.commit(1); // 3: a gap, the repair is pending
        const late = w.socket();
        const lateJoin = w.fanout.join(P, 0, late); // waits for that repair
        await flush();
        assert.equal(w.projects.pending.length + w.store.pending.length, 1);
        old.close();
        late.close();
        unwatch();

        w.projects.state.slow = false;
        w.store.state.slow = false;
        const again = w.fanout.watch(P);
        const socket = w.socket();
        await w.fanout.join(P, 3, socket);
        w.commit(1); // 4, the new feed's
        if (reading === 'the committed head') w.projects.release(0, 'now');
        else w.store.release(0, 'now');
        await lateJoin;
        await flush();
        assert.deepEqual(seqs(w.clients.delivered), [1, 4]);
        assert.deepEqual(socket.log, ['live', 4]);
        assert.deepEqual(late.log, []);
        assert.equal(late.live, false);
        again();
      });
    }
  });

  describe('gaps on the bus', () => {
    it('holds the events heard after a gap, reads the missing ones up to the committed head, delivers them in order, then the held ones', async () => {
      const w = world();
      const { socket } = w.connect(0);
      await flush();
      w.commit(1);
      w.commit(2, 'lose'); // 2, 3
      w.store.state.slow = true;
      w.commit(1); // 4
      await flush();
      assert.deepEqual(socket.seqs, [1], '4 is held');
      assert.deepEqual(w.store.calls, [{ projectId: P, afterSeq: 1 }]);
      w.commit(2); // 5, 6: heard during the repair, held too
      await flush();
      assert.deepEqual(socket.seqs, [1]);
      assert.equal(w.store.calls.length, 1, 'one read for the repair');

      w.store.release(0, 'call'); // the history had 2, 3, 4 when asked
      await flush();
      assert.deepEqual(socket.seqs, range(1, 6));
      assert.deepEqual(w.clients.delivered, w.committed(1, 6));
      w.commit(1);
      assert.deepEqual(socket.seqs, range(1, 7));
      assert.equal(w.store.calls.length, 1);
      assert.deepEqual(logged(w), []);
    });

    it('repairs a gap found among the held events once the first repair is over', async () => {
      const w = world();
      const { socket } = w.connect(0);
      await flush();
      w.commit(1);
      w.commit(1, 'lose'); // 2
      w.store.state.slow = true;
      w.commit(1); // 3: repair of 2 pending
      await flush();
      w.commit(1, 'lose'); // 4
      w.commit(1); // 5: held
      w.store.release(0, 'call'); // had 2, 3 when asked: 5 is held after a new gap
      await flush();
      assert.deepEqual(socket.seqs, [1, 2, 3]);
      assert.deepEqual(w.store.calls, [
        { projectId: P, afterSeq: 1 },
        { projectId: P, afterSeq: 3 },
      ]);
      w.store.release(0, 'call');
      await flush();
      assert.deepEqual(socket.events, w.committed(1, 5));
    });

    it('still delivers the held events when the history read fails: the seqs jump, a warning is logged, nothing throws', async () => {
      const w = world();
      const { socket } = w.connect(0);
      await flush();
      w.commit(1);
      w.commit(1, 'lose'); // 2
      w.store.state.slow = true;
      w.commit(2); // 3, 4
      await flush();
      w.store.failPending(new Error('mongo is down'));
      await flush();
      assert.deepEqual(socket.seqs, [1, 3, 4], 'clients see the seqs jump from 1 to 3');
      assert.deepEqual(logged(w), [
        '40 could not read the project’s events',
        '40 events skipped: the history could not be read',
      ]);
      assert.equal(w.log.lines[0]!.project_id, P);
      assert.match(JSON.stringify(w.log.lines[0]!.err), /mongo is down/);
      assert.deepEqual(w.log.lines[1]!.project_id, P);

      w.store.state.slow = false;
      w.commit(1);
      assert.deepEqual(socket.seqs, [1, 3, 4, 5]);
      const later = w.connect(0); // the history still has 2 for a replay
      await later.done;
      assert.deepEqual(later.socket.log, [1, 2, 3, 4, 5, 'live']);
    });

    it('skips, with a warning, the events the history no longer has, and delivers those it has', async () => {
      const w = world();
      const { socket } = w.connect(0);
      await flush();
      w.commit(1);
      w.commit(2, 'lose'); // 2, 3
      w.store.forget(P, 3);
      w.commit(1); // 4: a gap the history cannot fill
      await flush();
      w.commit(1);
      assert.deepEqual(socket.seqs, [1, 4, 5], 'clients see the seqs jump from 1 to 4');
      assert.deepEqual(logged(w), ['40 events skipped: no longer in the history']);
    });

    it('does not skip an event the bus lost when a later one is heard while a joining socket makes the feed sync', async () => {
      const w = world();
      const first = w.connect(0);
      await first.done;
      w.commit(1);
      w.commit(1, 'lose'); // 2: lost here; a client saw it on another node
      w.store.state.slow = true;
      const second = w.connect(2); // ahead of the feed: it syncs (committed head 2)
      await flush();
      assert.equal(w.store.pending.length, 1);
      w.commit(1, 'lose'); // 3
      w.commit(1); // 4: heard during the sync, held
      w.store.release(0, 'call');
      await flush();
      w.store.release(0, 'call');
      await second.done;
      await flush();
      assert.deepEqual(first.socket.events, w.committed(1, 4));
      assert.deepEqual(second.socket.events, w.committed(3, 4));
      assert.deepEqual(logged(w), []);
    });
  });

  describe('join', () => {
    it('replays from the window, without a history read, then goes live', async () => {
      const w = world();
      const first = w.connect(0);
      await first.done;
      w.commit(5);
      const second = w.connect(2);
      await second.done;
      assert.deepEqual(second.socket.log, [3, 4, 5, 'live']);
      const whole = w.connect(0);
      const upToDate = w.connect(5);
      await Promise.all([whole.done, upToDate.done]);
      assert.deepEqual(whole.socket.log, [1, 2, 3, 4, 5, 'live']);
      assert.deepEqual(upToDate.socket.log, ['live']);
      w.commit(1);
      assert.deepEqual(second.socket.log, [3, 4, 5, 'live', 6]);
      assert.deepEqual(first.socket.events, w.committed(1, 6));
      assert.deepEqual(second.socket.events, w.committed(3, 6));
      assert.deepEqual(w.store.calls, []);
    });

    it('replays from the history when the window does not reach back, and the read joins the window', async () => {
      const w = world();
      w.commit(5); // before the watch: not heard
      const first = w.connect(5);
      await first.done;
      w.commit(2); // 6, 7
      const second = w.connect(2);
      await second.done;
      assert.deepEqual(second.socket.log, [3, 4, 5, 6, 7, 'live']);
      assert.deepEqual(second.socket.events, w.committed(3, 7));
      assert.deepEqual(w.store.calls, [{ projectId: P, afterSeq: 2 }]);
      const again = w.connect(2);
      const fewer = w.connect(4);
      await Promise.all([again.done, fewer.done]);
      assert.deepEqual(again.socket.log, [3, 4, 5, 6, 7, 'live']);
      assert.deepEqual(fewer.socket.log, [5, 6, 7, 'live']);
      assert.equal(w.store.calls.length, 1, 'served from the window');
      assert.deepEqual(seqs(w.clients.delivered), [6, 7], 'replayed events do not go to the sink');
      assert.deepEqual(first.socket.log, ['live', 6, 7]);
    });

    it('keeps the window bounded: older than windowSize events is read from the history', async () => {
      const w = world({ windowSize: 3 });
      const first = w.connect(0);
      await first.done;
      w.commit(5);
      const inWindow = w.connect(2);
      await inWindow.done;
      assert.deepEqual(w.store.calls, []);
      const older = w.connect(1);
      await older.done;
      assert.deepEqual(older.socket.log, [2, 3, 4, 5, 'live']);
      assert.deepEqual(w.store.calls, [{ projectId: P, afterSeq: 1 }]);
      const again = w.connect(1);
      await again.done;
      assert.equal(w.store.calls.length, 2, 'the read did not grow the window past 3 events');
    });

    it('costs one history read for many concurrent joins at the same old since (single flight)', async () => {
      const w = world();
      w.commit(8); // before the watch
      const first = w.connect(8);
      await first.done;
      w.store.state.slow = true;
      const joins = [2, 2, 2, 4, 7].map((since) => ({ since, ...w.connect(since) }));
      await flush();
      assert.equal(w.store.calls.length, 1);
      w.commit(1); // 9: heard while the read is pending
      w.store.release(0, 'call');
      await Promise.all(joins.map((join) => join.done));
      assert.equal(w.store.calls.length, 1);
      for (const { since, socket } of joins) assert.deepEqual(socket.log, [...range(since + 1, 9), 'live']);
      assert.deepEqual(first.socket.log, ['live', 9]);
    });

    it('costs no history read, and one committed-head read, for many joins at the head on a fresh feed (a reconnect storm after a node died)', async () => {
      const w = world();
      w.commit(5); // before the watch
      w.projects.state.slow = true;
      const joins = range(1, 10).map(() => w.connect(5));
      await flush();
      assert.deepEqual(w.projects.calls, [P]);
      w.projects.release(0, 'call');
      await Promise.all(joins.map((join) => join.done));
      for (const { socket } of joins) assert.deepEqual(socket.log, ['live']);
      w.commit(1);
      for (const { socket } of joins) assert.deepEqual(socket.log, ['live', 6]);
      assert.deepEqual(w.store.calls, []);
      assert.deepEqual(w.projects.calls, [P]);
    });

    it('sends reset(headSeq), then goes live, when the history no longer has what the client asks for', async () => {
      const w = world();
      w.commit(6);
      w.store.forget(P, 3);
      const expired = w.connect(1);
      await expired.done;
      assert.deepEqual(expired.socket.log, ['reset 6', 'live']);
      w.commit(1);
      assert.deepEqual(expired.socket.log, ['reset 6', 'live', 7]);
      const kept = w.connect(3); // from the oldest kept on, the history is complete
      await kept.done;
      assert.deepEqual(kept.socket.log, [4, 5, 6, 7, 'live']);
    });

    it('sends reset(headSeq) when a history that says it is complete holds nothing the client asks for', async () => {
      const w = world();
      w.commit(6);
      await w.store.history.deleteProject(P); // removed by hand, say: nothing kept, yet nothing "forgotten"
      const emptied = w.connect(2);
      await emptied.done;
      assert.deepEqual(emptied.socket.log, ['reset 6', 'live']);
      w.commit(1);
      assert.deepEqual(emptied.socket.log, ['reset 6', 'live', 7]);
    });

    it('stops a join whose socket closed: nothing more is sent, it never goes live', async () => {
      const w = world();
      w.commit(4);
      w.store.state.slow = true;
      const closing = w.connect(1);
      await flush();
      closing.close();
      w.store.release(0, 'call');
      await closing.done;
      assert.deepEqual(closing.socket.log, []);
      assert.equal(closing.socket.live, false);
    });

    it('gives a socket whose afterSeq is ahead of what the feed delivered (the bus lags) the events in between, once', async () => {
      const w = world();
      const first = w.connect(0);
      await first.done;
      w.commit(2); // 1, 2
      w.commit(2, 'queue'); // 3, 4: committed; the client saw 3 on another node, this bus is behind
      const ahead = w.connect(3);
      await ahead.done;
      assert.deepEqual(ahead.socket.log, [4, 'live']);
      assert.deepEqual(first.socket.seqs, [1, 2, 3, 4], 'the feed caught up for every live socket');
      w.publishQueued(); // 3, 4 arrive late: already delivered
      w.commit(1);
      await flush();
      assert.deepEqual(first.socket.events, w.committed(1, 5));
      assert.deepEqual(ahead.socket.log, [4, 'live', 5]);
      assert.deepEqual(w.store.calls, [{ projectId: P, afterSeq: 2 }]);
      assert.deepEqual(logged(w), []);
    });

    it('does not tell a client ahead of the feed that its history expired when the sync cannot read the history', async () => {
      const w = world();
      const first = w.connect(0);
      await first.done;
      w.commit(1);
      w.commit(1, 'queue'); // 2: committed, not heard yet; the client saw it elsewhere
      w.store.state.failure = new Error('mongo is down');
      const ahead = w.connect(2);
      const failed = await ahead.done.then(
        () => false,
        () => true,
      );
      assert.deepEqual(ahead.socket.resets, [], 'the history did not expire: it could not be read');
      w.store.state.failure = undefined;
      w.publishQueued();
      w.commit(1);
      await flush();
      if (!failed) assert.deepEqual(ahead.socket.seqs, [3], 'nothing the client had');
    });
  });

  describe('uncommitted events in the history', () => {
    it('never sends a joining socket the events of an attempt whose commit failed', async () => {
      const w = world();
      w.commit(3);
      w.fail(2); // 4', 5': in the history, past the committed head
      const { socket, done } = w.connect(0);
      await done;
      assert.deepEqual(socket.log, [1, 2, 3, 'live']);
      w.commit(1); // 4, replacing 4' and 5'
      assert.deepEqual(socket.events, w.committed(1, 4));
      assert.deepEqual(w.clients.delivered, w.committed(4, 4));
    });

    it('never delivers them to live sockets when a gap is repaired', async () => {
      const w = world();
      const { socket } = w.connect(0);
      await flush();
      w.commit(1);
      w.commit(1, 'lose'); // 2
      w.commit(1, 'queue'); // 3: committed, published later
      w.fail(2); // 4', 5'
      w.publishQueued(); // 3: the repair reads 2, 3, 4', 5'
      await flush();
      assert.deepEqual(socket.seqs, [1, 2, 3]);
      w.commit(1); // 4
      assert.deepEqual(socket.events, w.committed(1, 4));
      assert.deepEqual(w.clients.delivered, w.committed(1, 4));
    });

    it('never sends them when a slow replay read took them before the next attempt committed', async () => {
      const w = world({ windowSize: 2 });
      w.commit(5);
      const first = w.connect(5);
      await first.done;
      w.fail(1); // 6'
      w.store.state.slow = true;
      const replaying = w.connect(1); // outside the window: reads the history (2..5, 6')
      await flush();
      w.commit(1); // 6, delivered live before the read answers
      w.store.release(0, 'call');
      await replaying.done;
      w.commit(1);
      assert.deepEqual(first.socket.events, w.committed(6, 7));
      assert.deepEqual(replaying.socket.events, w.committed(2, 7));
    });
  });

  describe('the project deleted', () => {
    it('delivers its last event (project.deleted) to the live sockets', async () => {
      const w = world();
      const { socket } = w.connect(0);
      await flush();
      w.commit(1);
      w.deleteProject();
      await flush();
      assert.deepEqual(socket.events, w.committed(1, 2));
      assert.equal(socket.events[1]!.type, 'project.deleted');
    });

    it('sends none of the events heard during the last sync twice', async () => {
      const w = world();
      const first = w.connect(0);
      await first.done;
      w.commit(3, 'queue'); // 1..3, not heard yet
      const ahead = w.connect(3); // the feed syncs: 1..3 from the history
      await ahead.done;
      assert.deepEqual(first.socket.seqs, [1, 2, 3]);
      w.projects.state.slow = true;
      w.commit(1, 'queue'); // 4
      const further = w.connect(4); // another sync: its committed-head read is pending
      await flush();
      w.publishQueued(); // 1..4 arrive late, held
      w.deleteProject(); // 5, held
      w.projects.release(0, 'now'); // the project is gone
      // The socket joining as the project goes closes as for a deletion (1000).
      await assert.rejects(further.done, ProjectGoneError);
      await flush();
      assert.deepEqual(first.socket.events, w.committed(1, 5));
      assert.deepEqual(ahead.socket.events, w.committed(4, 5));
    });
  });

  describe('a storm of joins', () => {
    it('serves many concurrent joins at distinct old sinces, however long each waits for the others’ reads', async () => {
      const w = world({ windowSize: 2 });
      w.commit(30);
      const first = w.connect(30);
      await first.done;
      w.store.state.slow = true;
      const joins = range(1, 25).map((since) => ({ since, ...w.connect(since) }));
      for (let round = 0; round < 1000 && (await flush(), w.store.pending.length > 0); round++) {
        w.store.release(0, 'now');
      }
      const outcomes = await Promise.allSettled(joins.map((join) => join.done));
      assert.deepEqual(
        outcomes.map((outcome) => outcome.status),
        joins.map(() => 'fulfilled'),
      );
      for (const { since, socket } of joins) assert.deepEqual(socket.log, [...range(since + 1, 30), 'live']);
    });
  });

  describe('replay, then live: the property', () => {
    const RUNS = 500;
    for (const model of ['prompt', 'lagging', 'lossy'] as const) {
      it(`every socket gets exactly afterSeq+1..N once, in order, as committed (${model} bus, ${RUNS} seeded runs)`, async () => {
        for (let seed = 1; seed <= RUNS; seed++) await propertyRun(seed, model, { failedCommits: true });
      });
    }
  });
});
