import { MongoBulkWriteError, type Db, type Filter, type ObjectId } from 'mongodb';
import type { AuditEntry, AuditQuery, AuditSink } from './audit-sink.ts';

/** How an entry is stored: `ts` as a BSON date, so it sorts and indexes as time. */
interface AuditDocument {
  _id?: ObjectId;
  kind: AuditEntry['kind'];
  ts: Date;
  key_id: string | null;
  user_id: string | null;
  [field: string]: unknown;
}

/** Name of the collection the audit log lives in. */
export const AUDIT_COLLECTION = 'audit_log';

/** An {@link AuditSink} over the `audit_log` collection; the Db's client stays owned by the caller. */
export function createMongoAuditSink(db: Db): AuditSink {
  const collection = db.collection<AuditDocument>(AUDIT_COLLECTION);
  // Entries a failed ordered insert did store: a retry of the same batch skips them instead of duplicating.
  const stored = new WeakSet<AuditEntry>();
  let indexes: Promise<unknown> | null = null;

  function ensureIndexes(): Promise<unknown> {
    // createIndexes is a no-op for indexes that already exist; a failure is retried on the next call.
    indexes ??= collection
      .createIndexes([{ key: { ts: -1 } }, { key: { key_id: 1, ts: -1 } }, { key: { kind: 1, ts: -1 } }])
      .catch((error: unknown) => {
        indexes = null;
        throw error;
      });
    return indexes;
  }

  return {
    async write(entries) {
      await ensureIndexes();
      const todo = entries.filter((entry) => !stored.has(entry));
      if (todo.length === 0) return;
      // Fresh documents: insertMany adds `_id` to what it is given, and the caller's entries stay untouched.
      const documents = todo.map((entry): AuditDocument => ({ ...entry, ts: new Date(entry.ts) }));
      try {
        await collection.insertMany(documents, { ordered: true });
      } catch (error) {
        if (error instanceof MongoBulkWriteError) {
          // Ordered: exactly the first `insertedCount` documents went in.
          for (const entry of todo.slice(0, error.insertedCount)) stored.add(entry);
        }
        throw error;
      }
    },

    async query({ limit, key_id, kind }: AuditQuery): Promise<AuditEntry[]> {
      if (limit <= 0) return [];
      await ensureIndexes();
      const filter: Filter<AuditDocument> = {};
      if (key_id !== undefined) filter.key_id = key_id;
      if (kind !== undefined) filter.kind = kind;
      // No projection (jongodb ignores them): `_id` is dropped here instead.
      const documents = await collection.find(filter).sort({ ts: -1, _id: -1 }).limit(limit).toArray();
      return documents.map(toEntry);
    },

    async close() {
      // The app owns the client; waiting for a pending index build keeps shutdown tidy.
      await indexes?.catch(() => undefined);
    },
  };
}

function toEntry(document: AuditDocument): AuditEntry {
  const { _id, ts, ...rest } = document;
  return { ...rest, ts: ts instanceof Date ? ts.toISOString() : String(ts) };
}
