// Records of the export children: an ffmpeg child belongs to the process, so a service killed with SIGKILL
// leaves its children running. Each child gets a file `<dir>/<pid>.json` while it runs; a restarted service
// (or any node sharing the dir) kills the children of records whose owner is gone.
//
// A pid alone is not an identity: pids are reused. A record holds the child's and the owner's start time
// (field 22 of /proc/<pid>/stat, clock ticks since boot), so a reused pid — or a record from before a reboot —
// never matches and is never killed.
import { mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ExportChildren } from '../../workers/index.ts';

export interface ExportChildrenOptions {
  /** Where the records live; shared by every node of one host. */
  dir: string;
  logger: Logger;
}

interface ChildRecord {
  pid: number;
  start_time: string;
  owner_pid: number;
  owner_start_time: string;
}

/** How often, and how long, killLeftovers waits for a killed child to be gone. */
const GONE_POLL_MS = 20;
const GONE_BUDGET_MS = 2_000;

/** A process's start time and state from /proc/<pid>/stat, or null when there is no such process. */
function procStat(pid: number): { startTime: string; state: string } | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Field 2 (comm) is in parentheses and may hold spaces and ')': everything after the last ')' is fields 3…
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = rest[0];
  const startTime = rest[22 - 3];
  if (state === undefined || startTime === undefined || !/^\d+$/.test(startTime)) return null;
  // Kept as a string: ticks since boot can exceed what a JSON number holds exactly on a long-running host.
  return { startTime, state };
}

/** Whether `pid` is still the process that started at `startTime` (a zombie has already exited). */
function isSameLiveProcess(pid: number, startTime: string): boolean {
  const stat = procStat(pid);
  return stat !== null && stat.state !== 'Z' && stat.startTime === startTime;
}

/** A record file `<pid>.json`, or one being written, `.<pid>.<owner pid>.tmp`; null for anything else. */
function recordName(name: string): { pid: number; ownerPid?: number } | null {
  const match = /^(?:(\d+)\.json|\.(\d+)\.(\d+)\.tmp)$/.exec(name);
  if (match === null) return null;
  return match[1] !== undefined
    ? { pid: Number(match[1]) }
    : { pid: Number(match[2]), ownerPid: Number(match[3]) };
}

function parseRecord(text: string, pid: number): ChildRecord | null {
  try {
    const value = JSON.parse(text) as Partial<ChildRecord>;
    const pidOk = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) > 0;
    const ticksOk = (s: unknown): s is string => typeof s === 'string' && /^\d+$/.test(s);
    if (!pidOk(value.pid) || !pidOk(value.owner_pid)) return null;
    if (!ticksOk(value.start_time) || !ticksOk(value.owner_start_time)) return null;
    if (value.pid !== pid) return null;
    return value as ChildRecord;
  } catch {
    return null;
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `pid` is gone or a zombie (dead; its parent, or init for an orphan, reaps it), or at the budget. */
async function waitGone(pid: number): Promise<boolean> {
  const deadline = Date.now() + GONE_BUDGET_MS;
  for (;;) {
    const stat = procStat(pid);
    if (stat === null || stat.state === 'Z') return true;
    if (Date.now() >= deadline) return false;
    await sleep(GONE_POLL_MS);
  }
}

/** The export children's records in `dir` (port ExportChildren). */
export function createExportChildren(options: ExportChildrenOptions): ExportChildren {
  const { dir, logger } = options;
  mkdirSync(dir, { recursive: true });
  const ownerPid = process.pid;
  const own = procStat(ownerPid);
  if (own === null) throw new Error('export child records need /proc (Linux)');
  const ownerStartTime = own.startTime;

  return {
    started(pid) {
      const stat = procStat(pid);
      // Already gone (or reaped): nothing could outlive us.
      if (stat === null || stat.state === 'Z') return;
      const record: ChildRecord = {
        pid,
        start_time: stat.startTime,
        owner_pid: ownerPid,
        owner_start_time: ownerStartTime,
      };
      // Written aside and renamed, so another node's killLeftovers never reads a half-written record (and
      // deletes it as malformed). No fsync: a SIGKILLed process's writes are already in the kernel, and a
      // host crash takes the children with it (their start times then match nothing).
      const path = join(dir, `${pid}.json`);
      const temp = join(dir, `.${pid}.${ownerPid}.tmp`);
      writeFileSync(temp, JSON.stringify(record));
      renameSync(temp, path);
    },

    ended(pid) {
      unlinkQuietly(join(dir, `${pid}.json`));
    },

    async killLeftovers() {
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
      const killed: number[] = [];
      for (const name of names) {
        const named = recordName(name);
        if (named === null) continue;
        const path = join(dir, name);
        let text: string;
        try {
          text = readFileSync(path, 'utf8');
        } catch (error) {
          // Its owner ended the child meanwhile.
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
          throw error;
        }
        const record = parseRecord(text, named.pid);
        // A temp file is normally renamed at once; one left behind means its writer died before the rename.
        // Incomplete, it may still be being written: only deleted once that writer has no process.
        if (record === null && named.ownerPid !== undefined) {
          if (procStat(named.ownerPid) === null) unlinkQuietly(path);
          continue;
        }
        if (record === null) {
          logger.warn({ file: name }, 'deleting a malformed export child record');
          unlinkQuietly(path);
          continue;
        }
        // A live owner (this process, or another node on the dir) still manages its child.
        if (isSameLiveProcess(record.owner_pid, record.owner_start_time)) continue;
        if (isSameLiveProcess(record.pid, record.start_time)) {
          try {
            process.kill(record.pid, 'SIGKILL');
            killed.push(record.pid);
            logger.warn(
              { pid: record.pid, ownerPid: record.owner_pid },
              'killed an export child left by a service that is gone',
            );
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
          }
        }
        unlinkQuietly(path);
      }
      // A pid killed is not yet a pid gone; callers count on it being gone (within 2 s) when this resolves.
      const gone = await Promise.all(killed.map(waitGone));
      killed.forEach((pid, i) => {
        if (!gone[i]) logger.warn({ pid }, 'a killed export child is still there after 2 s');
      });
      return killed;
    },
  };
}
