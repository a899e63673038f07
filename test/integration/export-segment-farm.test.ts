// Segments across a cluster (docs/operator.md, The segment cache) on a real nats-server, a real MongoDB-wire
// index, the fs media store both "nodes" share, and the real export pool with ffmpeg: one export's segments
// are split between two encoders and end up in the cache, from which the requester joins them into the whole
// picture; an encoder that dies mid-item (its connection gone, no heartbeat) leaves the item to the other after
// the ack wait; an ffmpeg failure fails the export at once (no retry); an abort stops the running encode and
// drops the queued items.
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { createExportPool } from '../../src/export/pool.ts';
import { createExportQueue } from '../../src/export/export-queue.ts';
import { createSegmentCache, type SegmentCache } from '../../src/export/segment-cache.ts';
import { createMongoSegmentIndex } from '../../src/export/mongo-segment-index.ts';
import { createSegmentFarm, type SegmentFarm } from '../../src/export/segment-farm.ts';
import { startSegmentEncoder, type SegmentEncoder } from '../../src/export/segment-encoder.ts';
import { farmSegments } from '../../src/export/farmed-segments.ts';
import { stageSegments } from '../../src/export/segment-staging.ts';
import { newsSubject, portablePlan, SEGMENT_STREAM } from '../../src/export/segment-item.ts';
import type { ExportMetrics } from '../../src/export/export-metrics.ts';
import { createFsMediaStore } from '../../src/platform/storage/fs-store.ts';
import type { MediaStore } from '../../src/platform/storage/media-store.ts';
import { exportError } from '../../src/export/export-errors.ts';
import { newMediaId } from '../../src/platform/storage/media-id.ts';
import { planSegments } from '../../workers/export/segments.ts';
import type { ExportPlan, ExportPool, ExportSource, RunResult } from '../../workers/export/work-order.ts';
import { makeStill, makeTestVideo, pictureClip, stillSource, videoSource } from '../helpers/export-media.ts';
import { frameTimes } from '../helpers/media-analysis.ts';
import { useMongoClient } from '../helpers/mongo.ts';
import { skipWithoutNats, startNats, type TestNats } from '../helpers/nats.ts';

const ACK_WAIT_MS = 1500;
const HEARTBEAT_MS = 400;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, limitMs: number, what: string) {
  const deadline = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A logger whose lines the test reads back. */
function capturedLogger(node: string): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info', base: { node_id: node } }, sink), lines };
}

/** Counts the segments a node encoded (the only export metric the encoder touches). */
function countingMetrics(): ExportMetrics & { segmentsEncoded: number } {
  const metrics = {
    segmentsEncoded: 0,
    answered() {},
    encoded() {},
    segments(encoded: number) {
      metrics.segmentsEncoded += encoded;
    },
    sound() {},
  };
  return metrics;
}

const noChildren = { started() {}, ended() {}, killLeftovers: async () => [] };

/** A pool whose runs never end until aborted: a node stuck mid-encode. */
function stuckPool(runs: AbortSignal[]): ExportPool {
  return {
    run: (_plan, options) =>
      new Promise<RunResult>((resolve) => {
        runs.push(options.signal!);
        options.signal?.addEventListener('abort', () =>
          resolve({ ok: false, reason: 'aborted', code: null, signal: null, stderrTail: '' }),
        );
      }),
    close: async () => {},
  };
}

