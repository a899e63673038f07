// The editor's MongoDB adapters (projects, assets, chat threads, event history) against a real MongoDB-wire
// server (jongodb unless MF_TEST_MONGO=container). Each describe works in a database of its own.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { BSON, type Db } from 'mongodb';
import { createMongoProjects } from '../../src/editor/mongo/projects.ts';
import { createMongoAssets } from '../../src/editor/mongo/assets.ts';
import { createMongoThread } from '../../src/editor/mongo/thread.ts';
import { createMongoEventHistory } from '../../src/editor/mongo/event-history.ts';
import type { ProjectRecord, ProjectsRepository } from '../../actors/ports/projects-repository.ts';
import type { AssetRecord, AssetsRepository } from '../../actors/ports/assets-repository.ts';
import type { MessageRecord, ThreadRepository } from '../../actors/ports/thread-repository.ts';
import type { EventHistory, ProjectEvent } from '../../actors/ports/event-history.ts';
import { useMongoClient } from '../helpers/mongo.ts';

const t0 = new Date('2026-11-21T00:00:00Z');
const at = (ms: number): Date => new Date(t0.getTime() + ms);

const mongo = useMongoClient();

function project(id: string, fields: Partial<ProjectRecord> = {}): ProjectRecord {
  return {
    id,
    user_id: 'usr_1',
    name: `Project ${id}`,
    description: '',
    aspect_ratio: '9:16',
    context_md: '',
    videos: [{ id: `vid_${id}`, name: 'Main video', aspect_ratio: '9:16', created_at: t0 }],
    clips: [],
    revision: 0,
    seq: 0,
    version: 1,
    turn: null,
    queue: [],
    applied_ops: [],
    created_at: t0,
    updated_at: t0,
    ...fields,
  };
}

function lease(until: Date): ProjectRecord['turn'] {
  return {
    turn_id: 'turn_1',
    video_id: 'vid_1',
    key_id: 'key_1',
    node_id: 'node_1',
    requested_at: t0,
    granted_at: t0,
    lease_until: until,
    started: true,
  };
}

describe('mongo projects repository', () => {
  let projects: ProjectsRepository;
  before(async () => {
    projects = await createMongoProjects(mongo.client.db('editor_projects'));
  });

  it('gives back an inserted project as it was written, and null for an unknown id', async () => {
    const record = project('prj_get', { clips: [], context_md: '# notes' });
    await projects.insert(record);
    assert.deepEqual(await projects.get('prj_get'), record);
    assert.equal(await projects.get('prj_missing'), null);
  });

  it("lists only the user's projects, most recently updated first, as summaries", async () => {
    await projects.insert(project('prj_old', { user_id: 'usr_list', updated_at: at(1000) }));
    await projects.insert(project('prj_new', { user_id: 'usr_list', updated_at: at(3000) }));
    await projects.insert(project('prj_mid', { user_id: 'usr_list', updated_at: at(2000) }));
    await projects.insert(project('prj_other', { user_id: 'usr_other', updated_at: at(9000) }));
    assert.deepEqual(await projects.listByUser('usr_list'), [
      { id: 'prj_new', name: 'Project prj_new', aspect_ratio: '9:16', updated_at: at(3000) },
      { id: 'prj_mid', name: 'Project prj_mid', aspect_ratio: '9:16', updated_at: at(2000) },
      { id: 'prj_old', name: 'Project prj_old', aspect_ratio: '9:16', updated_at: at(1000) },
    ]);
    assert.deepEqual(await projects.listByUser('usr_nobody'), []);
  });

  it('replaces a project once per version: a second write on the same version is refused', async () => {
    await projects.insert(project('prj_replace'));
    const first = project('prj_replace', { name: 'First', version: 2 });
    assert.equal(await projects.replace(first, 1), true);
    assert.equal(await projects.replace(project('prj_replace', { name: 'Second', version: 2 }), 1), false);
    assert.deepEqual(await projects.get('prj_replace'), first);
    const third = project('prj_replace', { name: 'Third', version: 3 });
    assert.equal(await projects.replace(third, 2), true);
    assert.deepEqual(await projects.get('prj_replace'), third);
    assert.equal(await projects.replace(project('prj_absent', { version: 2 }), 1), false);
    assert.equal(await projects.get('prj_absent'), null, 'a replace never creates a project');
  });

  it('two replaces racing on the same version: exactly one wins and its document is stored', async () => {
    for (let i = 0; i < 100; i++) {
      const id = `prj_race${i}`;
      await projects.insert(project(id));
      const a = project(id, { name: 'A', version: 2 });
      const b = project(id, { name: 'B', version: 2 });
      const [wonA, wonB] = await Promise.all([projects.replace(a, 1), projects.replace(b, 1)]);
      assert.notEqual(wonA, wonB, `race ${i}: exactly one side wins`);
      assert.deepEqual(await projects.get(id), wonA ? a : b, `race ${i}`);
    }
  });

  it('deletes a project', async () => {
    await projects.insert(project('prj_delete'));
    await projects.delete('prj_delete');
    assert.equal(await projects.get('prj_delete'), null);
    await projects.delete('prj_delete'); // deleting again is harmless
  });

  it('finds running turns whose lease ended before now, oldest lease first, at most limit', async () => {
    const db = mongo.client.db('editor_leases');
    const leases = await createMongoProjects(db);
    await leases.insert(project('prj_idle'));
    await leases.insert(project('prj_live', { turn: lease(at(60_000)) }));
    await leases.insert(project('prj_late2', { turn: lease(at(-2000)) }));
    await leases.insert(project('prj_late1', { turn: lease(at(-5000)) }));
    await leases.insert(project('prj_edge', { turn: lease(t0) }));
    assert.deepEqual(await leases.expiredLeases(t0, 10), ['prj_late1', 'prj_late2']);
    assert.deepEqual(await leases.expiredLeases(t0, 1), ['prj_late1']);
    assert.deepEqual(await leases.expiredLeases(t0, 0), []);
    assert.deepEqual(await leases.expiredLeases(at(1), 10), ['prj_late1', 'prj_late2', 'prj_edge']);
  });
});

