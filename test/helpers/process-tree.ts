// The processes of a test's service, read from /proc (Linux): who runs below whom, in which process group, and
// whether a pid still runs.
import { readdirSync, readFileSync } from 'node:fs';

/** One process as /proc/<pid>/stat shows it. */
export interface ProcessInfo {
  pid: number;
  /** The executable's name (at most 15 characters), e.g. `node`, `jongodb`, `ffmpeg`. */
  comm: string;
  /** R, S, D, Z (zombie: exited, not yet reaped), ... */
  state: string;
  ppid: number;
  pgid: number;
}

/** The process `pid`, or null when there is none. */
export function processInfo(pid: number): ProcessInfo | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The name is in parentheses and may itself hold spaces or ')': the fields after the last ')' are 3, 4, 5, ...
  const comm = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
  const [state, ppid, pgid] = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { pid, comm, state: state!, ppid: Number(ppid), pgid: Number(pgid) };
}

/** Whether `pid` runs (a zombie has already exited). */
export function isRunning(pid: number): boolean {
  const info = processInfo(pid);
  return info !== null && info.state !== 'Z';
}

/** Every process whose parent is `pid`. */
export function childrenOf(pid: number): ProcessInfo[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map((entry) => processInfo(Number(entry)))
    .filter((info): info is ProcessInfo => info !== null && info.ppid === pid);
}

/** Every process below `pid`, children first. */
export function descendantsOf(pid: number): ProcessInfo[] {
  const children = childrenOf(pid);
  return [...children, ...children.flatMap((child) => descendantsOf(child.pid))];
}
