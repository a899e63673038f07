import { createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import type { AppError } from '../platform/index.ts';
import { ensureDurableConsumer, ensureWorkQueueStream, newId, type MediaStore } from '../platform/index.ts';
import {
  planSegments,
  type ExportChildren,
  type ExportPlan,
  type ExportPool,
  type RunResult,
} from '../../workers/index.ts';
import { exportError, exportErrorCode } from './export-errors.ts';
import type { ExportMetrics } from './export-metrics.ts';
import type { ExportQueue } from './export-queue.ts';
import { runFailure } from './export-render.ts';
import type { SegmentCache } from './segment-cache.ts';
import {
  ABORT_SUBJECTS,
  mediaOf,
  newsSubject,
  parseItem,
  SEGMENT_CONSUMER,
  SEGMENT_STREAM,
  SEGMENT_WORK_SUBJECTS,
  type SegmentAbort,
  type SegmentItem,
  type SegmentNews,
} from './segment-item.ts';

// The encoding side of segments across a cluster (docs/operator.md, The segment cache): every node pulls
// segment items from one durable consumer, but only while one of its export workers is free, and each item
// then takes a turn of the node's fair queue under its user like any export (EXPORT_PER_USER holds: an item
// whose user has their share of this node's workers goes back to the queue for another node). An item is one
// pool task that encodes one segment (`encodeOnly`), from sources this node copies out of the shared media
// store, kept in the segment cache, then acknowledged.
//
// If this node dies between two steps: before the ack, the item is redelivered after the ack wait (heartbeats
// keep it while the node lives), and the next node encodes it again, or finds it in the cache and only says so;
// after the cache keeps it and before the ack, likewise. An ffmpeg failure is final: the item is dropped and
// the export fails, since the same plan fails on every node. An item of an export that was aborted, or is past
// its deadline, is dropped; one stopped because this node shuts down goes back to the queue at once.

export interface SegmentEncoderDeps {
  connection: NatsConnection;
  /** `NATS_REPLICAS` of the stream. */
  replicas: number;
  /** Named in the log line of each segment encoded here. */
  nodeId: string;
  queue: ExportQueue;
  /** This node's export workers (`EXPORT_CONCURRENCY`): items are pulled only while one is free. */
  slots: number;
  pool: ExportPool;
  children: ExportChildren;
  store: MediaStore;
  cache: SegmentCache;
  /** Where each item gets its folder (EXPORT_WORK_DIR/exports: leftovers are removed at start-up). */
  workRoot: string;
  /** `TUNING.exportSegmentAckWaitMs` and `exportSegmentHeartbeatMs`. */
  ackWaitMs: number;
  heartbeatMs: number;
  /** `EXPORT_TIMEOUT_MS`: the longest an item is wanted (its message id is remembered a minute longer). */
  itemLifetimeMs: number;
  metrics: ExportMetrics;
  logger: Logger;
}

export interface SegmentEncoder {
  /** Stops pulling items; running ones get `graceMs` to finish, then go back to the queue for other nodes. */
  close(graceMs: number): Promise<void>;
}

/** A pull waits this long for an item before it asks again. */
const PULL_EXPIRES_MS = 3000;
/** How often a node with no free worker looks again. */
const FREE_POLL_MS = 200;
/** The longest an item turned away stays away (`notNowDelayMs`). */
const NOT_NOW_DELAY_MS = 1000;
/**
 * An item whose user holds every worker this node gives one user comes back after this, for another node (or
 * this one, once the user's item here is done): between half of NOT_NOW_DELAY_MS and all of it, at random. The
 * spread matters: the items an export publishes at once are turned away at once, and with one delay they would
 * all come back at once, a second apart, so a node that frees the user's worker would wait up to that second
 * for the next; spread over the second, one comes back every 1/n of it.
 */
export const notNowDelayMs = (random: () => number = Math.random): number =>
  Math.round(NOT_NOW_DELAY_MS * (0.5 + random() / 2));
/** Items pulled and not yet acknowledged at once, cluster-wide. */
const MAX_PENDING_ITEMS = 10_000;

/** Why an item's encode was stopped. */
type Stop = 'aborted' | 'late' | 'closing';

/** Starts pulling segment items (cluster mode with `EXPORT_SEGMENTS`). */
export async function startSegmentEncoder(deps: SegmentEncoderDeps): Promise<SegmentEncoder> {
  const { connection, queue, logger } = deps;
  const jsm = await jetstreamManager(connection);
  await ensureWorkQueueStream(
    jsm,
    {
      name: SEGMENT_STREAM,
      subjects: [SEGMENT_WORK_SUBJECTS],
      replicas: deps.replicas,
      duplicateWindowMs: deps.itemLifetimeMs + 60_000,
    },
    logger,
  );
  await ensureDurableConsumer(jsm, SEGMENT_STREAM, {
    name: SEGMENT_CONSUMER,
    filterSubject: SEGMENT_WORK_SUBJECTS,
    maxAckPending: MAX_PENDING_ITEMS,
    ackWaitMs: deps.ackWaitMs,
  });
  const consumer = await jetstream(connection).consumers.get(SEGMENT_STREAM, SEGMENT_CONSUMER);

  /** Exports aborted by their requesting node, until their deadline (their items are dropped till then). */
  const aborted = new Map<string, number>();
  /** The stops of the items running here, by export. */
  const running = new Map<string, Set<(why: Stop) => void>>();
  const tasks = new Set<Promise<void>>();
  const closing = new AbortController();

  const aborts = connection.subscribe(ABORT_SUBJECTS);
  void (async () => {
    for await (const message of aborts) {
      const exportId = message.subject.split('.').at(-1)!;
      let deadline = Date.now() + deps.itemLifetimeMs;
      try {
        deadline = message.json<SegmentAbort>().deadline;
      } catch {
        // The default keeps it for as long as any item can live.
      }
      const now = Date.now();
      for (const [id, until] of aborted) if (until < now) aborted.delete(id);
      aborted.set(exportId, deadline);
      for (const stop of running.get(exportId) ?? []) stop('aborted');
    }
  })();

  const free = () => queue.counts().holding < deps.slots;
  const say = (exportId: string, news: SegmentNews) =>
    connection.publish(newsSubject(exportId), JSON.stringify(news));

  /** One item: its turn, its encode, its news, and its ack (or term, or nak). */
  async function handle(msg: JsMsg): Promise<void> {
    let item: SegmentItem | undefined;
    try {
      item = parseItem(msg.json());
    } catch {
      item = undefined;
    }
    if (!item) {
      logger.error({ stream: SEGMENT_STREAM, seq: msg.seq }, 'malformed segment item dropped');
      return msg.term();
    }
    const { export_id: exportId, key } = item;
    const log = logger.child({ export_id: exportId, key });
    if (aborted.has(exportId) || item.deadline <= Date.now()) {
      log.info('segment item dropped: its export stopped');
      return msg.term();
    }
    // No waiting here for the user's turn: an item this node cannot start now goes back for another node (or
    // this one, later), so users share every node's workers in turn and no node sits on an item it cannot run.
    const release = queue.tryAcquire(item.user_id);
    if (!release) return msg.nak(notNowDelayMs());
    let why: Stop | undefined;
    const stopper = new AbortController();
    const stop = (reason: Stop) => {
      why ??= reason;
      stopper.abort();
    };
    const stops = running.get(exportId) ?? new Set();
    running.set(exportId, stops.add(stop));
    const late = setTimeout(() => stop('late'), item.deadline - Date.now());
    const heartbeat = setInterval(() => {
      try {
        msg.working();
      } catch {
        // The connection is down: without heartbeats the item goes to another node after the ack wait.
      }
    }, deps.heartbeatMs);
    const folder = join(deps.workRoot, newId('segment', 12));
    try {
      if (await deps.cache.lookup(item.user_id, item.project_id, key)) {
        say(exportId, { key, state: 'encoded', node: deps.nodeId });
        return msg.ack();
      }
      log.info({ user_id: item.user_id }, 'segment started');
      say(exportId, { key, state: 'started', node: deps.nodeId });
      const started = Date.now();
      const result = await encodeItem(item, folder, stopper.signal);
      if (!result.ok) {
        if (why) return finishStopped(msg, why, log);
        throw runFailure(result, true, false);
      }
      // Not trimmed here: the requesting node trims once it has copied all of its export's segments.
      await deps.cache.keep(item.user_id, item.project_id, [result.segment], { trim: false });
      const encodeMs = Date.now() - started;
      deps.metrics.segments(1, 0);
      // Its encoding time counts here, where it ran; the seconds of video, where the export is joined.
      deps.metrics.encoded(item.plan.output.quality ?? 'final', encodeMs / 1000, 0);
      log.info({ node: deps.nodeId, encode_ms: encodeMs }, 'segment encoded');
      say(exportId, { key, state: 'encoded', node: deps.nodeId });
      msg.ack();
    } catch (error) {
      if (why) return finishStopped(msg, why, log);
      const failure = asFailure(error);
      log.error({ err: error, node: deps.nodeId }, 'segment failed');
      say(exportId, {
        key,
        state: 'failed',
        node: deps.nodeId,
        code: failure.message,
        message: String(failure.details.message ?? failure.message),
      });
      msg.term();
    } finally {
      clearTimeout(late);
      clearInterval(heartbeat);
      release();
      stops.delete(stop);
      if (stops.size === 0 && running.get(exportId) === stops) running.delete(exportId);
      await rm(folder, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /** The item's segment encoded in `folder` from sources copied there; the encode's result, or its file. */
  async function encodeItem(
    item: SegmentItem,
    folder: string,
    signal: AbortSignal,
  ): Promise<
    { ok: true; segment: { key: string; path: string; bytes: number } } | Exclude<RunResult, { ok: true }>
  > {
    const segments = planSegments(item.plan);
    const segment = segments.find((one) => one.key === item.key);
    if (!segment) throw exportError('export_failed', 'The export could not be completed', 'key not in plan');
    const dir = join(folder, 'segments');
    await mkdir(dir, { recursive: true });
    const clips = new Set(segment.parts.map((part) => part.clip));
    const copies = new Map<string, Promise<string>>();
    const copy = (contentId: string) => {
      let path = copies.get(contentId);
      if (!path) copies.set(contentId, (path = copySource(contentId, folder)));
      return path;
    };
    const picture = await Promise.all(
      item.plan.picture.map(async (clip, i) =>
        clips.has(i)
          ? { ...clip, source: { ...clip.source, path: await copy(clip.source.contentId!) } }
          : clip,
      ),
    );
    const plan: ExportPlan = {
      ...item.plan,
      picture,
      output: { ...item.plan.output, path: join(folder, 'output.mp4') },
      segmented: {
        dir,
        reused: segments.map((one) => one.key).filter((key) => key !== item.key),
        parallel: 1,
        encodeOnly: true,
      },
    };
    const result = await deps.pool.run(plan, {
      timeoutMs: Math.max(1, item.deadline - Date.now()),
      signal,
      onPid: (pid, alive) => (alive ? deps.children.started(pid) : deps.children.ended(pid)),
    });
    if (!result.ok) return result;
    const path = join(dir, `${item.key}.mp4`);
    return { ok: true, segment: { key: item.key, path, bytes: (await stat(path)).size } };
  }

  /** Copies a source out of the media store (no probe: the plan has what it said), as the content id names it. */
  async function copySource(contentId: string, folder: string): Promise<string> {
    const { mediaId, etag } = mediaOf(contentId);
    const path = join(folder, `source-${mediaId}`);
    try {
      const stored = await deps.store.stat(mediaId);
      if (!stored || stored.etag !== etag) throw new Error(`${mediaId} is not in the media store as staged`);
      await pipeline(await deps.store.open(mediaId), createWriteStream(path, { flags: 'wx' }));
    } catch (error) {
      throw exportError(
        'source_fetch_failed',
        'A source of the timeline could not be read from the media store',
        error,
      );
    }
    return path;
  }

  /** A wait that ends early when the node closes. */
  const pause = (ms: number) => delay(ms, undefined, { signal: closing.signal }).catch(() => undefined);
  void (async () => {
    while (!closing.signal.aborted) {
      if (!free()) {
        await pause(FREE_POLL_MS);
        continue;
      }
      let msg: JsMsg | null;
      try {
        msg = await consumer.next({ expires: PULL_EXPIRES_MS });
      } catch (error) {
        if (closing.signal.aborted) break;
        logger.warn({ err: error }, 'segment items not pulled; trying again');
        await pause(PULL_EXPIRES_MS);
        continue;
      }
      if (!msg) continue;
      if (closing.signal.aborted) {
        msg.nak();
        break;
      }
      const task: Promise<void> = handle(msg)
        .catch((error: unknown) => logger.error({ err: error }, 'segment item failed'))
        .finally(() => tasks.delete(task));
      tasks.add(task);
    }
  })();

  let closed: Promise<void> | undefined;
  return {
    close: (graceMs) => (closed ??= closeOnce(graceMs)),
  };

  async function closeOnce(graceMs: number): Promise<void> {
    // The pull under way is not waited for (it may take PULL_EXPIRES_MS, which would hold up the node's drain):
    // an item it still brings is handed back at once.
    closing.abort();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...tasks]),
      new Promise((resolve) => (timer = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timer);
    for (const stops of running.values()) for (const stop of stops) stop('closing');
    await Promise.allSettled([...tasks]);
    try {
      aborts.unsubscribe();
    } catch {
      // The connection closed first: the subscription went with it.
    }
  }
}

/** Ends a stopped item: back to the queue when this node shuts down, dropped when its export is over. */
function finishStopped(msg: JsMsg, why: Stop, log: Logger): void {
  if (why === 'closing') {
    log.info('segment item handed back: this node is stopping');
    msg.nak();
    return;
  }
  log.info({ why }, 'segment item stopped: its export stopped');
  msg.term();
}

/** A failure as the export would answer it: its own code, else export_failed. */
function asFailure(error: unknown): AppError {
  if (exportErrorCode(error)) return error as AppError;
  return exportError('export_failed', 'The export could not be completed', error);
}
