// The export workers shared between users, and a project's deletion stopping its exports (docs/operator.md,
// "Export workers"; docs/editor.md, "Time, concurrency and going away"): the service as a process, real HTTP,
// real ffmpeg. Which export encodes when is read from the service's own ffmpeg children in /proc (each one's
// argv names the staged sources, `source-<media id>`, so every child is tied to its project's upload).
//
// A "long" export is a timeline of a 2 s noise video repeated: every frame differs, so libx264 works for real
// (about as long as the timeline on one core); a "short" one is a 1 s still.
//
// One MongoDB-wire server; services: `single` (EXPORT_CONCURRENCY=1), `pair` (EXPORT_CONCURRENCY=2), both with
// the default EXPORT_PER_USER=1, and two cluster nodes over NATS for a DELETE sent to another node than the
// export's.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { editorClient, editorUser, withServiceLogs, type Asset } from '../helpers/editor.ts';
import { makeStill } from '../helpers/export-media.ts';
import { ffmpegRun } from '../helpers/media-analysis.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { sampleValue } from '../helpers/prometheus.ts';
import { skipWithoutNats, startNats, type TestNats } from '../helpers/nats.ts';
import { startService, type ApiAnswer, type RunningService } from '../helpers/service.ts';
import { sleep, until } from '../helpers/wait.ts';

/** One service under test and its export work folder. */
interface Node {
  service: RunningService;
  workDir: string;
}

type User = { userId: string; token: string };
type Client = ReturnType<typeof editorClient>;
type ExportAnswer = ApiAnswer<{ error?: string; message?: string; asset_id?: string }>;

/** A project with its video track filled, the media id of its one upload (in its ffmpeg's argv). */
interface Timeline {
  client: Client;
  projectId: string;
  mediaId: string;
}

/** An export ffmpeg child of a service: its pid, its work folder and the media ids of the sources it reads. */
interface Encoder {
  pid: number;
  folder: string;
  sources: string[];
}

/** The export ffmpeg children of the service process (from /proc: every thread's `children`). */
function encodersOf(node: Node): Encoder[] {
  const pid = node.service.proc.child.pid!;
  const found: Encoder[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const children = new Set<number>();
  for (const task of tasks) {
    try {
      const list = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      for (const child of list.split(/\s+/).filter(Boolean)) children.add(Number(child));
    } catch {
      // The thread ended meanwhile.
    }
  }
  for (const child of children) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue;
    }
    // Zombies have no command line; probes are ffprobe; other ffmpegs (an upload's picture) work outside the
    // exports' folders. Every ffmpeg of an export counts: the render, a segment, the sound, the loudness pass.
    if (basename(argv[0] ?? '') !== 'ffmpeg') continue;
    // The export's own folder, or a cluster node's folder for one of its segments.
    const folder = argv.flatMap((arg) => /\/exports\/([^/]+)\//.exec(arg)?.[1] ?? [])[0];
    if (folder === undefined) continue;
    const sources = argv.flatMap((arg) => /source-(med_[^/]+)$/.exec(arg)?.[1] ?? []);
    found.push({ pid: child, folder, sources });
  }
  return found;
}

/** The service's export gauges: exports waiting for a worker, and exports holding one. */
async function exportGauges(node: Node): Promise<{ waiting: number; running: number }> {
  const response = await fetch(`${node.service.url}/metrics`, {
    headers: { authorization: `Bearer ${node.service.adminToken}` },
  });
  assert.equal(response.status, 200);
  const text = await response.text();
  return {
    waiting: sampleValue(text, 'mf_exports_waiting') ?? NaN,
    running: sampleValue(text, 'mf_exports_running') ?? NaN,
  };
}

/** Whether `pid` is a running (not zombie) process. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Files under a folder of EXPORT_WORK_DIR (none when it is missing). */
function listing(node: Node, folder: 'exports' | 'children'): string[] {
  try {
    return readdirSync(join(node.workDir, folder));
  } catch {
    return [];
  }
}

/**
 * Watches a service's export children every 20 ms: when each timeline's ffmpeg was first and last seen, by
 * the timeline's name. `stop()` ends the watch.
 */
