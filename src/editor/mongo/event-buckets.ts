import { BSON } from 'mongodb';
import type { ProjectEvent } from '../../../actors/index.ts';

/**
 * One stored document: events of consecutive seqs `first_seq .. last_seq` of one project, at most
 * `bucketSize` of them and at most about `bucketBytes` of them (or one larger event). A project's buckets
 * do not overlap. Documents written by the fixed-boundary version (`_id` `<project>:<bucket index>`, seqs
 * `index * 100 + 1 .. (index + 1) * 100`, a `bucket` field) are buckets like any other and are read as such.
 */
export interface BucketDoc {
  /** `<project>@<first_seq>` (`<project>:<index>` when written by the fixed-boundary version). */
  _id: string;
  project_id: string;
  /** Only in documents written by the fixed-boundary version. */
  bucket?: number;
  first_seq: number;
  last_seq: number;
  /** Ascending by seq, one per seq. */
  events: ProjectEvent[];
  /** When it was last written: every event in it is at least this old. */
  updated_at: Date;
}

/** The last bucket a process wrote for a project, with the BSON size of its events. */
export interface Written {
  doc: BucketDoc;
  bytes: number;
}

/** A bucket being built by an append. */
export interface Draft {
  /** The stored bucket it rewrites (undefined: a new one). */
  stored: BucketDoc | undefined;
  events: ProjectEvent[];
  bytes: number;
  /** Whether it differs from `stored` (it was truncated or got events). */
  changed: boolean;
}

/** Bytes an event takes in a bucket's BSON (as stored: `undefined` fields are left out). */
export const eventBytes = (event: ProjectEvent): number =>
  BSON.calculateObjectSize(event, { ignoreUndefined: true });

export const sumBytes = (events: ProjectEvent[]): number =>
  events.reduce((sum, event) => sum + eventBytes(event), 0);

/**
 * The buckets an append writes: the tail bucket filled first, then new ones, each up to `bucketSize` events
 * and `bucketBytes` bytes (an event larger than that by itself gets a bucket of its own). `fresh` is in seq
 * order; the tail is changed in place.
 */
export function fillBuckets(
  tail: Draft | undefined,
  fresh: ProjectEvent[],
  limits: { bucketSize: number; bucketBytes: number },
): Draft[] {
  const drafts: Draft[] = tail ? [tail] : [];
  let current = tail;
  for (const event of fresh) {
    const bytes = eventBytes(event);
    if (
      !current ||
      current.events.length >= limits.bucketSize ||
      (current.events.length > 0 && current.bytes + bytes > limits.bucketBytes)
    ) {
      current = { stored: undefined, events: [], bytes: 0, changed: true };
      drafts.push(current);
    }
    current.events.push(event);
    current.bytes += bytes;
    current.changed = true;
  }
  return drafts;
}

/** Projects whose last bucket is remembered, and how many bytes of events all of them may hold. */
const CACHED_PROJECTS = 1000;
const CACHED_BYTES = 64 * 1024 * 1024;

/**
 * The bucket last written per project by this process, with its size (bounded in projects and bytes; a
 * miss only costs a read and a delete). It is the project's newest bucket as far as this process knows.
 */
export interface LastWritten {
  get(projectId: string): Written | undefined;
  /** Remembers the project's last written bucket; `undefined` forgets it. The oldest entries go past the bounds. */
  remember(projectId: string, written: Written | undefined): void;
}

export function createLastWritten(): LastWritten {
  const lastWritten = new Map<string, Written>();
  let cachedBytes = 0;
  return {
    get: (projectId) => lastWritten.get(projectId),
    remember(projectId, written) {
      const previous = lastWritten.get(projectId);
      if (previous) {
        cachedBytes -= previous.bytes;
        lastWritten.delete(projectId);
      }
      if (!written) return;
      lastWritten.set(projectId, written);
      cachedBytes += written.bytes;
      while (lastWritten.size > CACHED_PROJECTS || (cachedBytes > CACHED_BYTES && lastWritten.size > 1)) {
        const [oldest, entry] = lastWritten.entries().next().value!;
        cachedBytes -= entry.bytes;
        lastWritten.delete(oldest);
      }
    },
  };
}
