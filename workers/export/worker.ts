// The Piscina worker entry of the export pool: one task renders one plan through the runner. Piscina's own
// abort stops the worker *thread*, which would leave its ffmpeg child running (a child belongs to the process,
// not the thread), so the pool never uses it: each task carries a MessagePort instead. Over it the worker
// reports the child's pid (at spawn and at exit) and progress, and receives `abort`, which the runner turns
// into a SIGKILL of the child before the task returns.
import { receiveMessageOnPort } from 'node:worker_threads';
import { exportCommand } from './command.ts';
import { pictureTimeline } from './plan.ts';
import { runFfmpeg, type RunResult } from './runner.ts';
import { soundGraph } from './sound-graph.ts';

// The task and its port's messages are the pool's contract (src/ports/export-pool.ts).
export type { ExportPoolMessage, ExportTask, ExportWorkerMessage } from '../../src/ports/export-pool.ts';
import type { ExportTask, ExportWorkerMessage } from '../../src/ports/export-pool.ts';

const isAbort = (message: unknown): boolean =>
  typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'abort';

/** Renders `task.plan` with the re-encoding command; never throws for an ffmpeg failure. */
export async function exportTask(task: ExportTask): Promise<RunResult> {
  const { plan, ffmpegPath, timeoutMs, niceness, port } = task;
  const post = (message: ExportWorkerMessage) => port.postMessage(message);
  const controller = new AbortController();
  // An abort sent while the task waited in the queue is already on the port: read it synchronously, before
  // anything is spawned, instead of racing the listener's first delivery.
  for (let queued = receiveMessageOnPort(port); queued; queued = receiveMessageOnPort(port)) {
    if (isAbort(queued.message)) controller.abort();
  }
  port.on('message', (message: unknown) => {
    if (isAbort(message)) controller.abort();
  });
  let pid: number | undefined;
  try {
    const result = await runFfmpeg({
      ffmpegPath,
      args: exportCommand(plan, soundGraph(plan)),
      totalSec: pictureTimeline(plan).totalSec,
      timeoutMs,
      niceness,
      signal: controller.signal,
      onProgress: (fraction) => post({ type: 'progress', fraction }),
      onSpawn: (spawned) => {
        pid = spawned;
        post({ type: 'pid', pid: spawned });
      },
    });
    return result;
  } finally {
    if (pid !== undefined) post({ type: 'exit', pid });
    port.close();
  }
}

export default exportTask;
