// The Piscina worker entry of the export pool: one task renders one plan through the runner. Piscina's own
// abort stops the worker *thread*, which would leave its ffmpeg child running (a child belongs to the process,
// not the thread), so the pool never uses it: each task carries a MessagePort instead. Over it the worker
// reports each child's pid (at spawn and at exit) and progress, and receives `abort`, which the runner turns
// into a SIGKILL of the children before the task returns. A task may run several children, one after the other
// (the loudness's measuring pass, the fast path's copy, the render) or two at once (a preview's picture and
// sound): each one's pid is reported the same way.
import { writeFile } from 'node:fs/promises';
import { receiveMessageOnPort } from 'node:worker_threads';
import { exportCommand } from './command.ts';
import { fastPathCommands, fastPathEligible } from './fast-path.ts';
import { measureCommand, measuredLoudness, needsMeasuring } from './measure-command.ts';
import { halvesCommands, rendersInHalves } from './parallel-render.ts';
import { pictureTimeline } from './plan.ts';
import { runFfmpeg, type RunResult } from '../ffmpeg/runner.ts';

// The task and its port's messages are the pool's contract (work-order.ts).
export type { ExportPoolMessage, ExportTask, ExportWorkerMessage } from './work-order.ts';
import type { ExportPlan, ExportTask, ExportWorkerMessage } from './work-order.ts';

/**
 * The ffmpeg runs of a plan, in order, each a group of children run at once: the fast path's copy and mux when
 * every picture clip can be copied (fast-path.ts); a preview's picture and sound side by side, then their mux
 * (parallel-render.ts); else the one re-encoding command. Working files go beside the output (the export's
 * folder).
 */
async function commandsFor(plan: ExportPlan): Promise<string[][][]> {
  const path = plan.output.path;
  if (fastPathEligible(plan)) {
    const files = { concatListPath: `${path}.ffconcat`, videoOnlyPath: `${path}.video.mp4` };
    const { concatList, steps } = fastPathCommands(plan, files);
    await writeFile(files.concatListPath, concatList, { flag: 'wx' });
    return steps.map((args) => [args]);
  }
  if (rendersInHalves(plan)) {
    const { halves, mux } = halvesCommands(plan, {
      picturePath: `${path}.picture.mp4`,
      soundPath: `${path}.sound.mp4`,
    });
    return [halves, [mux]];
  }
  return [[exportCommand(plan)]];
}

const isAbort = (message: unknown): boolean =>
  typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'abort';

/** Share of the export's progress that the measuring pass makes up, when there is one. */
export const MEASURE_SHARE = 0.2;

/**
 * Renders `task.plan` within `task.timeoutMs`; never throws for an ffmpeg failure. A final export with sound
 * (`needsMeasuring`) first runs the measuring pass of its loudness (measure-command.ts: the first 20 % of the
 * progress), then renders with that measurement (`measuredLoudness`); a preview, or an ffmpeg without
 * `loudnorm`, renders at once. Every child (measuring, copy, render) reports its pid at spawn and at exit, and
 * the abort and the time-out cover them all: one deadline for the whole task.
 */
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
  /** Children spawned and not yet reported gone. */
  const live = new Set<number>();
  let reported = 0;
  const deadline = Date.now() + timeoutMs;
  const totalSec = pictureTimeline(plan).totalSec;

  /**
   * One ffmpeg child, stopped by `signal`; its progress, when it reports any, fills `[from, to]` of the
   * export's.
   */
  const step = async (
    args: string[],
    from: number,
    to: number,
    signal: AbortSignal,
    keepStderr = false,
  ): Promise<RunResult> => {
    let pid: number | undefined;
    const result = await runFfmpeg({
      ffmpegPath,
      args,
      totalSec,
      timeoutMs: Math.max(1, deadline - Date.now()),
      niceness,
      signal,
      keepStderr,
      // A step without `-progress` (the fast path's copy) only says it ended; that is no share of the output.
      ...(args.includes('-progress') && {
        onProgress: (fraction: number) => {
          const overall = from + (to - from) * fraction;
          if (overall <= reported) return;
          reported = overall;
          post({ type: 'progress', fraction: overall });
        },
      }),
      onSpawn: (spawned) => {
        pid = spawned;
        live.add(spawned);
        post({ type: 'pid', pid: spawned });
      },
    });
    if (pid !== undefined && live.delete(pid)) post({ type: 'exit', pid });
    return result;
  };

  /**
   * Children run at once; the first to fail stops the others and is the group's result (a sibling stopped
   * for it would only say "aborted").
   */
  const group = async (commands: string[][], from: number, to: number): Promise<RunResult> => {
    if (commands.length === 1) return step(commands[0]!, from, to, controller.signal);
    const stop = new AbortController();
    const signal = AbortSignal.any([controller.signal, stop.signal]);
    let failed: RunResult | undefined;
    await Promise.all(
      commands.map(async (args) => {
        const result = await step(args, from, to, signal);
        if (!result.ok && !failed) {
          failed = result;
          stop.abort();
        }
      }),
    );
    return failed ?? { ok: true };
  };

  try {
    let rendered = plan;
    let from = 0;
    if (needsMeasuring(plan)) {
      const measuring = await step(measureCommand(plan), 0, MEASURE_SHARE, controller.signal, true);
      if (!measuring.ok) return measuring;
      try {
        rendered = { ...plan, measuredLoudness: measuredLoudness(measuring.stderr ?? '') };
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error);
        return { ok: false, reason: 'exit', code: 0, signal: null, stderrTail: `loudness: ${why}` };
      }
      from = MEASURE_SHARE;
    }
    let result: RunResult = { ok: true };
    const groups = await commandsFor(rendered);
    for (const [i, commands] of groups.entries()) {
      // A group followed by another never reads as done (a preview's halves before their mux); one that
      // reports no progress (the fast path's copy) takes no share.
      const reports = commands.some((args) => args.includes('-progress'));
      const to = i === groups.length - 1 ? 1 : reports ? from + (1 - from) * 0.95 : from;
      result = await group(commands, from, to);
      if (!result.ok) break;
      from = to;
    }
    return result;
  } finally {
    for (const pid of live) post({ type: 'exit', pid });
    port.close();
  }
}

export default exportTask;
