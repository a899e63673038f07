/** One audit-log record. `kind: "request"` for every /api/** request; later kinds add their own fields. */
export interface AuditEntry {
  kind: 'request' | 'webhook_attempt';
  /** ISO 8601 UTC timestamp. */
  ts: string;
  key_id: string | null;
  user_id: string | null;
  request_id?: string;
  method?: string;
  path?: string;
  status?: number | null;
  duration_ms?: number;
  ip?: string;
  user_agent?: string | null;
  [field: string]: unknown;
}

/** Filters of the admin audit read; entries come back newest first. */
export interface AuditQuery {
  limit: number;
  key_id?: string;
  kind?: AuditEntry['kind'];
}

/** Where audit entries are kept (port). Adapters: MongoDB collection, rotating JSON-lines files. */
export interface AuditSink {
  /** Appends a batch durably; rejects when the batch could not be stored. */
  write(entries: readonly AuditEntry[]): Promise<void>;
  /** Reads entries newest first. */
  query(query: AuditQuery): Promise<AuditEntry[]>;
  close(): Promise<void>;
}