function asset(id: string, projectId: string, createdAt: Date, name = id): AssetRecord {
  return {
    id,
    project_id: projectId,
    user_id: 'usr_1',
    kind: 'image',
    source: 'upload',
    media_id: `med_${id}`,
    content_type: 'image/png',
    metadata: { name, width: 64, height: 64 },
    created_at: createdAt,
  };
}

describe('mongo assets repository', () => {
  let assets: AssetsRepository;
  before(async () => {
    assets = await createMongoAssets(mongo.client.db('editor_assets'));
  });

  it('stores an asset once: putting the same id again changes nothing', async () => {
    const first = asset('ast_once', 'prj_a', t0, 'first');
    await assets.put(first);
    await assets.put(asset('ast_once', 'prj_a', at(1000), 'second'));
    await Promise.all([assets.put(first), assets.put(first)]);
    assert.deepEqual(await assets.get('ast_once'), first);
    assert.deepEqual(await assets.listByProject('prj_a'), [first]);
    assert.equal(await assets.get('ast_missing'), null);
  });

  it("lists a project's assets oldest first, ties by id", async () => {
    const late = asset('ast_a', 'prj_list', at(2000));
    const tieB = asset('ast_c', 'prj_list', at(1000));
    const tieA = asset('ast_b', 'prj_list', at(1000));
    for (const record of [late, tieB, tieA]) await assets.put(record);
    await assets.put(asset('ast_elsewhere', 'prj_other', t0));
    assert.deepEqual(await assets.listByProject('prj_list'), [tieA, tieB, late]);
  });

  it('deletes a project’s assets and answers exactly what it removed', async () => {
    const kept = asset('ast_keep', 'prj_keep', t0);
    const gone = [asset('ast_del1', 'prj_del', t0), asset('ast_del2', 'prj_del', at(1))];
    for (const record of [kept, ...gone]) await assets.put(record);
    const removed = await assets.deleteByProject('prj_del');
    assert.deepEqual(
      [...removed].sort((a, b) => a.id.localeCompare(b.id)),
      gone,
    );
    assert.deepEqual(await assets.listByProject('prj_del'), []);
    assert.deepEqual(await assets.deleteByProject('prj_del'), [], 'nothing left to remove');
    assert.deepEqual(await assets.listByProject('prj_keep'), [kept]);
  });
});

function message(id: string, createdAt: Date, fields: Partial<MessageRecord> = {}): MessageRecord {
  return {
    id,
    project_id: 'prj_t',
    video_id: 'vid_1',
    role: 'user',
    text: `text of ${id}`,
    turn_id: 'turn_1',
    created_at: createdAt,
    ...fields,
  };
}

