// The service's memory as the fuzz run judges it: the resident set of its process (from /proc) after a full
// garbage collection, asked for over the inspector protocol (the service runs with --inspect on loopback), so
// garbage not yet collected does not count as growth.
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';

/** The inspector's WebSocket URL from the `Debugger listening on ws://…` line Node prints at start. */
export function inspectorUrl(lines: string[]): string {
  const url = lines.map((line) => /Debugger listening on (ws:\/\/\S+)/.exec(line)?.[1]).find(Boolean);
  if (!url) throw new Error(`the service printed no inspector URL:\n${lines.slice(0, 20).join('\n')}`);
  return url;
}

/** Runs a full garbage collection in the process behind `url`. */
export async function collectGarbage(url: string): Promise<void> {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.on('message', (data) => {
        const message = JSON.parse(String(data)) as { id?: number; error?: { message: string } };
        if (message.id !== 1) return;
        if (message.error) reject(new Error(message.error.message));
        else resolve();
      });
      socket.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' }));
    });
  } finally {
    socket.close();
  }
}

/** The resident set of process `pid`, in bytes. */
export function rssBytes(pid: number): number {
  const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (!kib) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kib) * 1024;
}

/** RSS after a GC: the lowest of a few readings a moment apart (freed pages go back to the system lazily). */
export async function settledRss(pid: number, url: string): Promise<number> {
  let lowest = Infinity;
  for (let reading = 0; reading < 3; reading++) {
    await collectGarbage(url);
    await new Promise((resolve) => setTimeout(resolve, 500));
    lowest = Math.min(lowest, rssBytes(pid));
  }
  return lowest;
}
