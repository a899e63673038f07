import type { Collection, Db } from 'mongodb';
import type { EventHistory } from '../../../actors/index.ts';
import {
  createLastWritten,
  fillBuckets,
  sumBytes,
  type BucketDoc,
  type Draft,
  type LastWritten,
} from './event-buckets.ts';

/** How much history is kept; a bucket goes only once it is older than both limits. */
export interface MongoEventHistoryOptions {
  /** At most this many consecutive seqs per stored document (default 100). */
  bucketSize?: number;
  /**
   * At most about this many bytes of events (their BSON size) per stored document (default 1 MiB). An event
   * larger than this by itself gets a document of its own.
   */
  bucketBytes?: number;
  /** At least this many of a project's newest events are kept (default 1 000). */
  keepEvents?: number;
  /** Events younger than this are kept (default one hour). */
  keepMs?: number;
}

/** The options, checked, with their defaults. */
type HistoryLimits = Required<MongoEventHistoryOptions>;

const positiveInteger = (name: string, value: number): number => {
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`event history: ${name} must be a positive integer`);
  return value;
};

function historyLimits(options: MongoEventHistoryOptions): HistoryLimits {
  const bucketSize = positiveInteger('bucketSize', options.bucketSize ?? 100);
  const bucketBytes = positiveInteger('bucketBytes', options.bucketBytes ?? 1024 * 1024);
  const keepEvents = positiveInteger('keepEvents', options.keepEvents ?? 1000);
  const keepMs = options.keepMs ?? 3_600_000;
  if (!(keepMs >= 0)) throw new Error('event history: keepMs must be a number of milliseconds');
  return { bucketSize, bucketBytes, keepEvents, keepMs };
}

/** Unique per project and start: a bucket written again from the same seq replaces the stored one. */
const bucketId = (projectId: string, firstSeq: number): string => `${projectId}@${firstSeq}`;

/**
 * The project event history in `project_event_buckets`, stored as buckets of consecutive seqs, not one
 * document per event: on jongodb an insert costs time that grows with the collection while updates stay
 * cheap, so the hot path (every event of every turn) writes a new document only once per bucket. A bucket
 * is bounded by count and by bytes: events can be large (`project.updated` carries the whole project, up to
 * ~300 KB), and a bucket is rewritten whole on every append, so an unbounded one would grow past the BSON
 * document limit (16 MB; the driver refuses to send more than ~17 MB) and make every append cost the whole
 * bucket. Buckets therefore do not start at computable seqs: each keeps `first_seq`/`last_seq`, and the one
 * holding a seq is the first with `last_seq` at or after it (index `by_project_seq`).
 *
 * Each bucket is written by reading it, merging and replacing it whole (`replaceOne` with upsert; jongodb
 * has no `$push`). That read-modify-write is safe because the project's actor is the only writer of its
 * history and writes one command at a time; the only overlap left is a redelivered command on another node,
 * which writes the same seqs again, and a seq written again replaces what was there. Appending from seq n
 * deletes the buckets that start at n or later, then rewrites the bucket holding n - 1 (truncated after it,
 * plus what fits), then writes new buckets: a crash in between leaves a gapless prefix of the history, and the
 * redelivered command writes it all again. The buckets, how an append fills them and the cache of the last
 * one written: event-buckets.ts.
 */