function watchEncoders(node: Node, timelines: Record<string, Timeline>) {
  const seen = new Map<string, { first: number; last: number; pids: Set<number> }>();
  /** Samples of which timelines encoded at once. */
  const together: string[][] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const now = Date.now();
      const running: string[] = [];
      for (const encoder of encodersOf(node)) {
        const name = Object.keys(timelines).find((key) => encoder.sources.includes(timelines[key]!.mediaId));
        if (!name) continue;
        running.push(name);
        const entry = seen.get(name) ?? { first: now, last: now, pids: new Set<number>() };
        entry.last = now;
        entry.pids.add(encoder.pid);
        seen.set(name, entry);
      }
      // Exports, not children: one export in segments runs several ffmpegs at once.
      if (running.length > 0) together.push([...new Set(running)].sort());
      await sleep(20);
    }
  })();
  return {
    seen,
    together,
    /** The timelines in the order their ffmpeg first appeared. */
    order: () => [...seen.entries()].sort((a, b) => a[1].first - b[1].first).map(([name]) => name),
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

describe('export workers shared between users; deleting a project stops its export', () => {
  let root: string;
  let mongo: TestMongo;
  const nodes: Node[] = [];
  let still: Buffer;
  let noise: Buffer;

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'mf-export-sharing-'));
    const [started] = await Promise.all([
      startMongo(),
      makeStill('testsrc2=size=320x240', join(root, 'still.png')),
      // Every pixel of every frame random: no frame predicts the next, so each costs the encoder in full.
      ffmpegRun([
        ...[
          '-v',
          'error',
          '-f',
          'lavfi',
          '-i',
          "nullsrc=s=320x180:r=30,geq=lum='random(1)*255':cb=128:cr=128",
        ],
        ...[
          '-t',
          '2',
          '-c:v',
          'libx264',
          '-preset',
          'ultrafast',
          '-pix_fmt',
          'yuv420p',
          join(root, 'noise.mp4'),
        ],
      ]),
    ]);
    mongo = started;
    still = readFileSync(join(root, 'still.png'));
    noise = readFileSync(join(root, 'noise.mp4'));
  });

  after(async () => {
    await Promise.allSettled(nodes.map((node) => node.service.stop()));
    await mongo?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  async function startNode(name: string, env: Record<string, string>): Promise<Node> {
    const workDir = mkdtempSync(join(root, `${name}-work-`));
    const service = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: `export_sharing_${name}`,
      RATE_LIMIT_PER_MINUTE: '100000',
      EXPORT_RATE_PER_MINUTE: '1000',
      EXPORT_TIMEOUT_MS: '300000',
      MEDIA_DIR: mkdtempSync(join(root, `${name}-media-`)),
      ...env,
      EXPORT_WORK_DIR: workDir,
    });
    const node = { service, workDir };
    nodes.push(node);
    return node;
  }

  /** A new project of `user`: `clips` clips of one upload (`long`: the noise video; else the 1 s still). */
  async function timeline(node: Node, user: User, kind: 'long' | 'short', clips = 1): Promise<Timeline> {
    const client = editorClient(() => node.service, user.token);
    const project = await client.createProject({ aspect_ratio: '16:9' });
    const uploaded = await client.upload(
      project.id,
      kind === 'long' ? noise : still,
      kind === 'long' ? 'video/mp4' : 'image/png',
    );
    assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
    const asset: Asset = uploaded.body.asset;
    for (let i = 0; i < clips; i++) {
      const added = await client.addClip(project.id, {
        track: 'video',
        asset_id: asset.id,
        ...(kind === 'short' ? { duration_sec: 1 } : {}),
        // Each clip of a long timeline trimmed its own way: identical clips are one segment of a render in
        // segments, encoded once, and the export would not be long.
        ...(kind === 'long' && i > 0 ? { trim_start_sec: i / 1000 } : {}),
      });
      assert.equal(added.status, 200, JSON.stringify(added.body));
    }
    return { client, projectId: project.id, mediaId: asset.url.split('/').pop()! };
  }

  /** Sends the export now; resolves with the answer and when it came. */
  const exportOf = (target: Timeline, body: Record<string, unknown> = {}) =>
    target.client
      .exportVideo(target.projectId, body)
      .then((answer) => ({ answer: answer as ExportAnswer, at: Date.now() }));

  const assertExported = (answer: ExportAnswer, what: string) =>
    assert.equal(answer.status, 200, `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);

  // ---------------------------------------------------------------------------------------------------------
  describe('EXPORT_CONCURRENCY=1', () => {
    let node: Node;
    before(async () => {
      node = await startNode('single', { EXPORT_CONCURRENCY: '1' });
    });

    it("user B's short export takes the worker's next turn, ahead of user A's second long export", () =>
      withServiceLogs(
        () => [node.service],
        async () => {
          const a = await editorUser(node.service);
          const b = await editorUser(node.service);
          const timelines = {
            a1: await timeline(node, a, 'long', 3),
            a2: await timeline(node, a, 'long', 1),
            b: await timeline(node, b, 'short'),
          };
          const watch = watchEncoders(node, timelines);
          try {
            const a1 = exportOf(timelines.a1);
            await until(
              "A's first export encodes",
              () => watch.order(),
              (order) => order.includes('a1'),
              30_000,
            );
            // A's second is in line (its sources staged) before B is sent, so first come would serve A again.
            const a2 = exportOf(timelines.a2);
            await until(
              "A's second waits",
              () => exportGauges(node),
              (g) => g.waiting === 1,
              30_000,
            );
            const bSent = Date.now();
            const bDone = exportOf(timelines.b);
            await until(
              "B's waits too",
              () => exportGauges(node),
              (g) => g.waiting === 2,
              30_000,
            );
            assert.ok(
              encodersOf(node).some((encoder) => encoder.sources.includes(timelines.a1.mediaId)),
              "the premise: A's first export still encodes while both others wait",
            );
            const [first, second, short] = await Promise.all([a1, a2, bDone]);
            assertExported(first.answer, "A's first");
            assertExported(second.answer, "A's second");
            assertExported(short.answer, "B's");
            await watch.stop();
            const seen = (name: string) => watch.seen.get(name)!;
            assert.deepEqual(watch.order(), ['a1', 'b', 'a2'], "B encodes between A's two");
            assert.ok(
              seen('b').last <= seen('a2').first,
              `B's ffmpeg (last seen ${seen('b').last}) ended before A's second began (${seen('a2').first})`,
            );
            assert.ok(
              watch.together.every((running) => running.length === 1),
              'one worker: one export encoding at a time',
            );
            // B waited for one worker's turn (A's first export), not for A's second as well.
            assert.ok(short.at < second.at, "B answered before A's second export");
            console.log(
              `B answered ${short.at - bSent} ms after it was sent: ${seen('a1').last - bSent} ms waiting for A's ` +
                `first export (encoding ${seen('a1').last - seen('a1').first} ms in all), then its own ` +
                `${seen('b').last - seen('b').first} ms of encoding; A's second answered ${second.at - short.at} ms after B`,
            );
          } finally {
            await watch.stop();
          }
        },
      ));
  });

  // ---------------------------------------------------------------------------------------------------------
  describe('EXPORT_CONCURRENCY=2', () => {
    let node: Node;
    before(async () => {
      node = await startNode('pair', { EXPORT_CONCURRENCY: '2' });
    });

    it("a user's second export waits its turn (EXPORT_PER_USER=1) while a worker is free; another user takes that worker at once", () =>
      withServiceLogs(
        () => [node.service],
        async () => {
          const a = await editorUser(node.service);
          const b = await editorUser(node.service);
          const timelines = {
            a1: await timeline(node, a, 'long', 3),
            a2: await timeline(node, a, 'long', 1),
            b: await timeline(node, b, 'short'),
          };
          const watch = watchEncoders(node, timelines);
          try {
            const a1 = exportOf(timelines.a1);
            await until(
              "A's first export encodes",
              () => watch.order(),
              (order) => order.includes('a1'),
              30_000,
            );
            const a2 = exportOf(timelines.a2);
            // A worker is free and A's second export waits: for a whole second it must not take it.
            await until(
              "A's second waits with a worker free",
              () => exportGauges(node),
              (g) => g.waiting === 1 && g.running === 1,
              30_000,
            );
            await sleep(1000); // a wait for nothing: A's second must not take the free worker
            assert.deepEqual(await exportGauges(node), { waiting: 1, running: 1 });
            assert.deepEqual(watch.order(), ['a1'], "only A's first encodes");
            const bSent = Date.now();
            const short = await exportOf(timelines.b);
            assertExported(short.answer, "B's");
            const [first, second] = await Promise.all([a1, a2]);
            assertExported(first.answer, "A's first");
            assertExported(second.answer, "A's second");
            await watch.stop();
            const seen = (name: string) => watch.seen.get(name)!;
            assert.ok(seen('b').first < seen('a1').last, "B encoded on the free worker while A's first ran");
            assert.ok(short.at < first.at, "B answered before A's first export");
            assert.ok(
              seen('a2').first >= seen('a1').last,
              `A's second began (${seen('a2').first}) only once A's first was over (${seen('a1').last})`,
            );
            assert.ok(
              watch.together.every((running) => running.filter((name) => name.startsWith('a')).length <= 1),
              "never two of A's exports at once",
            );
            console.log(`with A's first encoding, B's short export answered in ${short.at - bSent} ms`);
          } finally {
            await watch.stop();
          }
        },
      ));

    it('deleting the project mid-export: 404 for the running and the waiting export, ffmpeg gone within 2 s, nothing left', () =>
      withServiceLogs(
        () => [node.service],
        async () => {
          const user = await editorUser(node.service);
          const target = await timeline(node, user, 'long', 20);
          const watch = watchEncoders(node, { target });
          try {
            const running = exportOf(target, { fit: 'fit' });
            await until(
              'the export encodes',
              () => watch.order(),
              (order) => order.length === 1,
              30_000,
            );
            // Another of the same project, waiting its turn (EXPORT_PER_USER=1).
            const waiting = exportOf(target, { fit: 'fill' });
            await until(
              'the second export waits',
              () => exportGauges(node),
              (g) => g.waiting === 1 && g.running === 1,
              30_000,
            );
            const encoders = encodersOf(node);
            assert.equal(
              new Set(encoders.map((encoder) => encoder.folder)).size,
              1,
              "one export's ffmpeg: the second export waits",
            );
            await deleteMidExport([node], target.client, target, encoders[0]!.pid, [running, waiting]);
          } finally {
            await watch.stop();
          }
          // The node still exports.
          const again = await timeline(node, user, 'short');
          assertExported((await exportOf(again)).answer, 'an export after the deletion');
        },
      ));
  });

  /**
   * Deletes `target`'s project with `deleter` (its owner's key, on any node) while `pid`, an ffmpeg of its export,
   * runs on one of `nodes`: every export of it answers 404, the ffmpeg and every export child of every node are
   * gone within 2 s of the DELETE's answer, and the nodes' export work folders and pid records are removed.
   * Logs the times.
   */
  async function deleteMidExport(
    nodes: Node[],
    deleter: Client,
    target: Timeline,
    pid: number,
    exports: Promise<{ answer: ExportAnswer; at: number }>[],
  ) {
    assert.ok(alive(pid), 'the export ffmpeg runs');
    const sentAt = Date.now();
    const deleted = await deleter.send('DELETE', `/${target.projectId}`);
    const answeredAt = Date.now();
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.deepEqual(deleted.body, { id: target.projectId, deleted: true });
    await until(
      'the export ffmpeg is gone',
      () => alive(pid),
      (isAlive) => !isAlive,
      2000,
      5,
    );
    const killedAt = Date.now();
    await until(
      'no export ffmpeg child of a service',
      () => nodes.flatMap(encodersOf),
      (left) => left.length === 0,
      Math.max(0, answeredAt + 2000 - Date.now()),
      5,
    );
    const answers = await Promise.all(exports);
    for (const [i, { answer }] of answers.entries()) {
      assert.equal(answer.status, 404, `export ${i}: ${answer.status} ${JSON.stringify(answer.body)}`);
      assert.deepEqual(answer.body, { error: 'Project not found' }, `export ${i}`);
    }
    await until(
      'the pid records are removed',
      () => nodes.flatMap((node) => listing(node, 'children')),
      (left) => left.length === 0,
      2000,
    );
    await until(
      'the work folders are removed',
      () => nodes.flatMap((node) => listing(node, 'exports')),
      (left) => left.length === 0,
      2000,
    );
    console.log(
      `DELETE answered in ${answeredAt - sentAt} ms; the export ffmpeg was gone ${killedAt - sentAt} ms after ` +
        `the DELETE was sent (${killedAt - answeredAt} ms after its answer); the exports answered 404 ` +
        answers.map(({ at }) => `${at - answeredAt} ms`).join(' and ') +
        ' after it',
    );
  }

  // ---------------------------------------------------------------------------------------------------------
  describe(
    'cluster mode: the DELETE reaches another node than the export',
    { skip: skipWithoutNats() },
    () => {
      let nats: TestNats;
      let exporting: Node;
      let deleting: Node;
      before(async () => {
        nats = await startNats();
        const shared = {
          MONGO_DB: 'export_sharing_cluster',
          NATS_URL: nats.url,
          // Every node reads every file.
          MEDIA_STORE: 'gridfs',
          EXPORT_CONCURRENCY: '1',
        };
        // One at a time: the first creates the streams and consumers the other joins.
        exporting = await startNode('node-a', { ...shared, NODE_ID: 'node-a' });
        deleting = await startNode('node-b', { ...shared, NODE_ID: 'node-b' });
      });
      after(async () => {
        await Promise.allSettled([exporting?.service.stop(), deleting?.service.stop()]);
        await nats?.stop();
      });

      it('the export on node A answers 404 and its ffmpeg is gone within 2 s of a DELETE sent to node B', () =>
        withServiceLogs(
          () => [exporting.service, deleting.service],
          async () => {
            const user = await editorUser(exporting.service);
            const target = await timeline(exporting, user, 'long', 20);
            const watch = watchEncoders(exporting, { target });
            try {
              const running = exportOf(target);
              await until(
                'the export encodes on node A',
                () => watch.order(),
                (order) => order.length === 1,
                30_000,
              );
              // Node B may encode some of its segments too (docs/operator.md, Segments across a cluster): the
              // DELETE must stop them as well.
              const [encoder] = [...encodersOf(exporting), ...encodersOf(deleting)];
              assert.ok(encoder, 'the export encodes');
              await deleteMidExport(
                [exporting, deleting],
                editorClient(() => deleting.service, user.token),
                target,
                encoder.pid,
                [running],
              );
            } finally {
              await watch.stop();
            }
          },
        ));
    },
  );
});
