import { mkdir, open, readdir, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { AuditEntry, AuditQuery, AuditSink } from './audit-sink.ts';
import { systemClock, type Clock } from '../core/clock.ts';

/** Options of {@link createFileAuditSink}. */
export interface FileAuditSinkOptions {
  dir: string;
  /** A batch that would take the current file past this size goes to a new file (default 64 MiB). */
  maxFileBytes?: number;
  /** Picks the UTC day of the file a batch goes to. */
  clock?: Clock;
  /**
   * Group commit: `fdatasync` at most this often, in the background (default 1000 ms; 0 = after every batch).
   * A written batch is in the OS's hands at once (a crash of this process loses nothing written); syncing
   * every batch made the disk's flush time the ceiling of the whole service's request rate.
   */
  syncIntervalMs?: number;
}

interface OpenFile {
  day: string;
  seq: number;
  size: number;
  handle: FileHandle;
}

interface FileName {
  name: string;
  day: string;
  seq: number;
}

const FILE_NAME = /^audit-(\d{8})-(\d{3,})\.jsonl$/;

/** `audit-YYYYMMDD-NNN.jsonl` */
export function auditFileName(day: string, seq: number): string {
  return `audit-${day}-${String(seq).padStart(3, '0')}.jsonl`;
}

function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10).replaceAll('-', '');
}

/** Audit files in `dir`, oldest first (day, then sequence number, compared as numbers). */
async function listAuditFiles(dir: string): Promise<FileName[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const files: FileName[] = [];
  for (const name of names) {
    const match = FILE_NAME.exec(name);
    if (match) files.push({ name, day: match[1]!, seq: Number(match[2]) });
  }
  return files.sort((a, b) => a.day.localeCompare(b.day) || a.seq - b.seq);
}

/** An {@link AuditSink} writing rotating JSON-lines files: one per UTC day, and a new one when a file is full. */
export function createFileAuditSink(options: FileAuditSinkOptions): AuditSink {
  const { dir } = options;
  const maxFileBytes = options.maxFileBytes ?? 64 * 1024 * 1024;
  const clock = options.clock ?? systemClock;
  const syncIntervalMs = options.syncIntervalMs ?? 1000;
  let current: OpenFile | null = null;
  let unsynced: FileHandle | null = null;
  let syncTimer: NodeJS.Timeout | null = null;
  let syncing: Promise<void> = Promise.resolve();
  // Writes are chained so that two callers can never interleave or race a rotation.
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;

  async function openFile(day: string, seq: number): Promise<OpenFile> {
    const handle = await open(join(dir, auditFileName(day, seq)), 'a');
    return { day, seq, size: (await handle.stat()).size, handle };
  }

  /** The file of `day` to continue after a restart: the newest one, if it is not full and ends cleanly. */
  async function resumeOrNext(day: string, bytes: number): Promise<OpenFile> {
    await mkdir(dir, { recursive: true });
    const last = (await listAuditFiles(dir)).filter((f) => f.day === day).at(-1);
    if (!last) return openFile(day, 1);
    const path = join(dir, last.name);
    const { size } = await stat(path);
    if (size > 0 && (size + bytes > maxFileBytes || !(await endsWithNewline(path, size)))) {
      return openFile(day, last.seq + 1);
    }
    return openFile(day, last.seq);
  }

  async function fileFor(day: string, bytes: number): Promise<OpenFile> {
    if (current && current.day === day && (current.size === 0 || current.size + bytes <= maxFileBytes)) {
      return current;
    }
    const next =
      current && current.day === day ? await openFile(day, current.seq + 1) : await resumeOrNext(day, bytes);
    if (current) {
      if (unsynced === current.handle) unsynced = null;
      await syncing;
      await current.handle.datasync().catch(() => undefined);
      await current.handle.close();
    }
    current = next;
    return next;
  }

  async function append(entries: readonly AuditEntry[]): Promise<void> {
    if (closed) throw new Error('audit file sink is closed');
    if (entries.length === 0) return;
    const data = Buffer.from(entries.map((e) => JSON.stringify(e) + '\n').join(''), 'utf8');
    const file = await fileFor(utcDay(clock.now()), data.length);
    try {
      await file.handle.appendFile(data);
      file.size += data.length;
      if (syncIntervalMs === 0) await file.handle.datasync();
      else scheduleSync(file.handle);
    } catch (error) {
      // Cut a half-written batch off again, so the retry does not leave a broken line or duplicates behind.
      await file.handle.truncate(file.size).catch(() => undefined);
      throw error;
    }
  }

  /** Syncs the written file once the interval has passed; a sync failure is retried by the next one. */
  function scheduleSync(handle: FileHandle): void {
    unsynced = handle;
    if (syncTimer) return;
    syncTimer = setTimeout(() => {
      syncTimer = null;
      const target = unsynced;
      unsynced = null;
      // Beside the write chain, not in it: appends go on while the disk flushes.
      if (target) syncing = target.datasync().catch(() => void (unsynced ??= target));
    }, syncIntervalMs);
    syncTimer.unref();
  }

  async function query({ limit, key_id, kind }: AuditQuery): Promise<AuditEntry[]> {
    const found: AuditEntry[] = [];
    if (limit <= 0) return found;
    const files = (await listAuditFiles(dir)).reverse();
    for (const file of files) {
      for await (const line of readLinesBackward(join(dir, file.name))) {
        const entry = parseLine(line);
        if (!entry || (key_id !== undefined && entry.key_id !== key_id) || (kind && entry.kind !== kind)) {
          continue;
        }
        found.push(entry);
        if (found.length >= limit) return found;
      }
    }
    return found;
  }

  return {
    write(entries) {
      const run = queue.then(() => append(entries));
      queue = run.catch(() => undefined);
      return run;
    },
    query,
    async close() {
      closed = true;
      if (syncTimer) clearTimeout(syncTimer);
      syncTimer = null;
      await queue;
      await syncing;
      if (current) {
        await current.handle.datasync().catch(() => undefined);
        await current.handle.close();
      }
      current = null;
    },
  };
}

/** A stored line as an entry; `null` for a line cut short by a crash or still being written. */
function parseLine(line: string): AuditEntry | null {
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as AuditEntry)
      : null;
  } catch {
    return null;
  }
}

async function endsWithNewline(path: string, size: number): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const byte = Buffer.alloc(1);
    await handle.read(byte, 0, 1, size - 1);
    return byte[0] === 0x0a;
  } finally {
    await handle.close();
  }
}

/** Yields the lines of a file last line first, reading it in chunks from the end (stops early if the caller does). */
async function* readLinesBackward(path: string, chunkBytes = 64 * 1024): AsyncGenerator<string> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    // Rotation never deletes files, but an operator may; a vanished file simply has no entries.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    let position = (await handle.stat()).size;
    // Bytes before the first newline of what has been read so far: the tail of a line not yet complete.
    let carry = Buffer.alloc(0);
    while (position > 0) {
      const length = Math.min(chunkBytes, position);
      position -= length;
      const chunk = Buffer.alloc(length);
      await handle.read(chunk, 0, length, position);
      const data = carry.length > 0 ? Buffer.concat([chunk, carry]) : chunk;
      // Splitting bytes on 0x0a is safe: no multi-byte UTF-8 sequence contains it.
      let end = data.length;
      for (let i = data.length - 1; i >= 0; i--) {
        if (data[i] !== 0x0a) continue;
        if (end > i + 1) yield data.toString('utf8', i + 1, end);
        end = i;
      }
      carry = data.subarray(0, end);
    }
    if (carry.length > 0) yield carry.toString('utf8');
  } finally {
    await handle.close();
  }
}