describe('mongo thread repository', () => {
  let thread: ThreadRepository;
  // Created out of order, with ties on created_at broken by id.
  const ordered = [
    message('msg_01', at(1000)),
    message('msg_02', at(2000), { role: 'assistant', image_urls: ['https://example.test/a.png'] }),
    message('msg_03', at(3000)),
    message('msg_04a', at(3000), { role: 'assistant' }),
    message('msg_05', at(4000)),
    message('msg_06', at(5000), { role: 'assistant' }),
    message('msg_07', at(6000)),
  ];

  before(async () => {
    thread = await createMongoThread(mongo.client.db('editor_thread'));
    await thread.append([ordered[3]!, ordered[0]!, ordered[2]!]);
    await thread.append([ordered[6]!, ordered[1]!, ordered[5]!, ordered[4]!]);
    await thread.append([message('msg_other', at(1500), { video_id: 'vid_2' })]);
  });

  it('stores a message once: appending the same id again changes nothing', async () => {
    const original = message('msg_dup', t0, { project_id: 'prj_dup' });
    await thread.append([original]);
    await thread.append([
      message('msg_dup', at(9000), { project_id: 'prj_dup', text: 'rewritten' }),
      message('msg_dup2', at(1), { project_id: 'prj_dup' }),
    ]);
    await thread.append([]);
    const stored = await thread.list('prj_dup', 'vid_1', { limit: 10 });
    assert.deepEqual(stored, [original, message('msg_dup2', at(1), { project_id: 'prj_dup' })]);
  });

  it("pages through a video's thread oldest first, each page continuing after the cursor", async () => {
    const seen: MessageRecord[] = [];
    let after: { created_at: Date; id: string } | undefined;
    for (;;) {
      const page = await thread.list('prj_t', 'vid_1', { limit: 3, ...(after ? { after } : {}) });
      seen.push(...page);
      if (page.length < 3) break;
      const last = page[page.length - 1]!;
      after = { created_at: last.created_at, id: last.id };
    }
    assert.deepEqual(seen, ordered);
    assert.equal(seen[0]!.image_urls, undefined, 'an absent optional field stays absent');
    assert.deepEqual(await thread.list('prj_t', 'vid_1', { limit: 0 }), []);
  });

  it('answers the last messages of a thread, oldest first', async () => {
    assert.deepEqual(await thread.recent('prj_t', 'vid_1', 3), ordered.slice(4));
    assert.deepEqual(await thread.recent('prj_t', 'vid_1', 100), ordered);
    assert.deepEqual(await thread.recent('prj_t', 'vid_2', 5), [
      message('msg_other', at(1500), { video_id: 'vid_2' }),
    ]);
  });

  it("deletes every thread of a project and no one else's", async () => {
    await thread.append([message('msg_keep', t0, { project_id: 'prj_keep' })]);
    await thread.append([message('msg_gone', t0, { project_id: 'prj_gone' })]);
    await thread.deleteByProject('prj_gone');
    assert.deepEqual(await thread.recent('prj_gone', 'vid_1', 10), []);
    assert.equal((await thread.recent('prj_keep', 'vid_1', 10)).length, 1);
  });
});

function event(projectId: string, seq: number, data: Record<string, unknown> = { n: seq }): ProjectEvent {
  return {
    type: 'assistant.delta',
    seq,
    ts: new Date(t0.getTime() + seq).toISOString(),
    project_id: projectId,
    video_id: seq % 2 === 0 ? 'vid_1' : null,
    turn_id: seq % 3 === 0 ? null : 'turn_1',
    data,
  };
}