export async function createMongoEventHistory(
  db: Db,
  options: MongoEventHistoryOptions = {},
): Promise<EventHistory> {
  const limits = historyLimits(options);
  const buckets = db.collection<BucketDoc>('project_event_buckets', { ignoreUndefined: true });
  await buckets.createIndexes([{ key: { project_id: 1, last_seq: 1 }, name: 'by_project_seq' }]);
  const lastWritten = createLastWritten();

  return {
    async append(projectId, events, now) {
      if (events.length === 0) return;
      for (const event of events) {
        if (!Number.isInteger(event.seq) || event.seq < 1) {
          throw new Error(
            `event history: seq ${event.seq} of project ${projectId} is not a positive integer`,
          );
        }
      }
      const fresh = [...events].sort((a, b) => a.seq - b.seq);
      const first = fresh[0]!.seq;
      const { tail, clean } = await tailBefore(buckets, lastWritten, projectId, first);
      const drafts = fillBuckets(tail, fresh, limits);

      lastWritten.remember(projectId, undefined);
      // Buckets starting at `first` or later hold only seqs being written again: gone before anything is
      // written, so no reader ever sees two buckets holding the same seq.
      if (!clean) {
        await buckets.deleteMany({
          project_id: projectId,
          last_seq: { $gte: first },
          first_seq: { $gte: first },
        });
      }
      let started = false;
      for (const draft of drafts) {
        if (!draft.changed) continue;
        if (!draft.stored) started = true;
        const first_seq = draft.events[0]!.seq;
        const doc: BucketDoc = {
          _id: draft.stored?._id ?? bucketId(projectId, first_seq),
          project_id: projectId,
          first_seq,
          last_seq: draft.events[draft.events.length - 1]!.seq,
          events: draft.events,
          updated_at: now,
        };
        await buckets.replaceOne({ _id: doc._id }, doc, { upsert: true });
        lastWritten.remember(projectId, { doc, bytes: draft.bytes });
      }
      if (started) await prune(buckets, limits, projectId, fresh[fresh.length - 1]!.seq, now);
    },

    /**
     * `complete` speaks only of what is stored: it is true when the events answered run from `afterSeq + 1`
     * without a gap (or none are stored after `afterSeq`), false when the first ones were pruned. With
     * contiguous writes and pruning from the oldest end this is: no event stored, or the oldest stored seq
     * is at most `afterSeq + 1`. When nothing is stored past `afterSeq` although the project's head is
     * beyond it (all of it pruned), this still says true: the caller, who knows the head seq, decides.
     */
    async since(projectId, afterSeq) {
      const docs = await buckets
        .find({ project_id: projectId, last_seq: { $gt: afterSeq } })
        .sort({ last_seq: 1 })
        .toArray();
      const events = docs.flatMap((doc) => doc.events).filter((event) => event.seq > afterSeq);
      const from = Math.max(afterSeq, 0) + 1; // seqs start at 1
      const complete = events.every((event, i) => event.seq === from + i);
      return { events, complete };
    },

    async deleteProject(projectId) {
      lastWritten.remember(projectId, undefined);
      await buckets.deleteMany({ project_id: projectId });
    },
  };
}

/**
 * The bucket holding `first - 1`, from the cache when this process wrote it last and it ends right before
 * `first` (the actor numbers events without gaps: nothing is stored after it), otherwise read. `clean`
 * says whether nothing can be stored from `first` on; when false the caller deletes what is.
 */
async function tailBefore(
  buckets: Collection<BucketDoc>,
  lastWritten: LastWritten,
  projectId: string,
  first: number,
): Promise<{ tail: Draft | undefined; clean: boolean }> {
  const cached = lastWritten.get(projectId);
  if (cached && cached.doc.last_seq === first - 1) {
    const { doc, bytes } = cached;
    return { tail: { stored: doc, events: [...doc.events], bytes, changed: false }, clean: true };
  }
  // The first bucket ending at or after `first - 1`: it holds `first - 1` when any does.
  const [found] = await buckets
    .find({ project_id: projectId, last_seq: { $gte: first - 1 } })
    .sort({ last_seq: 1 })
    .limit(1)
    .toArray();
  if (!found || found.first_seq >= first) return { tail: undefined, clean: false };
  // Stored events from `first` on were written by an attempt that never committed (the actor gives out
  // seqs after the project's, so these seqs are being given out again now): they are dropped.
  const events = found.events.filter((event) => event.seq < first);
  const changed = events.length !== found.events.length;
  return { tail: { stored: found, events, bytes: sumBytes(events), changed }, clean: false };
}

/**
 * Removes the project's buckets that are older than both limits. Run only by an append that starts a
 * bucket, so it costs at most one delete per bucket; history therefore overshoots the limits by up to a
 * bucket. The newest bucket always stays (its last seq is the head, above `head - keepEvents`).
 */
async function prune(
  buckets: Collection<BucketDoc>,
  limits: HistoryLimits,
  projectId: string,
  head: number,
  now: Date,
): Promise<void> {
  const newestPrunable = head - limits.keepEvents;
  if (newestPrunable < 1) return;
  await buckets.deleteMany({
    project_id: projectId,
    last_seq: { $lte: newestPrunable },
    updated_at: { $lt: new Date(now.getTime() - limits.keepMs) },
  });
}
