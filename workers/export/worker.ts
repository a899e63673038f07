// The Piscina worker entry of the export pool: one task renders one plan through the runner. Piscina's own
// abort stops the worker *thread*, which would leave its ffmpeg child running (a child belongs to the process,
// not the thread), so the pool never uses it: each task carries a MessagePort instead. Over it the worker
// reports the child's pid (at spawn and at exit) and progress, and receives `abort`, which the runner turns
// into a SIGKILL of the child before the task returns.
import { writeFile } from 'node:fs/promises';
import { receiveMessageOnPort } from 'node:worker_threads';
import { exportCommand } from './command.ts';
import { fastPathCommands, fastPathEligible } from './fast-path.ts';
import { pictureTimeline } from './plan.ts';
import { runFfmpeg, type RunResult } from '../ffmpeg/runner.ts';

// The task and its port's messages are the pool's contract (work-order.ts).
export type { ExportPoolMessage, ExportTask, ExportWorkerMessage } from './work-order.ts';
import type { ExportPlan, ExportTask, ExportWorkerMessage } from './work-order.ts';

/**
 * The ffmpeg runs of a plan, in order: the fast path's copy and mux when every picture clip can be copied
 * (fast-path.ts), else the one re-encoding command. Working files go beside the output (the export's folder).
 */
async function commandsFor(plan: ExportPlan): Promise<string[][]> {
  if (!fastPathEligible(plan)) return [exportCommand(plan)];
  const files = {
    concatListPath: `${plan.output.path}.ffconcat`,
    videoOnlyPath: `${plan.output.path}.video.mp4`,
  };
  const { concatList, steps } = fastPathCommands(plan, files);
  await writeFile(files.concatListPath, concatList, { flag: 'wx' });
  return steps;
}

const isAbort = (message: unknown): boolean =>
  typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'abort';

/** Renders `task.plan` (fast path or re-encode) within `task.timeoutMs`; never throws for an ffmpeg failure. */
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
  const deadline = Date.now() + timeoutMs;
  try {
    const steps = await commandsFor(plan);
    let result: RunResult = { ok: true };
    for (const args of steps) {
      result = await runFfmpeg({
        ffmpegPath,
        args,
        totalSec: pictureTimeline(plan).totalSec,
        timeoutMs: Math.max(1, deadline - Date.now()),
        niceness,
        signal: controller.signal,
        onProgress: (fraction) => post({ type: 'progress', fraction }),
        onSpawn: (spawned) => {
          pid = spawned;
          post({ type: 'pid', pid: spawned });
        },
      });
      if (pid !== undefined) post({ type: 'exit', pid });
      pid = undefined;
      if (!result.ok) break;
    }
    return result;
  } finally {
    if (pid !== undefined) post({ type: 'exit', pid });
    port.close();
  }
}

export default exportTask;