describe('segments across a cluster (JetStream work queue, real ffmpeg)', { skip: skipWithoutNats() }, () => {
  const mongo = useMongoClient();
  let dir: string;
  let store: MediaStore;
  let sources: { video: ExportSource; red: ExportSource; blue: ExportSource; broken: ExportSource };
  let nats: TestNats;
  let database = 0;
  const connections: NatsConnection[] = [];
  const encoders: SegmentEncoder[] = [];
  const pools: ExportPool[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mf-segment-farm-'));
    store = await createFsMediaStore({ dir: join(dir, 'media') });
    const file = (name: string) => join(dir, name);
    await Promise.all([
      makeTestVideo(file('video.mp4'), 4, ['-c:a', 'aac', '-shortest']),
      makeStill('color=c=red:s=320x180', file('red.png')),
      makeStill('color=c=blue:s=320x180', file('blue.png')),
      writeFile(file('broken.mp4'), Buffer.alloc(4096, 7)),
    ]);
    const stored = async (name: string, extension: string, type: string) => {
      const mediaId = newMediaId(extension);
      const media = await store.put(mediaId, createReadStream(file(name)), type);
      return `${mediaId} ${media.etag}`;
    };
    // In the store only: the requester stages them (sets `path`) when it needs them.
    const image = async (name: string) => stillSource('', await stored(name, 'png', 'image/png'));
    const video = async (name: string) =>
      videoSource('', await stored(name, 'mp4', 'video/mp4'), 4, { codec: 'aac', channels: 1 });
    sources = {
      video: await video('video.mp4'),
      red: await image('red.png'),
      blue: await image('blue.png'),
      broken: await video('broken.mp4'),
    };
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    nats = await startNats();
  });
  afterEach(async () => {
    for (const encoder of encoders.splice(0)) await encoder.close(0).catch(() => undefined);
    for (const pool of pools.splice(0)) await pool.close();
    for (const connection of connections.splice(0)) await connection.close().catch(() => undefined);
    await nats.stop();
  });

  /** Five clips, two transitions, cuts: seven segments. Local paths are the requester's (set on staging). */
  function plan(path: string, first: ExportSource = sources.red): ExportPlan {
    return {
      picture: [
        pictureClip(first, 1),
        pictureClip(sources.video, 1, { transitionIn: { type: 'fade', durationSec: 0.3 } }),
        pictureClip(sources.blue, 1),
        pictureClip(sources.video, 1, {
          trimStartSec: 2,
          transitionIn: { type: 'wipeleft', durationSec: 0.3 },
        }),
        pictureClip(sources.red, 1),
      ],
      sounds: [],
      output: { width: 320, height: 180, fps: 30, fit: 'fit', quality: 'preview', path },
      filters: { loudnorm: false, sidechaincompress: false },
    };
  }

  async function freshCache(db: string): Promise<SegmentCache> {
    const index = createMongoSegmentIndex(mongo.client.db(db));
    await index.ensureIndexes();
    return createSegmentCache({
      index,
      store,
      maxBytes: 1e9,
      clock: { now: () => Date.now() },
      logger: pino({ level: 'silent' }),
    });
  }

  /**
   * One node: its connection, its encoder on `pool` (or a real one), its log and its encoded count. With
   * `losesFailures`, the "failed" news its encoder sends never reaches the server (core NATS may lose one).
   */
  async function node(name: string, db: string, pool?: ExportPool, losesFailures = false) {
    const connection = await connect({ servers: nats.url });
    connections.push(connection);
    const encoderConnection = losesFailures ? losingFailures(connection) : connection;
    const { logger, lines } = capturedLogger(name);
    const metrics = countingMetrics();
    const own = pool ?? createExportPool({ concurrency: 1, ffmpegPath: 'ffmpeg', niceness: 0, logger });
    if (!pool) pools.push(own);
    const cache = await freshCache(db);
    const encoder = await startSegmentEncoder({
      connection: encoderConnection,
      replicas: 1,
      nodeId: name,
      queue: createExportQueue({ slots: 1, perUser: 1 }),
      slots: 1,
      pool: own,
      children: noChildren,
      store,
      cache,
      workRoot: join(dir, 'work', name),
      ackWaitMs: ACK_WAIT_MS,
      heartbeatMs: HEARTBEAT_MS,
      itemLifetimeMs: 60_000,
      metrics,
      logger,
    });
    encoders.push(encoder);
    const farm = createSegmentFarm({ connection, cache, lookupMs: 500, logger });
    return { name, connection, lines, metrics, cache, encoder, farm };
  }

  const started = (lines: Array<Record<string, unknown>>) =>
    lines.filter((line) => line.msg === 'segment started').map((line) => String(line.key));
  const encodedKeys = (lines: Array<Record<string, unknown>>) =>
    lines.filter((line) => line.msg === 'segment encoded').map((line) => String(line.key));
  /** The plan's segment keys, each once (equal segments share a key). */
  const segmentKeys = (local: ExportPlan) => [...new Set(planSegments(local).map((segment) => segment.key))];

  /** Asks the cluster, through `farm`, for every segment of `local` as the export `ids` name, within a minute. */
  const encodeAll = (
    farm: SegmentFarm,
    local: ExportPlan,
    ids: { exportId: string; userId: string; projectId: string },
    signal = new AbortController().signal,
  ) =>
    farm.encode({
      ...ids,
      plan: portablePlan(local)!,
      keys: segmentKeys(local),
      deadline: Date.now() + 60_000,
      signal,
    });

  /** What `work` rejects with; undefined once it resolves (so a test can await it and check the error). */
  const failureOf = (work: Promise<unknown>) =>
    work.then(
      () => undefined,
      (error: unknown) => error,
    );

  it('splits one export between two nodes; the requester joins every segment from the cache', async () => {
    const db = `segment_farm_${++database}`;
    const [a, b] = [await node('node-a', db), await node('node-b', db)];
    const exportDir = join(dir, 'export-1');
    await mkdir(exportDir, { recursive: true });
    const output = join(exportDir, 'output.mp4');
    const local = plan(output);
    const keys = segmentKeys(local);
    assert.equal(keys.length, 7);
    const context = {
      userId: 'usr_1',
      projectId: 'vp_1',
      dir: join(exportDir, 'segments'),
      parallel: 2,
      cache: a.cache,
      store,
      logger: pino({ level: 'silent' }),
    };
    const staged = (await stageSegments(local, context))!;
    assert.equal(staged.encoded.length, 7, 'nothing cached yet');
    const fractions: number[] = [];
    const farmedStart = Date.now();
    const farmed = await farmSegments(staged, {
      ...context,
      farm: a.farm,
      exportId: 'ex_one',
      plan: local,
      deadline: Date.now() + 60_000,
      gone: new AbortController().signal,
      stopping: new AbortController().signal,
      clock: { now: () => Date.now() },
      onProgress: (fraction) => fractions.push(fraction),
    });
    console.log(`7 segments over two nodes in ${Date.now() - farmedStart} ms`);
    assert.deepEqual(farmed.encoded, [], 'nothing left to encode here');
    assert.deepEqual(new Set(farmed.farmed), new Set(keys));
    assert.equal(a.metrics.segmentsEncoded + b.metrics.segmentsEncoded, 7, 'each segment encoded once');
    assert.ok(
      a.metrics.segmentsEncoded > 0 && b.metrics.segmentsEncoded > 0,
      `split: ${a.metrics.segmentsEncoded}/${b.metrics.segmentsEncoded}`,
    );
    assert.deepEqual(
      new Set([...encodedKeys(a.lines), ...encodedKeys(b.lines)]),
      new Set(keys),
      'every key logged as encoded, with its node',
    );
    assert.ok(
      [...a.lines, ...b.lines].filter((line) => line.msg === 'segment encoded').every((line) => line.node),
    );
    assert.ok(fractions.length > 0 && Math.max(...fractions) <= 0.8, `progress ${fractions}`);

    // The join on the requester: every segment reused, the sound and the concat only.
    const pool = createExportPool({
      concurrency: 1,
      ffmpegPath: 'ffmpeg',
      niceness: 0,
      logger: pino({ level: 'silent' }),
    });
    pools.push(pool);
    const staging = local.picture.map(async (one) => {
      const mediaId = one.source.contentId!.split(' ')[0]!;
      const path = join(exportDir, `source-${mediaId}`);
      await writeFile(path, await streamBytes(await store.open(mediaId))).catch(() => undefined);
      return { ...one, source: { ...one.source, path } };
    });
    const joined: ExportPlan = { ...local, picture: await Promise.all(staging), segmented: farmed.work };
    const result = await pool.run(joined, { timeoutMs: 60_000 });
    assert.ok(result.ok, JSON.stringify(result));
    const frames = await frameTimes(output);
    const last = planSegments(local).at(-1)!;
    assert.equal(frames.length, last.endFrame, 'every frame of the timeline');
  });

  it('hands the item of a node that died mid-encode to another node after the ack wait', async () => {
    const db = `segment_farm_${++database}`;
    const runs: AbortSignal[] = [];
    const dying = await node('node-dying', db, stuckPool(runs));
    const requester = await node('node-req', db, stuckPool([]));
    // The requester's own encoder is stuck as well: only the survivor, started later, encodes.
    await requester.encoder.close(0);
    const local = plan(join(dir, 'export-2', 'output.mp4'), sources.blue);
    const keys = segmentKeys(local);
    const finished = encodeAll(requester.farm, local, {
      exportId: 'ex_two',
      userId: 'usr_2',
      projectId: 'vp_2',
    });
    await until(() => started(dying.lines).length === 1, 10_000, 'the dying node to start an item');
    const taken = started(dying.lines)[0]!;
    // Dead: no heartbeat, no ack, no nak.
    await dying.connection.close();
    const diedAt = Date.now();
    const survivor = await node('node-survivor', db);
    await finished;
    assert.ok(encodedKeys(survivor.lines).includes(taken), 'the survivor encoded the dead node’s item');
    assert.equal(
      survivor.metrics.segmentsEncoded,
      keys.length,
      'every segment encoded by the survivor, once',
    );
    assert.equal(dying.metrics.segmentsEncoded, 0);
    for (const key of keys) assert.ok(await survivor.cache.lookup('usr_2', 'vp_2', key), `${key} cached`);
    console.log(`the dead node's item was encoded elsewhere ${Date.now() - diedAt} ms after it died`);
  });

  it('fails the export with ffmpeg_failed when a segment cannot be encoded, without trying it again', async () => {
    const db = `segment_farm_${++database}`;
    const [a, b] = [await node('node-a', db), await node('node-b', db)];
    const local = plan(join(dir, 'export-3', 'output.mp4'), sources.broken);
    const failure = await failureOf(
      encodeAll(a.farm, local, { exportId: 'ex_three', userId: 'usr_3', projectId: 'vp_3' }),
    );
    assert.ok(failure instanceof Error && failure.message === 'ffmpeg_failed', String(failure));
    const brokenKey = planSegments(local)[0]!.key;
    await sleep(ACK_WAIT_MS + 500);
    const tries = [...started(a.lines), ...started(b.lines)].filter((key) => key === brokenKey);
    assert.equal(tries.length, 1, 'the failed segment was not tried again');
    const jsm = await jetstreamManager(a.connection);
    assert.equal((await jsm.streams.info(SEGMENT_STREAM)).state.messages, 0, 'no item of the export is left');
  });

  it('fails the export soon after a node’s "failed" is lost, not at its deadline', async () => {
    const db = `segment_farm_${++database}`;
    const requester = await node('node-req', db, stuckPool([]));
    // Only the lossy node takes items.
    await requester.encoder.close(0);
    const lossy = await node('node-lossy', db, undefined, true);
    const local = plan(join(dir, 'export-5', 'output.mp4'), sources.broken);
    const askedAt = Date.now();
    const failure = await failureOf(
      // Given up after 20 s: without the lookups' verdict the wait would last until the deadline.
      encodeAll(
        requester.farm,
        local,
        { exportId: 'ex_five', userId: 'usr_5', projectId: 'vp_5' },
        AbortSignal.timeout(20_000),
      ),
    );
    const waitedMs = Date.now() - askedAt;
    assert.ok(failure instanceof Error && failure.message === 'export_failed', String(failure));
    assert.ok(
      lossy.lines.some((line) => line.msg === 'segment failed'),
      'the lossy node did fail the segment',
    );
    // The deadline is a minute away; the lookups (every 500 ms) see the item gone and its segment missing.
    assert.ok(waitedMs < 10_000, `failed after ${waitedMs} ms`);
    console.log(`a lost "failed" cost ${waitedMs} ms`);
  });

  it('stops the running encode and drops the queued items when the requester aborts', async () => {
    const db = `segment_farm_${++database}`;
    const runs: AbortSignal[] = [];
    const a = await node('node-a', db, stuckPool(runs));
    const local = plan(join(dir, 'export-4', 'output.mp4'));
    const abort = new AbortController();
    const finished = failureOf(
      encodeAll(a.farm, local, { exportId: 'ex_four', userId: 'usr_4', projectId: 'vp_4' }, abort.signal),
    );
    await until(() => runs.length === 1, 10_000, 'an encode to start');
    const reason = exportError('export_timeout', 'late');
    abort.abort(reason);
    assert.equal(await finished, reason);
    await until(() => runs[0]!.aborted, 5_000, 'the running encode to be stopped');
    const jsm = await jetstreamManager(a.connection);
    await sleep(300);
    assert.equal((await jsm.streams.info(SEGMENT_STREAM)).state.messages, 0, 'the queued items purged');
    await sleep(500);
    assert.equal(runs.length, 1, 'no other item of the export started');
  });
});

/** `connection`, except that a "failed" segment news published through it is lost on the way. */
function losingFailures(connection: NatsConnection): NatsConnection {
  return new Proxy(connection, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (property !== 'publish') return typeof value === 'function' ? value.bind(target) : value;
      return (subject: string, payload?: string | Uint8Array, options?: object) => {
        const text = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
        if (subject.startsWith(newsSubject('')) && text.includes('"state":"failed"')) return;
        target.publish(subject, payload, options);
      };
    },
  });
}

async function streamBytes(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
