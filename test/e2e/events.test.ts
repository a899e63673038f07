// The project events WebSocket end to end (docs/editor.md): the service as a process in single-node mode (a
// MongoDB-wire server owned by this file, which outlives a restart of the service), the builtin agent and the
// sandbox provider with short timings, and the `ws` package as the client. Live delivery against instruct's
// `agent_events`, replay from `since=` (also across a restart), `sync.reset`, the handshake's refusals, the
// close codes (1000 project deleted, 1008 key revoked, 1012 restart, 1013 too slow) and `video_id=` narrowing.
import { describe, it, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { MongoClient } from 'mongodb';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { adminClient, call, startService, type RunningService } from '../helpers/service.ts';
import {
  checkTurnAnswer,
  editorClient,
  editorUser,
  makeMedia,
  withServiceLogs,
  type EditorEvent,
} from '../helpers/editor.ts';
import {
  openEventsSocket,
  refusedHandshake,
  type EventsSocket,
  type EventsSocketOptions,
} from '../helpers/events-socket.ts';
import { until } from '../helpers/wait.ts';

const DB = 'events_socket';
const EVENT_KEYS = ['data', 'project_id', 'seq', 'ts', 'turn_id', 'type', 'video_id'];

const seqsOf = (events: readonly EditorEvent[]) => events.map((event) => event.seq);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Asserts `events` run from seq `from` to `to` in order, each once. */
function assertRun(events: readonly EditorEvent[], from: number, to: number, what: string) {
  assert.deepEqual(seqsOf(events), range(from, to), `${what}: seqs ${from}..${to} in order, each once`);
}

describe('project events WebSocket', () => {
  let mongo: TestMongo;
  let db: MongoClient;
  let service: RunningService;
  // Kept across the restart: the restarted service serves the same media.
  const mediaDir = mkdtempSync(join(tmpdir(), 'mf-events-media-'));
  const serviceEnv = () => ({
    MONGO_URL: mongo.uri,
    MONGO_DB: DB,
    MEDIA_DIR: mediaDir,
    SANDBOX_VIDEO_MS: '300',
    SANDBOX_IMAGE_MS: '200',
    PROVIDER_POLL_INTERVAL_MS: '200',
    PROVIDER_TIMEOUT_MS: '60000',
    RATE_LIMIT_PER_MINUTE: '1000000',
    // Revoked keys' sockets close within a second (case "closes a revoked key's socket").
    WS_RECHECK_MS: '500',
  });
  /** The sockets the running test opened: dropped after it, whatever its outcome. */
  const opened: EventsSocket[] = [];

  before(async () => {
    mongo = await startMongo();
    db = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
    await db.connect();
    service = await startService(serviceEnv());
  });
  afterEach(() => {
    for (const socket of opened.splice(0)) socket.ws.terminate();
  });
  after(async () => {
    await service?.stop();
    await db?.close();
    await mongo?.stop();
  });

  const logged = <T>(body: () => Promise<T>) => withServiceLogs(() => [service], body);

  /** A fresh user (editor scopes) with a new project and its first video. */
  async function setUp() {
    const user = await editorUser(service);
    const editor = editorClient(() => service, user.token);
    const project = await editor.createProject({ name: 'Events' });
    const state = await editor.state(project.id);
    return { user, token: user.token, editor, projectId: project.id, videoId: state.body.videos[0]!.id };
  }
  type Editor = Awaited<ReturnType<typeof setUp>>['editor'];

  /** Opens a socket on the service running now (dropped after the test). */
  async function listen(projectId: string, options: EventsSocketOptions): Promise<EventsSocket> {
    const socket = await openEventsSocket(service.url, projectId, options);
    opened.push(socket);
    return socket;
  }

  /** A direct edit (one `project.updated` event): renames the project, answers its revision. */
  async function rename(editor: Editor, projectId: string, name: string): Promise<number> {
    const answer = await editor.send<{ project: { revision: number } }>('PATCH', `/${projectId}`, {
      body: { name },
    });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body.project.revision;
  }

  /** The project's stored event history (`project_event_buckets`), ascending. */
  async function storedEvents(projectId: string): Promise<EditorEvent[]> {
    const buckets = await db
      .db(DB)
      .collection<{ events: EditorEvent[] }>('project_event_buckets')
      .find({ project_id: projectId })
      .toArray();
    return buckets.flatMap((bucket) => bucket.events).sort((a, b) => a.seq - b.seq);
  }

  /** One sample of the running service's metrics (`GET /metrics`, Prometheus text), 0 when absent. */
  async function metric(sample: string): Promise<number> {
    const answer = await fetch(`${service.url}/metrics`, {
      headers: { authorization: `Bearer ${service.adminToken}` },
    });
    const line = (await answer.text()).split('\n').find((one) => one.startsWith(`${sample} `));
    return line ? Number(line.slice(sample.length + 1)) : 0;
  }
  const TOO_SLOW_CLOSES = 'mf_events_socket_closes_total{reason="tooSlow"}';

  it('delivers a multi-turn conversation live, in strictly increasing seq without gaps, each turn equal to its agent_events', () =>
    logged(async () => {
      const { token, editor, projectId, videoId } = await setUp();
      const socket = await listen(projectId, { token });
      const turns: { turnId: string; events: EditorEvent[] }[] = [];
      const instruct = async (instruction: string) => {
        const answer = await editor.instruct(projectId, { instruction });
        const { turnId } = checkTurnAnswer(answer, projectId);
        turns.push({ turnId, events: answer.body.agent_events });
        return answer.body;
      };

      const plan = await instruct('a 2-scene video about a lighthouse at dawn');
      assert.equal(plan.context_appended, true);
      const first = await instruct('continue');
      assert.equal(first.media_gen_done, true, first.assistant_text);
      assert.equal(first.clips_created.length, 1);

      // A direct edit between the turns, then one while the next turn runs (it may land between its events).
      const patched = await editor.patchClip(projectId, first.clips_created[0]!.id, { volume: 0.5 });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      const afterFirst = first.agent_events.at(-1)!.seq;
      const running = editor.instruct(projectId, { instruction: 'continue' });
      await socket.waitFor('the third turn started', (events) =>
        events.some((event) => event.type === 'turn.started' && event.seq > afterFirst),
      );
      await rename(editor, projectId, 'Renamed during a turn');
      const second = await running;
      const { turnId } = checkTurnAnswer(second, projectId);
      assert.equal(second.body.media_gen_done, true, second.body.assistant_text);
      assert.equal(second.body.clips_created[0]?.video_id, videoId);
      turns.push({ turnId, events: second.body.agent_events });

      const stored = await storedEvents(projectId);
      const head = stored.at(-1)!.seq;
      await socket.waitForSeq(head);
      // Every event once, from the project's first seq, exactly as stored.
      assertRun(socket.events, 1, head, 'live socket');
      assert.deepEqual(socket.events, stored, 'the live events are the stored history');
      for (const event of socket.events) {
        assert.deepEqual(Object.keys(event).sort(), EVENT_KEYS, JSON.stringify(event));
        assert.equal(event.project_id, projectId);
      }
      // Each turn's events on the socket are its agent_events: the same objects in the same order.
      for (const turn of turns) {
        assert.deepEqual(
          socket.events.filter((event) => event.turn_id === turn.turnId),
          turn.events,
          `the events of turn ${turn.turnId}`,
        );
      }
      for (const type of ['media.completed', 'asset.created', 'clip.created']) {
        assert.equal(socket.events.filter((event) => event.type === type).length, 2, `two ${type}`);
      }
      // The direct edits: turn_id null, in the order they were made, each with its revision.
      const direct = socket.events.filter((event) => !turns.some((turn) => turn.turnId === event.turn_id));
      assert.deepEqual(
        direct.map((event) => [event.type, event.turn_id]),
        [
          ['clip.updated', null],
          ['project.updated', null],
        ],
      );
      assert.equal((direct[0]!.data.clip as { volume: number }).volume, 0.5);
      assert.equal((direct[1]!.data.project as { name: string }).name, 'Renamed during a turn');
      for (const event of direct) assert.ok(Number.isInteger(event.data.revision), JSON.stringify(event));
      assert.equal(socket.closed, undefined, 'the socket stays open');
    }));

  it('replays exactly the events after since= (0, a middle seq, the head), then live ones, and sockets opened at once agree', () =>
    logged(async () => {
      const { token, editor, projectId } = await setUp();
      checkTurnAnswer(
        await editor.instruct(projectId, { instruction: 'a 2-scene video about a harbour' }),
        projectId,
      );
      for (let i = 0; i < 8; i++) await rename(editor, projectId, `Harbour ${i}`);
      const stored = await storedEvents(projectId);
      const head = stored.at(-1)!.seq;
      assertRun(stored, 1, head, 'stored history');
      const middle = Math.floor(head / 2);

      // Opened at once, on a project no socket watched yet: one history read serves them all.
      const sinces = [0, middle, head];
      const sockets = await Promise.all(sinces.map((since) => listen(projectId, { token, since })));
      await rename(editor, projectId, 'Live after the replay');
      for (const socket of sockets) await socket.waitForSeq(head + 1);
      const live = sockets[0]!.events.at(-1)!;
      assert.equal(live.type, 'project.updated');
      for (const [i, socket] of sockets.entries()) {
        const since = sinces[i]!;
        assert.deepEqual(
          socket.events,
          [...stored.filter((event) => event.seq > since), live],
          `since=${since}: the kept events after it, then the live one`,
        );
      }

      // Now replays are served while edits keep coming: every socket still gets each seq once, in order.
      const burst = 30;
      const watcher = sockets[0]!;
      const editing = (async () => {
        for (let i = 0; i < burst; i++) await rename(editor, projectId, `Burst ${i}`);
      })();
      const late: { since: number; socket: EventsSocket }[] = [];
      for (const step of [3, 10, 20]) {
        await watcher.waitForSeq(head + 1 + step);
        for (const since of [0, head - 2, head + step]) {
          late.push({ since, socket: await listen(projectId, { token, since }) });
        }
      }
      await editing;
      const last = head + 1 + burst;
      for (const { since, socket } of [
        ...late,
        ...sinces.map((since, i) => ({ since, socket: sockets[i]! })),
      ]) {
        await socket.waitForSeq(last);
        assertRun(socket.events, since + 1, last, `since=${since} during a burst of edits`);
      }
      const all = await storedEvents(projectId);
      assert.deepEqual(watcher.events, all, 'what the sockets delivered is what was stored');
    }));

  it('answers sync.reset history_expired when since is older than what is kept, unknown_seq when it is beyond the head, then goes live', () =>
    logged(async () => {
      const { token, editor, projectId } = await setUp();
      // 130 events: buckets 0 (seqs 1..100) and 1 (101..130). No socket watches the project, so replays read
      // the history, not a node's window.
      const count = 130;
      const editing = Array.from({ length: 4 }, async (_, lane) => {
        for (let i = lane; i < count; i += 4) await rename(editor, projectId, `Edit ${i}`);
      });
      await Promise.all(editing);
      const buckets = db.db(DB).collection<{ _id: string; first_seq: number }>('project_event_buckets');
      const before = await buckets.find({ project_id: projectId }).sort({ first_seq: 1 }).toArray();
      assert.deepEqual(
        before.map((bucket) => bucket.first_seq),
        [1, 101],
        'two buckets of 100 seqs',
      );
      // Seqs 1..100 are no longer kept.
      assert.equal((await buckets.deleteOne({ _id: before[0]!._id })).deletedCount, 1);

      const expired = await listen(projectId, { token, since: 0 });
      const reset = (await expired.waitFor('a sync.reset', (events) => events.length >= 1))[0]!;
      assert.deepEqual(Object.keys(reset).sort(), EVENT_KEYS);
      assert.deepEqual(
        [reset.type, reset.seq, reset.project_id, reset.video_id, reset.turn_id, reset.data],
        ['sync.reset', count, projectId, null, null, { reason: 'history_expired', head_seq: count }],
      );
      assert.ok(!Number.isNaN(Date.parse(reset.ts)), reset.ts);
      // The first kept seq is 101: since=100 replays 101..130; since=99 misses 100 and is reset too.
      const boundary = await listen(projectId, { token, since: count - 30 });
      const missing = await listen(projectId, { token, since: count - 31 });
      await boundary.waitForSeq(count);
      await missing.waitFor('a sync.reset', (events) => events.length >= 1);

      await rename(editor, projectId, 'Live after the reset');
      for (const socket of [expired, boundary, missing]) await socket.waitForSeq(count + 1);
      assert.deepEqual(
        expired.events.map((event) => [event.type, event.seq]),
        [
          ['sync.reset', count],
          ['project.updated', count + 1],
        ],
      );
      assert.deepEqual(
        missing.events.map((event) => [event.type, event.seq, event.data.reason]),
        [
          ['sync.reset', count, 'history_expired'],
          ['project.updated', count + 1, undefined],
        ],
      );
      assertRun(boundary.events, count - 29, count + 1, 'since=100 (the oldest kept seq - 1)');

      // A since beyond the head (no such seq in this project) is reset to the head, then live.
      const beyond = await listen(projectId, { token, since: count + 1000 });
      const unknown = (await beyond.waitFor('a sync.reset', (events) => events.length >= 1))[0]!;
      assert.deepEqual(
        [unknown.type, unknown.seq, unknown.data],
        ['sync.reset', count + 1, { reason: 'unknown_seq', head_seq: count + 1 }],
      );
      await rename(editor, projectId, 'Live after unknown_seq');
      await beyond.waitForSeq(count + 2);
      assert.deepEqual(
        beyond.events.map((event) => [event.type, event.seq]),
        [
          ['sync.reset', count + 1],
          ['project.updated', count + 2],
        ],
      );
    }));

  it('refuses handshakes without a key (401), without video-editor:read (403), of another user (404), of a foreign video_id (404) and from a foreign Origin (403)', () =>
    logged(async () => {
      const { user, token, editor, projectId } = await setUp();
      const refused = (options: EventsSocketOptions, id = projectId) =>
        refusedHandshake(service.url, id, options);
      const admin = adminClient(service);

      assert.deepEqual(await refused({}), { status: 401, body: { error: 'Missing Authorization header' } });
      assert.deepEqual(await refused({ token: 'mf_live_not_a_key' }), {
        status: 401,
        body: { error: 'Invalid or revoked API key' },
      });
      for (const scopes of [['video-editor:write'], ['video:write', 'image:write']]) {
        const key = await admin.createKey(user.userId, scopes);
        assert.deepEqual(
          await refused({ token: key.apiKey }),
          { status: 403, body: { error: 'Missing required scope: video-editor:read' } },
          `a key with ${scopes.join(', ')}`,
        );
      }
      const other = await setUp();
      assert.deepEqual(await refused({ token: other.token }), {
        status: 404,
        body: { error: 'Project not found' },
      });
      assert.deepEqual(await refused({ token }, 'prj_does_not_exist'), {
        status: 404,
        body: { error: 'Project not found' },
      });
      const mine = await editor.createProject({ name: 'Another' });
      const foreignVideo = (await editor.state(mine.id)).body.videos[0]!.id;
      assert.deepEqual(await refused({ token, videoId: foreignVideo }), {
        status: 404,
        body: { error: 'Video not found' },
      });
      for (const since of ['-1', 'abc', '1.5']) {
        const answer = await refused({ token, since });
        assert.equal(answer.status, 400, `since=${since}: ${JSON.stringify(answer.body)}`);
        assert.match(answer.body.error ?? '', /since/);
      }
      const plain = await call(service.url, 'GET', `/api/v1/media-studio/projects/${projectId}/events`, {
        token,
      });
      assert.equal(plain.status, 426, 'a GET without the WebSocket handshake');
      assert.equal(typeof plain.body.error, 'string');

      // Origin: a page of another site is refused; the service's own origin and no Origin are let in.
      for (const origin of ['https://evil.example.com', 'null', `${service.url}.evil.example.com`]) {
        assert.deepEqual(
          await refused({ token, origin }),
          { status: 403, body: { error: 'Origin not allowed' } },
          `Origin ${origin}`,
        );
      }
      const sameOrigin = await listen(projectId, { token, origin: new URL(service.url).origin });
      const noOrigin = await listen(projectId, { token });
      // The key as ?access_token= (a browser's way); a wrong one is 401.
      const byQuery = await listen(projectId, { accessToken: token });
      assert.deepEqual(await refused({ accessToken: 'mf_live_not_a_key' }), {
        status: 401,
        body: { error: 'Invalid or revoked API key' },
      });
      const seq = (await storedEvents(projectId)).length + 1;
      await rename(editor, projectId, 'Seen by all three');
      for (const socket of [sameOrigin, noOrigin, byQuery]) {
        await socket.waitForSeq(seq);
        assert.deepEqual(seqsOf(socket.events), [seq]);
      }
    }));

  it('refuses a handshake whose Connection header does not ask for the upgrade alone (400), and keeps a valid one open', () =>
    logged(async () => {
      const { token, projectId } = await setUp();
      const { hostname, port } = new URL(service.url);
      /** A raw handshake: its status line, and whether the service closed the connection within a second. */
      const handshake = (connection: string) =>
        new Promise<{ status: string; closed: boolean }>((resolve) => {
          const socket = connect(Number(port), hostname);
          let data = '';
          socket.on('connect', () =>
            socket.write(
              `GET /api/v1/media-studio/projects/${projectId}/events HTTP/1.1\r\nHost: ${hostname}:${port}\r\n` +
                `Upgrade: websocket\r\nConnection: ${connection}\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n` +
                `Sec-WebSocket-Version: 13\r\nAuthorization: Bearer ${token}\r\n\r\n`,
            ),
          );
          socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
          const done = (closed: boolean) => {
            clearTimeout(timer);
            socket.destroy();
            resolve({ status: data.split('\r\n')[0]!, closed });
          };
          const timer = setTimeout(() => done(false), 1000);
          socket.on('end', () => done(true));
          socket.on('error', () => done(true));
        });
      assert.deepEqual(await handshake('Upgrade'), {
        status: 'HTTP/1.1 101 Switching Protocols',
        closed: false,
      });
      for (const connection of ['close', 'Upgrade, close', 'keep-alive']) {
        assert.deepEqual(
          await handshake(connection),
          { status: 'HTTP/1.1 400 Bad Request', closed: true },
          `Connection: ${connection}`,
        );
      }
    }));

  it('closes the sockets of a key revoked mid-stream with 1008 within a few seconds, and only those', () =>
    logged(async () => {
      const { user, token, editor, projectId } = await setUp();
      const doomedKey = await adminClient(service).createKey(user.userId, ['video-editor:read']);
      const doomed = await listen(projectId, { token: doomedKey.apiKey });
      const doomedByQuery = await listen(projectId, { accessToken: doomedKey.apiKey });
      const kept = await listen(projectId, { token });
      await rename(editor, projectId, 'Before the revocation');
      for (const socket of [doomed, doomedByQuery, kept]) await socket.waitForSeq(1);

      const revokedAt = Date.now();
      const revoked = await adminClient(service).call('DELETE', `/keys/${doomedKey.id}`);
      assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
      for (const socket of [doomed, doomedByQuery]) {
        assert.deepEqual(await socket.waitForClose(5000), { code: 1008, reason: 'API key revoked' });
      }
      const tookMs = Date.now() - revokedAt;
      assert.ok(tookMs < 5000, `closed ${tookMs} ms after the revocation (WS_RECHECK_MS=500)`);

      await rename(editor, projectId, 'After the revocation');
      await kept.waitForSeq(2);
      assert.equal(kept.closed, undefined, 'a socket of another key stays open');
      assertRun(kept.events, 1, 2, 'the other key’s socket');
      assert.equal((await refusedHandshake(service.url, projectId, { token: doomedKey.apiKey })).status, 401);
    }));

  it('narrows a socket with video_id= to that video’s events and project-wide ones, live and replayed', () =>
    logged(async () => {
      const { token, editor, projectId, videoId: videoA } = await setUp();
      const created = await editor.send<{ video: { id: string } }>('POST', `/${projectId}/videos`, {
        body: { name: 'Second' },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const videoB = created.body.video.id;
      const all = await listen(projectId, { token });
      const onlyA = await listen(projectId, { token, videoId: videoA });
      const onlyB = await listen(projectId, { token, videoId: videoB });

      const image = await editor.upload(projectId, makeMedia('png'), 'image/png');
      assert.equal(image.status, 200, JSON.stringify(image.body));
      const clip = async (video: string) => {
        const answer = await editor.addClip(projectId, {
          video_id: video,
          track: 'video',
          asset_id: image.body.asset.id,
        });
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        return answer.body.clip.id;
      };
      const clipA = await clip(videoA);
      const clipB = await clip(videoB);
      assert.equal((await editor.patchClip(projectId, clipA, { duration_sec: 2 })).status, 200);
      assert.equal((await editor.deleteClip(projectId, clipB)).status, 200);
      const ratio = await editor.send('PATCH', `/${projectId}/videos/${videoB}`, {
        body: { aspect_ratio: '1:1' },
      });
      assert.equal(ratio.status, 200, JSON.stringify(ratio.body));
      // A turn on video B: its events are B's, except what it changes project-wide (context.appended).
      const turn = await editor.instruct(projectId, {
        video_id: videoB,
        instruction: 'a 2-scene video about a meadow',
      });
      checkTurnAnswer(turn, projectId);
      await rename(editor, projectId, 'The last, project-wide');

      const head = (await storedEvents(projectId)).at(-1)!.seq;
      for (const socket of [all, onlyA, onlyB]) await socket.waitForSeq(head);
      assertRun(all.events, 2, head, 'unnarrowed socket'); // seq 1: the second video, before the sockets
      const videoOf = (events: readonly EditorEvent[]) => new Set(events.map((event) => event.video_id));
      assert.deepEqual(
        videoOf(all.events),
        new Set([null, videoA, videoB]),
        'the project has events of each kind',
      );
      for (const type of [
        'clip.created',
        'clip.updated',
        'clip.removed',
        'aspect_ratio.changed',
        'turn.started',
      ]) {
        assert.ok(
          all.events.some((event) => event.type === type && event.video_id !== null),
          `a ${type} of a video`,
        );
      }
      assert.ok(all.events.some((event) => event.type === 'context.appended' && event.video_id === null));
      const narrowed = (video: string) =>
        all.events.filter((event) => event.video_id === null || event.video_id === video);
      assert.deepEqual(onlyA.events, narrowed(videoA), 'video A’s socket');
      assert.deepEqual(onlyB.events, narrowed(videoB), 'video B’s socket');
      assert.ok(onlyA.events.length < all.events.length && onlyB.events.length < all.events.length);

      // A narrowed replay keeps the same events.
      const replayedB = await listen(projectId, { token, videoId: videoB, since: 1 });
      await replayedB.waitForSeq(head);
      assert.deepEqual(replayedB.events, onlyB.events, 'video B’s socket replayed from since=1');
    }));

  it('closes every socket of a deleted project with 1000 after a project.deleted event (also failing a running turn)', () =>
    logged(async () => {
      const { token, editor, projectId, videoId } = await setUp();
      checkTurnAnswer(
        await editor.instruct(projectId, {
          instruction: 'a 2-scene video about a bridge [sandbox:delay=4000]',
        }),
        projectId,
      );
      const live = await listen(projectId, { token });
      const narrowed = await listen(projectId, { token, videoId });
      const replaying = await listen(projectId, { token, since: 0 });
      // A turn waiting for its media when the project goes.
      const running = editor.instruct(projectId, { instruction: 'continue' });
      await live.waitFor('the turn’s media started', (events) =>
        events.some((event) => event.type === 'media.started'),
      );

      const deleted = await editor.send('DELETE', `/${projectId}`);
      assert.deepEqual([deleted.status, deleted.body], [200, { id: projectId, deleted: true }]);
      for (const socket of [live, narrowed, replaying]) {
        assert.deepEqual(await socket.waitForClose(5000), { code: 1000, reason: 'Project deleted' });
        const last = socket.events.at(-1)!;
        assert.deepEqual(
          [last.type, last.project_id, last.video_id, last.turn_id, last.data],
          ['project.deleted', projectId, null, null, { project_id: projectId }],
        );
        const failed = socket.events.at(-2)!;
        assert.deepEqual([failed.type, failed.data.status], ['turn.failed', 404], JSON.stringify(failed));
      }
      assertRun(
        replaying.events,
        1,
        replaying.events.at(-1)!.seq,
        'the replaying socket, up to project.deleted',
      );
      assert.ok(replaying.events.length > 4, 'the replay, the turn, the deletion');
      const turn = await running;
      assert.deepEqual([turn.status, turn.body.error], [404, 'Project not found'], 'the running turn failed');
      assert.deepEqual(await refusedHandshake(service.url, projectId, { token }), {
        status: 404,
        body: { error: 'Project not found' },
      });
      await until(
        'the deleted project’s events are gone from the history',
        () => storedEvents(projectId),
        (events) => events.length === 0,
      );
    }));

  it('cuts a client that stops reading with 1013 while another keeps its pace, and the cut one resumes with since=', () =>
    logged(async () => {
      const { token, editor, projectId } = await setUp();
      const fast = await listen(projectId, { token });
      const slow = await listen(projectId, { token });
      slow.pauseReading();
      const cutsBefore = await metric(TOO_SLOW_CLOSES);

      // ~100 KB per event (project.updated carries the whole project): kernel buffers fill first (several MB on
      // loopback), then the service's own; past 1 MiB the slow socket is cut. Pushed until the service says so.
      const filler = 'x'.repeat(99_000);
      const started = Date.now();
      let edits = 0;
      let worstMs = 0;
      let cutAt: number | undefined;
      while (edits < 400 && (cutAt === undefined || edits < cutAt + 5)) {
        const sent = Date.now();
        const answer = await editor.send<{ project: { revision: number } }>('PATCH', `/${projectId}`, {
          body: { context_md: `${edits} ${filler}` },
        });
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        edits++;
        // The fast client has it promptly (its own pace is not held back by the slow one).
        await fast.waitForSeq(edits, 2000);
        worstMs = Math.max(worstMs, Date.now() - sent);
        if (cutAt === undefined && edits % 5 === 0 && (await metric(TOO_SLOW_CLOSES)) > cutsBefore)
          cutAt = edits;
      }
      const pushMs = Date.now() - started;
      assert.ok(cutAt !== undefined, `the slow socket was not cut after ${edits} events of ~100 KB`);
      console.log(
        `slow client cut after ${cutAt} events of ~100 KB; ${edits} edits in ${pushMs} ms; slowest edit + delivery to the fast client ${worstMs} ms`,
      );
      assertRun(fast.events, 1, edits, 'the fast client');
      assert.equal(fast.closed, undefined, 'the fast client stays open');

      // Reading again, the slow client gets what was in flight, then the close.
      slow.resumeReading();
      assert.deepEqual(await slow.waitForClose(10_000), {
        code: 1013,
        reason: 'Too slow: reconnect with since=',
      });
      const processed = slow.events.at(-1)?.seq ?? 0;
      assertRun(slow.events, 1, processed, 'the slow client before the cut');
      assert.ok(processed < edits, `the slow client missed some (${processed} of ${edits})`);

      // Reconnecting with since= the last seq it processed delivers the rest, then live.
      const resumed = await listen(projectId, { token, since: processed });
      await rename(editor, projectId, 'Live after the cut');
      await resumed.waitForSeq(edits + 1, 30_000);
      assertRun(resumed.events, processed + 1, edits + 1, 'the resumed client');
      await fast.waitForSeq(edits + 1);
      assert.deepEqual(
        resumed.events,
        fast.events.slice(processed),
        'the resumed client agrees with the fast one',
      );
    }));

  it('keeps the stream across a restart: SIGTERM closes sockets with 1012, since= after the restart misses nothing and seq never goes back', () =>
    logged(async () => {
      const { token, editor, projectId } = await setUp();
      const socket = await listen(projectId, { token });
      checkTurnAnswer(
        await editor.instruct(projectId, {
          instruction: 'a 2-scene video about a lighthouse [sandbox:delay=1500]',
        }),
        projectId,
      );
      for (let i = 0; i < 3; i++) await rename(editor, projectId, `Before ${i}`);

      // A turn waits for its media when the service gets SIGTERM: its sockets are closed (1012) first, then
      // the turn finishes while in-flight requests drain, so the socket misses its last events.
      const running = editor.instruct(projectId, { instruction: 'continue' });
      await socket.waitFor('the turn’s media started', (events) =>
        events.some((event) => event.type === 'media.started'),
      );
      const stopped = service.stop('SIGTERM');
      assert.deepEqual(await socket.waitForClose(10_000), {
        code: 1012,
        reason: 'Service restart: reconnect with since=',
      });
      const turn = await running;
      const { turnId } = checkTurnAnswer(turn, projectId);
      assert.equal(turn.body.media_gen_done, true, 'the turn finished during the drain');
      assert.equal((await stopped).code, 0, 'the service exits cleanly');
      const seen = socket.events.at(-1)!.seq;
      assertRun(socket.events, 1, seen, 'before the restart');
      const stored = await storedEvents(projectId);
      const headBefore = stored.at(-1)!.seq;
      assertRun(stored, 1, headBefore, 'the stored history');
      assert.equal(turn.body.agent_events.at(-1)!.seq, headBefore, 'the turn’s end is the last event stored');
      assert.ok(seen < headBefore, `the socket missed the turn’s last events (saw ${seen} of ${headBefore})`);

      service = await startService(serviceEnv());
      const resumed = await listen(projectId, { token, since: seen });
      await rename(editor, projectId, 'After the restart');
      await resumed.waitForSeq(headBefore + 1);
      assertRun(resumed.events, seen + 1, headBefore + 1, 'after the restart, from since=');
      assert.deepEqual(resumed.events.slice(0, -1), stored.slice(seen), 'the missed events, as stored');
      assert.deepEqual(
        resumed.events.filter((event) => event.turn_id === turnId),
        turn.body.agent_events.filter((event) => event.seq > seen),
        'the turn’s missed events, as instruct answered them',
      );
      const next = resumed.events.at(-1)!;
      assert.deepEqual(
        [next.type, next.seq],
        ['project.updated', headBefore + 1],
        'seq continues after the restart',
      );
      assert.equal(await metric('mf_events_sockets'), 1);
    }));
});