const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('mongo event history', () => {
  let db: Db;
  before(() => {
    db = mongo.client.db('editor_events');
  });

  /** Appends seqs `from..to` in chunks of `chunk`, all at `now`. */
  async function appendRange(
    history: EventHistory,
    projectId: string,
    from: number,
    to: number,
    now: Date,
    chunk: number,
  ): Promise<void> {
    for (let start = from; start <= to; start += chunk) {
      const seqs = range(start, Math.min(start + chunk - 1, to));
      await history.append(
        projectId,
        seqs.map((seq) => event(projectId, seq)),
        now,
      );
    }
  }

  const documents = (projectId: string) =>
    db.collection('project_event_buckets').countDocuments({ project_id: projectId });
  const seqsOf = (events: ProjectEvent[]) => events.map((e) => e.seq);

  it('replays appended events in seq order from any point, complete', async () => {
    const history = await createMongoEventHistory(db);
    await appendRange(history, 'prj_replay', 1, 250, t0, 7);

    const all = await history.since('prj_replay', 0);
    assert.deepEqual(
      all.events,
      range(1, 250).map((seq) => event('prj_replay', seq)),
    );
    assert.equal(all.complete, true);

    const tail = await history.since('prj_replay', 240);
    assert.deepEqual(seqsOf(tail.events), range(241, 250));
    assert.equal(tail.complete, true);

    assert.deepEqual(await history.since('prj_replay', 250), { events: [], complete: true });
    assert.deepEqual(await history.since('prj_unknown', 0), { events: [], complete: true });
  });

  it('stores one document per bucket of consecutive seqs, not one per event', async () => {
    const history = await createMongoEventHistory(db);
    await appendRange(history, 'prj_docs', 1, 250, t0, 1);
    assert.equal(await documents('prj_docs'), Math.ceil(250 / 100));

    const small = await createMongoEventHistory(db, { bucketSize: 10 });
    await appendRange(small, 'prj_docs10', 1, 95, t0, 13);
    assert.equal(await documents('prj_docs10'), 10);
  });

  it('replaces events appended again from a seq, and drops what a never-committed attempt wrote after it', async () => {
    const history = await createMongoEventHistory(db);
    await appendRange(history, 'prj_again', 1, 250, t0, 50);
    // A redelivered command writes the same seqs again.
    const redelivered = [event('prj_again', 249, { again: true }), event('prj_again', 250, { again: true })];
    await history.append('prj_again', redelivered, at(10));
    // An attempt wrote 251..253, its commit failed, and the rerun gives out 251 again for something else:
    // the project's seq said 250, so nothing stored from 251 on was ever committed.
    await history.append(
      'prj_again',
      [251, 252, 253].map((seq) => event('prj_again', seq, { stale: true })),
      at(20),
    );
    const rerun = [event('prj_again', 251, { rerun: true })];
    await history.append('prj_again', rerun, at(30));

    const { events, complete } = await history.since('prj_again', 0);
    assert.equal(complete, true);
    assert.deepEqual(seqsOf(events), range(1, 251));
    assert.deepEqual(events.slice(248), [...redelivered, ...rerun]);
    assert.equal(await documents('prj_again'), 3);
    // The same holds when this process has no memory of the bucket (another node wrote it).
    const fresh = await createMongoEventHistory(db);
    await fresh.append('prj_again', [event('prj_again', 251, { fresh: true })], at(40));
    assert.deepEqual(seqsOf((await fresh.since('prj_again', 240)).events), range(241, 251));
  });

  it('prunes only buckets older than both limits: the last keepEvents and anything younger than keepMs stay', async () => {
    const history = await createMongoEventHistory(db, { bucketSize: 10, keepEvents: 30, keepMs: 1000 });
    const p = 'prj_prune';

    // 50 events, all young: more than keepEvents, none pruned.
    await appendRange(history, p, 1, 50, t0, 5);
    assert.equal(await documents(p), 5);
    assert.deepEqual(seqsOf((await history.since(p, 0)).events), range(1, 50));

    // Later, a new bucket starts (head 55): 1..10 and 11..20 are old and outside the last 30; 21..30 is old
    // but holds some of the last 30 (26..55), so it stays.
    await appendRange(history, p, 51, 55, at(2000), 5);
    assert.equal(await documents(p), 4);
    let since = await history.since(p, 0);
    assert.deepEqual(seqsOf(since.events), range(21, 55));
    assert.equal(since.complete, false, 'events 1..20 are gone');

    // Filling the current bucket prunes nothing; starting the next (head 61) lets 21..30 go.
    await appendRange(history, p, 56, 60, at(2000), 5);
    assert.equal(await documents(p), 4);
    await appendRange(history, p, 61, 61, at(2000), 1);
    assert.deepEqual(seqsOf((await history.since(p, 0)).events), range(31, 61));

    // Later still (cutoff at 1500 ms), up to head 100: 31..50 were written at 0 ms and go; 51..60 was written
    // at 2000 ms, young, so it stays although it is outside the last 30 (71..100).
    await appendRange(history, p, 62, 100, at(2500), 1);
    since = await history.since(p, 0);
    assert.deepEqual(seqsOf(since.events), range(51, 100));
    assert.equal(since.complete, false);
    assert.equal(await documents(p), 5);
  });

  it('says incomplete only when events after the asked seq were pruned', async () => {
    const history = await createMongoEventHistory(db, { bucketSize: 10, keepEvents: 30, keepMs: 1000 });
    const p = 'prj_complete';
    await appendRange(history, p, 1, 40, t0, 10);
    // Starting 61..70 (head 65) prunes the old buckets ending at or before 65 - 30 = 35: 1..30 go.
    await appendRange(history, p, 41, 65, at(5000), 5);

    const old = await history.since(p, 5);
    assert.equal(old.complete, false);
    assert.deepEqual(seqsOf(old.events), range(31, 65), 'answers what is kept');
    assert.equal((await history.since(p, 29)).complete, false);
    assert.deepEqual(await history.since(p, 30), {
      events: range(31, 65).map((seq) => event(p, seq)),
      complete: true,
    });
    assert.equal((await history.since(p, 60)).complete, true);
  });

  it("deletes a project's whole history and no one else's", async () => {
    const history = await createMongoEventHistory(db, { bucketSize: 10 });
    await appendRange(history, 'prj_delete', 1, 35, t0, 10);
    await appendRange(history, 'prj_survivor', 1, 5, t0, 5);
    await history.deleteProject('prj_delete');
    assert.equal(await documents('prj_delete'), 0);
    assert.deepEqual(await history.since('prj_delete', 0), { events: [], complete: true });
    assert.deepEqual(seqsOf((await history.since('prj_survivor', 0)).events), range(1, 5));
  });

  it('refuses a seq below 1 and bucket options that are not positive integers', async () => {
    const history = await createMongoEventHistory(db);
    await assert.rejects(history.append('prj_bad', [event('prj_bad', 0)], t0), /seq 0/);
    await assert.rejects(createMongoEventHistory(db, { bucketSize: 0 }), /bucketSize/);
    await assert.rejects(createMongoEventHistory(db, { keepEvents: 1.5 }), /keepEvents/);
    await assert.rejects(createMongoEventHistory(db, { bucketBytes: 0 }), /bucketBytes/);
  });

  /** An event of about 1 050 BSON bytes: three fit in 3 500 bytes, four do not. */
  const padded = (projectId: string, seq: number, tag = 'first'): ProjectEvent =>
    event(projectId, seq, { n: seq, tag, pad: 'x'.repeat(900) });
  /** An event of about 10 KB. */
  const huge = (projectId: string, seq: number, tag = 'first'): ProjectEvent =>
    event(projectId, seq, { n: seq, tag, pad: 'é'.repeat(5000) });

  /**
   * The project's stored buckets as `[first_seq, last_seq]`, oldest first, checked on the way: each holds its
   * seqs in order without a gap, each starts right after the previous one, and each is within the limits
   * (by bytes unless it holds a single event).
   */
  async function layout(
    projectId: string,
    limits: { bucketSize?: number; bucketBytes?: number } = {},
  ): Promise<[number, number][]> {
    const { bucketSize = 100, bucketBytes = 1024 * 1024 } = limits;
    const docs = await db
      .collection<{ first_seq: number; last_seq: number; events: ProjectEvent[] }>('project_event_buckets')
      .find({ project_id: projectId })
      .sort({ last_seq: 1 })
      .toArray();
    docs.forEach((doc, i) => {
      assert.deepEqual(seqsOf(doc.events), range(doc.first_seq, doc.last_seq), 'seqs in order, no gap');
      if (i > 0) assert.equal(doc.first_seq, docs[i - 1]!.last_seq + 1, 'each bucket follows the previous');
      assert.ok(doc.events.length <= bucketSize, `${doc.events.length} events in a bucket`);
      const bytes = doc.events.reduce((sum, e) => sum + BSON.calculateObjectSize(e), 0);
      assert.ok(
        doc.events.length === 1 || bytes <= bucketBytes,
        `${bytes} bytes in ${doc.events.length} events`,
      );
    });
    return docs.map((doc) => [doc.first_seq, doc.last_seq]);
  }

  /**
   * The same database, counting the calls made on its collections' `find`, `deleteMany` and `replaceOne`;
   * the `replaceOne` call that brings its count to `failAt` fails instead.
   */
  function watch(target: Db) {
    const calls = { find: 0, deleteMany: 0, replaceOne: 0 };
    const watched = { db: target, calls, failAt: 0 };
    watched.db = new Proxy(target, {
      get(base, prop) {
        const value: unknown = Reflect.get(base, prop);
        if (prop !== 'collection') return typeof value === 'function' ? value.bind(base) : value;
        return (...args: Parameters<Db['collection']>) =>
          new Proxy(base.collection(...args), {
            get(collection, name) {
              const member: unknown = Reflect.get(collection, name);
              if (typeof member !== 'function') return member;
              return (...callArgs: unknown[]) => {
                if (name === 'find' || name === 'deleteMany' || name === 'replaceOne') {
                  if (++calls[name] === watched.failAt && name === 'replaceOne') {
                    return Promise.reject(new Error('write failed'));
                  }
                }
                return member.apply(collection, callArgs) as unknown;
              };
            },
          });
      },
    });
    return watched;
  }

  it('reads nothing for an append right after the one this process wrote last, also when that one split', async () => {
    // keepEvents 5 makes every append that starts a bucket prune (nothing is old enough to go).
    const limits = { bucketSize: 4, bucketBytes: 3500, keepEvents: 5 };
    const watched = watch(db);
    const history = await createMongoEventHistory(watched.db, limits);
    const p = 'prj_cache';
    const mixed = (seq: number) => (seq % 5 === 0 ? huge(p, seq) : padded(p, seq));
    // The first append reads (and deletes whatever a lost attempt left); none of the later ones do.
    await history.append(p, [mixed(1)], t0);
    assert.deepEqual({ ...watched.calls }, { find: 1, deleteMany: 1, replaceOne: 1 });
    for (const [from, to] of [
      [2, 6],
      [7, 7],
      [8, 13],
      [14, 14],
      [15, 15],
      [16, 21],
    ] as const) {
      await history.append(p, range(from, to).map(mixed), at(from));
    }
    assert.equal(watched.calls.find, 1, 'no read after the first append');
    assert.equal(
      watched.calls.deleteMany,
      1 + 5,
      'deletes only to prune, once per append that starts a bucket',
    );
    assert.deepEqual(await layout(p, limits), [
      [1, 3],
      [4, 4],
      [5, 5],
      [6, 8],
      [9, 9],
      [10, 10],
      [11, 13],
      [14, 14],
      [15, 15],
      [16, 18],
      [19, 19],
      [20, 20],
      [21, 21],
    ]);
    assert.deepEqual((await history.since(p, 0)).events, range(1, 21).map(mixed));
  });

  it('stores 60 events of 300 KB each (the whole project in project.updated) in buckets of at most ~1 MiB', async (t) => {
    const history = await createMongoEventHistory(db);
    const p = 'prj_big';
    const context = '山'.repeat(100_000); // 300 000 bytes of UTF-8
    const updated = (seq: number): ProjectEvent =>
      event(p, seq, { project: { id: p, name: `Edit ${seq}`, context_md: context } });
    const times: number[] = [];
    for (let seq = 1; seq <= 60; seq++) {
      const started = performance.now();
      await history.append(p, [updated(seq)], at(seq));
      times.push(performance.now() - started);
    }
    // A small edit after them all (with buckets of 100 seqs, this and every later edit failed).
    const renamed = event(p, 61, { project: { id: p, name: 'Renamed' } });
    await history.append(p, [renamed], at(61));
    const total = times.reduce((sum, ms) => sum + ms, 0);
    t.diagnostic(
      `60 appends of 300 KB: ${total.toFixed(0)} ms in all, mean ${(total / 60).toFixed(1)} ms, ` +
        `first 10 ${(times.slice(0, 10).reduce((s, ms) => s + ms, 0) / 10).toFixed(1)} ms, ` +
        `last 10 ${(times.slice(-10).reduce((s, ms) => s + ms, 0) / 10).toFixed(1)} ms, max ${Math.max(...times).toFixed(0)} ms`,
    );

    const expected = [...range(1, 60).map(updated), renamed];
    const { events, complete } = await history.since(p, 0);
    assert.equal(complete, true);
    assert.equal(events.length, 61);
    assert.deepEqual(events, expected);
    const fresh = await createMongoEventHistory(db);
    assert.deepEqual((await fresh.since(p, 45)).events, expected.slice(45));

    // Three 300 KB events per bucket (four would pass 1 MiB); the small one joins the last.
    assert.deepEqual(await layout(p), [
      ...range(0, 18).map((i): [number, number] => [i * 3 + 1, i * 3 + 3]),
      [58, 61],
    ]);
    const docs = await db.collection('project_event_buckets').find({ project_id: p }).toArray();
    for (const doc of docs) {
      assert.ok(BSON.calculateObjectSize(doc) <= 2 * 1024 * 1024, `${doc._id}: BSON within 2 MiB`);
      assert.ok(Buffer.byteLength(JSON.stringify(doc)) <= 2 * 1024 * 1024, `${doc._id}: JSON within 2 MiB`);
    }
  });

  it('replaces from the middle of a range of buckets: truncates the one holding the seq, drops those after', async () => {
    const limits = { bucketBytes: 3500 };
    const history = await createMongoEventHistory(db, limits);
    const p = 'prj_middle';
    for (let start = 1; start <= 20; start += 4) {
      const seqs = range(start, Math.min(start + 3, 20));
      await history.append(
        p,
        seqs.map((seq) => padded(p, seq)),
        t0,
      );
    }
    assert.deepEqual(await layout(p, limits), [
      [1, 3],
      [4, 6],
      [7, 9],
      [10, 12],
      [13, 15],
      [16, 18],
      [19, 20],
    ]);

    // An attempt wrote 8..20 and its commit failed; the rerun gives out 8.. again, fewer of them.
    const rerun = range(8, 11).map((seq) => padded(p, seq, 'rerun'));
    await history.append(p, rerun, at(100));
    assert.deepEqual(await layout(p, limits), [
      [1, 3],
      [4, 6],
      [7, 9],
      [10, 11],
    ]);
    assert.deepEqual((await history.since(p, 0)).events, [
      ...range(1, 7).map((seq) => padded(p, seq)),
      ...rerun,
    ]);

    // Without a cache (another node), from a seq that starts a bucket: the full bucket before stays as it is.
    const fresh = await createMongoEventHistory(db, limits);
    const again = [4, 5].map((seq) => padded(p, seq, 'again'));
    await fresh.append(p, again, at(200));
    assert.deepEqual(await layout(p, limits), [
      [1, 3],
      [4, 5],
    ]);
    // The first node remembers 10..11, which is gone: appending 6 reads the bucket holding 5.
    const next = padded(p, 6, 'next');
    await history.append(p, [next], at(300));
    assert.deepEqual(await layout(p, limits), [
      [1, 3],
      [4, 6],
    ]);
    const { events, complete } = await fresh.since(p, 0);
    assert.equal(complete, true);
    assert.deepEqual(events, [...range(1, 3).map((seq) => padded(p, seq)), ...again, next]);
  });

  it('packs small events up to the limits and gives an event larger than the byte limit a bucket of its own', async () => {
    const limits = { bucketSize: 8, bucketBytes: 4096 };
    const history = await createMongoEventHistory(db, limits);
    const p = 'prj_mixed';
    const mixed = (seq: number) => (seq % 10 === 5 ? huge(p, seq) : event(p, seq));
    for (let start = 1; start <= 40; start += 3) {
      const seqs = range(start, Math.min(start + 2, 40));
      await history.append(p, seqs.map(mixed), at(start));
    }
    assert.deepEqual(await layout(p, limits), [
      [1, 4],
      [5, 5],
      [6, 13],
      [14, 14],
      [15, 15],
      [16, 23],
      [24, 24],
      [25, 25],
      [26, 33],
      [34, 34],
      [35, 35],
      [36, 40],
    ]);
    const { events, complete } = await history.since(p, 0);
    assert.equal(complete, true);
    assert.deepEqual(events, range(1, 40).map(mixed));
    assert.deepEqual(seqsOf((await history.since(p, 14)).events), range(15, 40));
  });

  it('keeps the same buckets whether or not this process remembers the last one (splits, reruns, redeliveries)', async () => {
    const limits = { bucketSize: 4, bucketBytes: 3500 };
    const warm = await createMongoEventHistory(db, limits);
    const ev = (p: string, seq: number, tag: string) =>
      seq % 7 === 0 ? huge(p, seq, tag) : seq % 3 === 0 ? event(p, seq, { tag }) : padded(p, seq, tag);
    const steps: [from: number, to: number, tag: string][] = [
      [1, 5, 'a'],
      [6, 6, 'a'],
      [7, 12, 'a'],
      [11, 12, 'redelivered'],
      [13, 20, 'stale'],
      [13, 14, 'rerun'],
      ...range(0, 3).map((i): [number, number, string] => [15 + i * 5, 19 + i * 5, 'b']),
      [22, 23, 'middle'],
      [24, 26, 'c'],
      [27, 27, 'c'],
    ];
    for (const [i, [from, to, tag]] of steps.entries()) {
      const cold = await createMongoEventHistory(db, limits);
      await warm.append(
        'prj_warm',
        range(from, to).map((seq) => ev('prj_warm', seq, tag)),
        at(i),
      );
      await cold.append(
        'prj_cold',
        range(from, to).map((seq) => ev('prj_cold', seq, tag)),
        at(i),
      );
      assert.deepEqual(await layout('prj_warm', limits), await layout('prj_cold', limits), `step ${i}`);
    }
    const tags = (events: ProjectEvent[]) => events.map((e) => [e.seq, e.data.tag]);
    const warmEvents = (await warm.since('prj_warm', 0)).events;
    assert.deepEqual(tags(warmEvents), tags((await warm.since('prj_cold', 0)).events));
    assert.deepEqual(tags(warmEvents), [
      ...range(1, 10).map((seq) => [seq, 'a']),
      [11, 'redelivered'],
      [12, 'redelivered'],
      [13, 'rerun'],
      [14, 'rerun'],
      ...range(15, 21).map((seq) => [seq, 'b']),
      [22, 'middle'],
      [23, 'middle'],
      ...range(24, 27).map((seq) => [seq, 'c']),
    ]);
  });

  it('leaves a gapless prefix when a write fails between buckets, and the redelivered append writes it all', async () => {
    const limits = { bucketBytes: 3500 };
    const watched = watch(db);
    const history = await createMongoEventHistory(watched.db, limits);
    const p = 'prj_crash';
    await history.append(
      p,
      [1, 2].map((seq) => padded(p, seq)),
      t0,
    );

    // 3..10: the bucket holding 2 gets 3, then 4..6 and 7..9 and 10 are new. The third write (7..9) fails.
    watched.calls.replaceOne = 0;
    watched.failAt = 3;
    const batch = range(3, 10).map((seq) => padded(p, seq, 'batch'));
    await assert.rejects(history.append(p, batch, at(10)), /write failed/);
    assert.deepEqual(await layout(p, limits), [
      [1, 3],
      [4, 6],
    ]);
    assert.deepEqual(await history.since(p, 0), {
      events: [padded(p, 1), padded(p, 2), ...batch.slice(0, 4)],
      complete: true,
    });

    watched.failAt = 0;
    await history.append(p, batch, at(20));
    assert.deepEqual(await layout(p, limits), [
      [1, 3],
      [4, 6],
      [7, 9],
      [10, 10],
    ]);
    assert.deepEqual((await history.since(p, 0)).events, [padded(p, 1), padded(p, 2), ...batch]);
  });

  it('prunes variable buckets only when older than both limits, never the newest one', async () => {
    const limits = { bucketBytes: 3500, keepEvents: 10, keepMs: 1000 };
    const history = await createMongoEventHistory(db, limits);
    const p = 'prj_prune_bytes';
    const write = async (from: number, to: number, now: Date) => {
      for (let seq = from; seq <= to; seq++) await history.append(p, [padded(p, seq)], now);
    };

    await write(1, 12, t0);
    assert.deepEqual(await layout(p, limits), [
      [1, 3],
      [4, 6],
      [7, 9],
      [10, 12],
    ]);
    // Later, 13 starts a bucket (head 13): 1..3 is old and outside the last 10 (4..13); 4..6 holds some.
    await write(13, 15, at(2000));
    assert.deepEqual(await layout(p, limits), [
      [4, 6],
      [7, 9],
      [10, 12],
      [13, 15],
    ]);
    let since = await history.since(p, 0);
    assert.deepEqual(seqsOf(since.events), range(4, 15));
    assert.equal(since.complete, false);
    assert.equal((await history.since(p, 3)).complete, true);

    // At 2500 ms (cutoff 1500 ms), up to head 40: what was written at 0 ms goes once outside the last 10;
    // 13..15 was written at 2000 ms, so it stays although outside the last 10 (31..40).
    await write(16, 40, at(2500));
    assert.deepEqual(await layout(p, limits), [
      [13, 15],
      ...range(0, 7).map((i): [number, number] => [16 + i * 3, 18 + i * 3]),
      [40, 40],
    ]);
    since = await history.since(p, 12);
    assert.deepEqual(seqsOf(since.events), range(13, 40));
    assert.equal(since.complete, true);

    // Much later, starting 43 (head 43) leaves exactly the buckets holding the last 10 (34..43).
    await write(41, 43, at(10_000));
    assert.deepEqual(await layout(p, limits), [
      [34, 36],
      [37, 39],
      [40, 42],
      [43, 43],
    ]);

    // Buckets of one large event each: with keepEvents 1 and keepMs 0 only the newest one is left.
    const tight = await createMongoEventHistory(db, { bucketBytes: 4096, keepEvents: 1, keepMs: 0 });
    for (let seq = 1; seq <= 5; seq++) await tight.append('prj_tight', [huge('prj_tight', seq)], at(seq));
    assert.deepEqual(await layout('prj_tight', { bucketBytes: 4096 }), [[5, 5]]);
    assert.deepEqual(await tight.since('prj_tight', 4), { events: [huge('prj_tight', 5)], complete: true });
    assert.equal((await tight.since('prj_tight', 3)).complete, false);
  });

  it('reads and continues documents written with fixed buckets of 100 seqs', async () => {
    const p = 'prj_legacy';
    await db.collection<{ _id: string } & Record<string, unknown>>('project_event_buckets').insertMany([
      {
        _id: `${p}:0`,
        project_id: p,
        bucket: 0,
        first_seq: 1,
        last_seq: 100,
        events: range(1, 100).map((seq) => event(p, seq)),
        updated_at: t0,
      },
      {
        _id: `${p}:1`,
        project_id: p,
        bucket: 1,
        first_seq: 101,
        last_seq: 130,
        events: range(101, 130).map((seq) => event(p, seq)),
        updated_at: t0,
      },
    ]);
    const history = await createMongoEventHistory(db);
    assert.deepEqual(await history.since(p, 0), {
      events: range(1, 130).map((seq) => event(p, seq)),
      complete: true,
    });
    assert.deepEqual(seqsOf((await history.since(p, 110)).events), range(111, 130));

    // New events fill the last old bucket up to 100, then start new ones.
    await appendRange(history, p, 131, 210, at(10), 7);
    assert.deepEqual(await layout(p), [
      [1, 100],
      [101, 200],
      [201, 210],
    ]);
    // Replacing from the middle of an old bucket truncates it in place.
    const fresh = await createMongoEventHistory(db);
    const again = [150, 151].map((seq) => event(p, seq, { again: true }));
    await fresh.append(p, again, at(20));
    assert.deepEqual(await layout(p), [
      [1, 100],
      [101, 151],
    ]);
    const ids = await db
      .collection<{ _id: string; project_id: string }>('project_event_buckets')
      .find({ project_id: p })
      .toArray();
    assert.deepEqual(ids.map((doc) => doc._id).sort(), [`${p}:0`, `${p}:1`]);
    assert.deepEqual((await fresh.since(p, 0)).events, [
      ...range(1, 149).map((seq) => event(p, seq)),
      ...again,
    ]);

    // An old bucket already past the byte limit (e.g. the one a project got stuck on) gets no more events.
    const q = 'prj_legacy_big';
    await db.collection<{ _id: string } & Record<string, unknown>>('project_event_buckets').insertOne({
      _id: `${q}:0`,
      project_id: q,
      bucket: 0,
      first_seq: 1,
      last_seq: 10,
      events: range(1, 10).map((seq) => padded(q, seq)),
      updated_at: t0,
    });
    const small = await createMongoEventHistory(db, { bucketBytes: 3500 });
    await small.append(q, [padded(q, 11)], at(30));
    await small.append(q, [padded(q, 12)], at(31));
    const stored = await db
      .collection<{ _id: string; project_id: string; first_seq: number; last_seq: number }>(
        'project_event_buckets',
      )
      .find({ project_id: q })
      .sort({ last_seq: 1 })
      .toArray();
    assert.deepEqual(
      stored.map((doc) => [doc._id, doc.first_seq, doc.last_seq]),
      [
        [`${q}:0`, 1, 10],
        [`${q}@11`, 11, 12],
      ],
    );
    assert.deepEqual(
      (await small.since(q, 0)).events,
      range(1, 12).map((seq) => padded(q, seq)),
    );
  });
});
