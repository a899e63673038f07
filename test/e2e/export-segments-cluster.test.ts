// Segmented exports in a cluster (docs/operator.md, The segment cache): deploy/local/cluster.sh starts 3
// nats-server, jongodb and 3 service nodes with EXPORT_SEGMENTS=true and one export worker each. An export of a
// timeline of seven segments (five clips, cuts and two transitions) asked of node-1 is encoded by several nodes
// (their logs say which node encoded which segment) and comes out whole; a second export whose every segment
// is new still completes, once, when node-2 is SIGKILLed while it encodes one of them: its item goes to
// another node after the ack wait.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startTestCluster, type LocalCluster, type ThreeNodes } from '../helpers/local-cluster.ts';
import { skipWithoutNats } from '../helpers/nats.ts';
import { editorClient, editorUser, makeMedia, type Asset } from '../helpers/editor.ts';
import { ffmpeg, frameTimes, probeFile } from '../helpers/media-analysis.ts';
import { until } from '../helpers/wait.ts';

const run = promisify(execFile);
const FPS = 30;

/** The log lines of `name` written after `from` characters, parsed (pino JSON; other lines skipped). */
function logLines(cluster: LocalCluster, name: string, from = 0): Array<Record<string, unknown>> {
  return cluster
    .logs(name)
    .slice(from)
    .split('\n')
    .flatMap((line) => {
      if (!line.startsWith('{')) return [];
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

describe('segmented exports across a 3-node cluster', { skip: skipWithoutNats() }, () => {
  let cluster: LocalCluster;
  let nodes: ThreeNodes;
  let dir: string;
  let editor: ReturnType<typeof editorClient>;
  let projectId: string;
  let clips: Array<{ id: string; duration: number }>;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'export-segments-cluster-'));
    ({ cluster, nodes } = await startTestCluster({
      EXPORT_SEGMENTS: 'true',
      // One worker per node: the segments can only be encoded side by side on several nodes.
      EXPORT_CONCURRENCY: '1',
    }));
  });
  after(async () => {
    await cluster?.down();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs a test body; on failure prints the nodes' warnings, errors and segment lines first. */
  async function withClusterLogs(body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (error) {
      for (const node of nodes) {
        const lines = logLines(cluster, node.name).filter(
          (line) => Number(line.level) >= 40 || String(line.msg).startsWith('segment'),
        );
        console.log(
          `---- ${node.name} ----\n${lines
            .slice(-30)
            .map((line) => JSON.stringify(line))
            .join('\n')}`,
        );
      }
      throw error;
    }
  }

  /** Segment lines (`segment encoded` / `segment started`) of each node since `marks`, by node name. */
  const segmentLines = (msg: string, marks: Record<string, number>) =>
    Object.fromEntries(
      nodes.map((node) => [
        node.name,
        logLines(cluster, node.name, marks[node.name]).filter((line) => line.msg === msg),
      ]),
    );
  const marks = () => Object.fromEntries(nodes.map((node) => [node.name, cluster.logs(node.name).length]));

  /** Exports on node-1 (200 expected), downloads the file, and checks its frames against `seconds`. */
  async function exportWhole(seconds: number, name: string) {
    const answer = await editor.exportVideo(projectId, {});
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const path = join(dir, `${name}.mp4`);
    writeFileSync(path, Buffer.from(await (await fetch(answer.body.video_url)).arrayBuffer()));
    const frames = await frameTimes(path);
    assert.equal(frames.length, Math.round(seconds * FPS), `${name}: every frame of the timeline`);
    const probed = await probeFile(path);
    assert.ok(Math.abs(probed.durationSec - seconds) <= 2 / FPS, `${name}: ${probed.durationSec} s`);
    assert.ok(
      probed.streams.some((stream) => stream.codec_type === 'audio'),
      `${name}: the clips' sound is there`,
    );
    return answer.body;
  }

  it('encodes one export’s segments on several nodes, and joins them into the whole timeline', () =>
    withClusterLogs(async () => {
      const source = join(dir, 'clip.mp4');
      await run(ffmpeg, [
        ...['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=s=640x360:r=30:d=4'],
        ...['-f', 'lavfi', '-i', 'sine=f=440:r=48000:d=4', '-c:v', 'libx264', '-pix_fmt', 'yuv420p'],
        ...['-c:a', 'aac', '-shortest', source],
      ]);
      const user = await editorUser({ url: nodes[0].url, adminToken: cluster.adminToken });
      editor = editorClient(() => nodes[0], user.token);
      const project = await editor.createProject({ name: 'Cluster segments', aspect_ratio: '16:9' });
      projectId = project.id;
      const upload = async (data: Buffer, type: string): Promise<Asset> => {
        const answer = await editor.upload(projectId, data, type);
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        return answer.body.asset;
      };
      const video = await upload(readFileSync(source), 'video/mp4');
      const red = await upload(makeMedia('png', { colour: 'red' }), 'image/png');
      const blue = await upload(makeMedia('png', { colour: 'blue' }), 'image/png');
      const add = async (body: Record<string, unknown>) => {
        const answer = await editor.addClip(projectId, { track: 'video', ...body });
        assert.equal(answer.status, 200, `${JSON.stringify(body)} → ${JSON.stringify(answer.body)}`);
        return { id: answer.body.clip.id, duration: Number(body.duration_sec) };
      };
      // Bodies of five clips and two transitions: seven segments, 9 − 1 = 8 s.
      clips = [
        await add({ asset_id: video.id, duration_sec: 2 }),
        await add({
          asset_id: red.id,
          duration_sec: 1.5,
          transition_in: { type: 'fade', duration_sec: 0.5 },
        }),
        await add({ asset_id: video.id, trim_start_sec: 1, duration_sec: 2 }),
        await add({
          asset_id: blue.id,
          duration_sec: 1.5,
          transition_in: { type: 'wipeleft', duration_sec: 0.5 },
        }),
        await add({ asset_id: video.id, duration_sec: 2 }),
      ];
      const before = marks();
      const started = Date.now();
      await exportWhole(8, 'first');
      console.log(`first export: ${Date.now() - started} ms`);
      const encoded = segmentLines('segment encoded', before);
      const counts = Object.fromEntries(Object.entries(encoded).map(([name, lines]) => [name, lines.length]));
      console.log(`segments encoded per node: ${JSON.stringify(counts)}`);
      const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
      assert.equal(total, 7, 'each of the seven segments encoded once');
      assert.ok(Object.values(counts).filter((n) => n > 0).length >= 2, 'on at least two nodes');
      for (const [name, lines] of Object.entries(encoded)) {
        for (const line of lines) assert.equal(line.node_id, name, 'each line names the node that encoded');
      }
      // node-1 made the sound while the cluster encoded the picture, as a task of its own.
      const sound = logLines(cluster, nodes[0].name, before[nodes[0].name]).filter(
        (line) => line.msg === 'export sound mixed beside the cluster',
      );
      assert.equal(sound.length, 1, 'the sound mixed once, on node-1, beside the segments');
      const lastSegment = Math.max(
        ...Object.values(encoded).flatMap((lines) => lines.map((line) => Number(line.time))),
      );
      const ahead = lastSegment - Number(sound[0]!.time);
      console.log(`node-1's sound was ready ${ahead} ms before the last segment`);
      // Seven segments take the three single-worker nodes several rounds; the sound, one short task.
      assert.ok(ahead > 0, `the sound was made beside the segments, not after them (${ahead} ms)`);
    }));

  it('completes once when a node dies while it encodes one of the export’s segments', () =>
    withClusterLogs(async () => {
      assert.ok(clips, 'the first test made the timeline');
      // Every clip shorter: every segment's key is new.
      for (const clip of clips) {
        const trimmed = await editor.patchClip(projectId, clip.id, { duration_sec: clip.duration - 0.2 });
        assert.equal(trimmed.status, 200, JSON.stringify(trimmed.body));
      }
      const assetsBefore = (await editor.state(projectId)).body.assets.length;
      const before = marks();
      const started = Date.now();
      const exporting = exportWhole(7, 'second');
      void exporting.catch(() => undefined);
      const victim = 'node-2';
      const starts = await until(
        `${victim} starts a segment`,
        () => segmentLines('segment started', before)[victim]!,
        (lines) => lines.length > 0,
        60_000,
        20,
      );
      const taken = String(starts[0]!.key);
      await cluster.kill(victim);
      console.log(
        `${victim} killed ${Date.now() - started} ms into the export, while encoding ${taken.slice(0, 12)}`,
      );
      const answer = await exporting;
      console.log(`second export: ${Date.now() - started} ms`);
      const encodedBy = segmentLines('segment encoded', before);
      const died = encodedBy[victim]!.some((line) => line.key === taken);
      assert.ok(!died, `${victim} finished its segment before it was killed: kill it sooner`);
      const elsewhere = Object.entries(encodedBy)
        .filter(([name]) => name !== victim)
        .flatMap(([, lines]) => lines.map((line) => line.key));
      assert.ok(elsewhere.includes(taken), 'another node encoded the dead node’s segment');
      const state = await editor.state(projectId);
      assert.equal(state.status, 200);
      assert.equal(state.body.assets.length, assetsBefore + 1, 'exactly one new asset');
      assert.ok(state.body.assets.some((asset) => asset.id === answer.asset_id));
    }));
});
