import type { Logger } from 'pino';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { ExportPlan } from '../../workers/index.ts';
import { EXPORT_ERRORS, exportError, type ExportErrorCode } from './export-errors.ts';
import type { SegmentCache } from './segment-cache.ts';
import {
  abortSubject,
  newsSubject,
  SEGMENT_STREAM,
  workSubject,
  type SegmentAbort,
  type SegmentItem,
  type SegmentNews,
} from './segment-item.ts';

// The requesting side of segments across a cluster (docs/operator.md, The segment cache): the node that runs an
// export puts each segment still to encode on the work queue, as an item any node with a free worker takes
// (segment-encoder.ts), and waits until every one is in the segment cache. Each item's message id is
// `<exportId>:<key>`, so a publish repeated (a retried call) is one item. Nodes say on core NATS when they
// start an item, when its segment is cached and when it failed; core NATS may lose a message, so the cache is
// also looked up every few seconds, and a lost "done" costs that long at worst. A lost "failed" costs as much:
// a node keeps a segment before it acknowledges its item, and drops the item when it fails, so once the stream
// holds none of the export's items, a key still missing from the cache is one whose encode failed. If this node
// dies while it waits, the items still run (their segments land in the cache for the next try) until the
// export's deadline, after which nodes drop them.

/** One export's segments to have encoded by the cluster. */
export interface FarmRequest {
  exportId: string;
  userId: string;
  projectId: string;
  /** The export's plan, portable (segment-item.ts `portablePlan`). */
  plan: ExportPlan;
  /** The keys to encode (not in the cache when the export looked). */
  keys: string[];
  /** Epoch ms: the export's deadline, carried by every item. */
  deadline: number;
  /** Aborts the wait; the nodes are told to stop the export's encodes and drop its items. */
  signal: AbortSignal;
  /** Each message a node sends about one of the items. */
  onNews?(news: SegmentNews): void;
}

/** Segments encoded wherever a worker is free in the cluster. */
export interface SegmentFarm {
  /**
   * Resolves once every key of the request is in the segment cache. Rejects with the export error of the
   * first item that failed (say `ffmpeg_failed`: no item is tried again), or with the signal's reason once it
   * aborts; either way the other items are stopped and dropped.
   */
  encode(request: FarmRequest): Promise<void>;
}

export interface SegmentFarmDeps {
  connection: NatsConnection;
  cache: SegmentCache;
  /**
   * How often the cache (and the work queue) is looked up for keys whose "done" or "failed" did not arrive
   * (`TUNING.exportSegmentLookupMs`).
   */
  lookupMs: number;
  logger: Logger;
}

export function createSegmentFarm(deps: SegmentFarmDeps): SegmentFarm {
  const { connection, cache, logger } = deps;
  const js = jetstream(connection);
  // Made on first use (it asks the server), and again after a failure.
  let manager: Promise<JetStreamManager> | undefined;

  /** The stream's manager, made on first use and again after a failure to make it. */
  function streams(): Promise<JetStreamManager> {
    manager ??= jetstreamManager(connection).catch((error: unknown) => {
      manager = undefined;
      throw error;
    });
    return manager;
  }

  /** How many of the export's items the stream still holds: queued, or taken and not yet acknowledged. */
  async function itemsLeft(exportId: string): Promise<number> {
    const subject = workSubject(exportId);
    const info = await (await streams()).streams.info(SEGMENT_STREAM, { subjects_filter: subject });
    return info.state.subjects?.[subject] ?? 0;
  }

  /** Tells every node to stop the export's items, and purges those still queued. */
  async function abandon(exportId: string, deadline: number): Promise<void> {
    const abort: SegmentAbort = { deadline };
    connection.publish(abortSubject(exportId), JSON.stringify(abort));
    try {
      await (await streams()).streams.purge(SEGMENT_STREAM, { filter: workSubject(exportId) });
    } catch (error) {
      // The abort already makes nodes drop them; the purge only saves them the look.
      logger.warn({ err: error, export_id: exportId }, 'segment items not purged');
    }
  }

  async function encode(request: FarmRequest): Promise<void> {
    const { exportId, userId, projectId, signal } = request;
    signal.throwIfAborted();
    const pending = new Set(request.keys);
    if (pending.size === 0) return;
    // Subscribed before anything is published: no news of an item can come before it.
    const news = connection.subscribe(newsSubject(exportId));
    let lookups: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    let settled = false;
    let published = false;
    try {
      await new Promise<void>((resolve, reject) => {
        const finish = (error?: unknown) => {
          if (settled) return;
          settled = true;
          if (error === undefined) return resolve();
          void abandon(exportId, request.deadline);
          reject(error);
        };
        const arrived = (key: string) => {
          pending.delete(key);
          if (pending.size === 0) finish();
        };
        onAbort = () => finish(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        void (async () => {
          for await (const message of news) {
            let said: SegmentNews;
            try {
              said = message.json<SegmentNews>();
            } catch {
              continue;
            }
            if (!pending.has(said.key)) continue;
            request.onNews?.(said);
            if (said.state === 'encoded') arrived(said.key);
            else if (said.state === 'failed') finish(itemFailure(said));
          }
        })();
        let looking = false;
        /** The cache for keys whose "done" did not arrive; with no item left, a key still missing failed. */
        const lookUp = async () => {
          // Counted before the cache is read: an item is gone only once its segment is kept, or has failed.
          const ended = published && (await itemsLeft(exportId)) === 0;
          await Promise.all(
            [...pending].map(async (key) => {
              if (await cache.lookup(userId, projectId, key)) arrived(key);
            }),
          );
          if (ended && pending.size > 0) {
            const why = `no item left for ${pending.size} segment(s) not in the cache: their "failed" was lost`;
            finish(exportError('export_failed', 'The export could not be completed', why));
          }
        };
        lookups = setInterval(() => {
          if (looking || settled) return;
          looking = true;
          void lookUp()
            .catch((error: unknown) =>
              logger.warn({ err: error, export_id: exportId }, 'segment lookup failed'),
            )
            .finally(() => (looking = false));
        }, deps.lookupMs);
        void publishItems(request).then(
          () => (published = true),
          (error: unknown) =>
            finish(exportError('export_failed', 'The export could not be completed', error)),
        );
      });
    } finally {
      clearInterval(lookups);
      if (onAbort) signal.removeEventListener('abort', onAbort);
      news.unsubscribe();
    }
  }

  /** One item per key, each acknowledged by the stream (stored, or a duplicate of one stored). */
  async function publishItems(request: FarmRequest): Promise<void> {
    await Promise.all(
      request.keys.map((key) => {
        const item: SegmentItem = {
          export_id: request.exportId,
          user_id: request.userId,
          project_id: request.projectId,
          key,
          deadline: request.deadline,
          plan: request.plan,
        };
        return js.publish(workSubject(request.exportId), JSON.stringify(item), {
          msgID: `${request.exportId}:${key}`,
        });
      }),
    );
  }

  return { encode };
}

/** The export's answer for an item a node could not encode: its code when it is one of the export's. */
function itemFailure(news: Extract<SegmentNews, { state: 'failed' }>) {
  const code: ExportErrorCode = Object.hasOwn(EXPORT_ERRORS, news.code)
    ? (news.code as ExportErrorCode)
    : 'export_failed';
  return exportError(code, news.message, news);
}
