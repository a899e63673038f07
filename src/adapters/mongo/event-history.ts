import type { Db } from 'mongodb';
import type { EventHistory, ProjectEvent } from '../../ports/event-history.ts';

/** How much history is kept; a bucket goes only once it is older than both limits. */
export interface MongoEventHistoryOptions {
  /** Consecutive seqs per stored document (default 100). */
  bucketSize?: number;
  /** At least this many of a project's newest events are kept (default 1 000). */
  keepEvents?: number;
  /** Events younger than this are kept (default one hour). */
  keepMs?: number;
}

/** One stored document: the events of seqs `bucket * size + 1 .. (bucket + 1) * size` of one project. */
interface BucketDoc {
  _id: string;
  project_id: string;
  bucket: number;
  first_seq: number;
  last_seq: number;
  /** Ascending by seq, one per seq. */
  events: ProjectEvent[];
  /** When it was last written: every event in it is at least this old. */
  updated_at: Date;
}

/** Projects whose last bucket is remembered (a few hundred bytes to a few dozen KB each). */
const CACHED_PROJECTS = 1000;

const positiveInteger = (name: string, value: number): number => {
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`event history: ${name} must be a positive integer`);
  return value;
};

/**
 * The project event history in `project_event_buckets`, stored as buckets of `bucketSize` consecutive seqs,
 * not one document per event: on jongodb an insert costs time that grows with the collection while updates
 * stay cheap, so the hot path (every event of every turn) writes a new document only once per bucket.
 *
 * Each bucket is written by reading it, merging and replacing it whole (`replaceOne` with upsert; jongodb
 * has no `$push`). That read-modify-write is safe because the project's actor is the only writer of its
 * history and writes one command at a time; the only overlap left is a redelivered command on another node,
 * which writes the same seqs again, and a seq written again replaces what was there. An append spanning two
 * buckets is two writes: a crash between them leaves the first bucket written, and the redelivered command
 * writes both again.
 */
export async function createMongoEventHistory(
  db: Db,
  options: MongoEventHistoryOptions = {},
): Promise<EventHistory> {
  const bucketSize = positiveInteger('bucketSize', options.bucketSize ?? 100);
  const keepEvents = positiveInteger('keepEvents', options.keepEvents ?? 1000);
  const keepMs = options.keepMs ?? 3_600_000;
  if (!(keepMs >= 0)) throw new Error('event history: keepMs must be a number of milliseconds');

  const buckets = db.collection<BucketDoc>('project_event_buckets', { ignoreUndefined: true });
  await buckets.createIndexes([{ key: { project_id: 1, last_seq: 1 }, name: 'by_project_seq' }]);

  const bucketOf = (seq: number): number => Math.floor((seq - 1) / bucketSize);
  const bucketId = (projectId: string, bucket: number): string => `${projectId}:${bucket}`;

  /**
   * Removes the project's buckets that are older than both limits. Run only when a bucket is started, so it
   * costs one delete per `bucketSize` events; history therefore overshoots the limits by up to a bucket.
   */
  async function prune(projectId: string, head: number, now: Date): Promise<void> {
    const newestPrunable = head - keepEvents;
    if (newestPrunable < 1) return;
    await buckets.deleteMany({
      project_id: projectId,
      last_seq: { $lte: newestPrunable },
      updated_at: { $lt: new Date(now.getTime() - keepMs) },
    });
  }

  /** The bucket last written per project by this process (bounded; a miss only costs a read). */
  const lastWritten = new Map<string, BucketDoc>();
  function remember(projectId: string, doc: BucketDoc | undefined) {
    lastWritten.delete(projectId);
    if (!doc) return;
    lastWritten.set(projectId, doc);
    if (lastWritten.size > CACHED_PROJECTS) lastWritten.delete(lastWritten.keys().next().value!);
  }

  return {
    async append(projectId, events, now) {
      if (events.length === 0) return;
      const groups = new Map<number, ProjectEvent[]>();
      for (const event of events) {
        if (!Number.isInteger(event.seq) || event.seq < 1) {
          throw new Error(
            `event history: seq ${event.seq} of project ${projectId} is not a positive integer`,
          );
        }
        const bucket = bucketOf(event.seq);
        const group = groups.get(bucket) ?? [];
        group.push(event);
        groups.set(bucket, group);
      }
      const first = events[0]!.seq;
      const cached = lastWritten.get(projectId);
      // The bucket this process wrote last for the project holds everything before `first` when it ends
      // right before it (the actor numbers events without gaps): then there is nothing to read.
      const fromCache = cached !== undefined && cached.last_seq === first - 1 && groups.size === 1;
      const ids = [...groups.keys()].map((bucket) => bucketId(projectId, bucket));
      const stored = new Map<string, BucketDoc>(
        fromCache
          ? cached._id === ids[0]
            ? [[cached._id, cached]]
            : []
          : (await buckets.find({ _id: { $in: ids } }).toArray()).map((doc) => [doc._id, doc]),
      );

      let started = false;
      let head = 0;
      for (const [bucket, fresh] of groups) {
        const _id = bucketId(projectId, bucket);
        const previous = stored.get(_id);
        if (!previous) started = true;
        // Stored events from `first` on were written by an attempt that never committed (the actor gives out
        // seqs after the project's, so these seqs are being given out again now): they are dropped.
        const kept = (previous?.events ?? []).filter((event) => event.seq < first);
        const merged = [...kept, ...fresh].sort((a, b) => a.seq - b.seq);
        const first_seq = merged[0]!.seq;
        const last_seq = merged[merged.length - 1]!.seq;
        head = Math.max(head, last_seq);
        const doc: BucketDoc = {
          _id,
          project_id: projectId,
          bucket,
          first_seq,
          last_seq,
          events: merged,
          updated_at: now,
        };
        remember(projectId, undefined);
        await buckets.replaceOne({ _id }, doc, { upsert: true });
        remember(projectId, doc);
      }
      if (started) await prune(projectId, head, now);
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
      remember(projectId, undefined);
      await buckets.deleteMany({ project_id: projectId });
    },
  };
}
