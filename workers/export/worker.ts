// The Piscina worker entry of the export pool: one task renders one plan through the runner. Piscina's own
// abort stops the worker *thread*, which would leave its ffmpeg child running (a child belongs to the process,
// not the thread), so the pool never uses it: each task carries a MessagePort instead. Over it the worker
// reports each child's pid (at spawn and at exit) and progress, and receives `abort`, which the runner turns
// into a SIGKILL of the children before the task returns. A task may run several children, one after the other
// (the loudness's measuring pass, the fast path's copy, the render) or two at once (a preview's picture and
// sound): each one's pid is reported the same way.
import { rm, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { receiveMessageOnPort } from 'node:worker_threads';
import { exportCommand } from './command.ts';
import { fastPathCommands, fastPathEligible } from './fast-path.ts';
import { measureCommand, measuredLoudness, needsMeasuring } from './measure-command.ts';
import { mixdownCommand, soundFromMixdownCommand } from './mixdown.ts';
import { halvesCommands, muxCommand, rendersInHalves } from './parallel-render.ts';
import { pictureTimeline } from './plan.ts';
import { canSegment, planSegments } from './segments.ts';
import { encoderThreads, segmentedCommands, soundKey } from './segment-command.ts';
import { runFfmpeg, type RunResult } from '../ffmpeg/runner.ts';

// The task and its port's messages are the pool's contract (work-order.ts).
export type { ExportPoolMessage, ExportTask, ExportWorkerMessage } from './work-order.ts';
import type { ExportPlan, ExportTask, ExportWorkerMessage } from './work-order.ts';

/**
 * What a group's runner runs: one child's arguments, or a chain of children that run one after the other in
 * the same slot (`run` spawns each; the chain answers the first failure or its last child's result).
 */
type Child =
  string[] | ((run: (args: string[], keepStderr?: boolean) => Promise<RunResult>) => Promise<RunResult>);

/** Children run at once (at most `parallel` at a time; default all), in the order given. */
interface Group {
  commands: Child[];
  parallel?: number;
}

/** A child's arguments without `-progress`: its share is counted when it ends instead. */
const withoutProgress = (args: string[]): string[] =>
  args.filter((arg, i, all) => arg !== '-progress' && all[i - 1] !== '-progress');

/** Whether `plan`'s picture renders in segments (else the fast path, the halves or the one command). */
const rendersInSegments = (plan: ExportPlan): boolean =>
  plan.segmented !== undefined && !fastPathEligible(plan) && canSegment(plan);

/** `plan` with the loudness measurement a run printed (`measuredLoudness`), or that run's failure to print one. */
function withMeasurement(plan: ExportPlan, stderr: string | undefined): ExportPlan | RunResult {
  try {
    return { ...plan, measuredLoudness: measuredLoudness(stderr ?? '') };
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return { ok: false, reason: 'exit', code: 0, signal: null, stderrTail: `loudness: ${why}` };
  }
}

const isPlan = (value: ExportPlan | RunResult): value is ExportPlan => 'output' in value;

/** Whether `plan`'s sound is made apart from its picture, by `soundChain` (segments, the fast path). */
const makesSoundApart = (plan: ExportPlan): boolean => fastPathEligible(plan) || rendersInSegments(plan);

/**
 * The sound of a plan whose picture is made apart from it, as a chain in one slot: the mixdown beside the output
 * (its loudness measured in the same pass when the plan needs it), then the sound encoded from it to
 * `soundPath` (mixdown.ts). The mixdown, as long as the programme in float PCM, is removed once it has served.
 */
const soundChain =
  (plan: ExportPlan, soundPath: string): Child =>
  async (run) => {
    const mixdownPath = `${plan.output.path}.mixdown.wav`;
    const measure = needsMeasuring(plan);
    try {
      const mixed = await run(mixdownCommand(plan, mixdownPath, measure), measure);
      if (!mixed.ok) return mixed;
      const measured = measure ? withMeasurement(plan, mixed.stderr) : plan;
      return isPlan(measured)
        ? await run(soundFromMixdownCommand(measured, mixdownPath, soundPath))
        : measured;
    } finally {
      await rm(mixdownPath, { force: true });
    }
  };

/**
 * The ffmpeg runs of a plan, in order, each a group of children run at once: the fast path's copy beside the
 * sound (`soundChain`), then their mux, when every picture clip can be copied (fast-path.ts); the segments not
 * there yet and the sound (in one slot: the segments do not wait for it), then their join, when the plan says
 * so and can be (segment-command.ts), or only the sound (`soundOnly`); a preview's picture and sound side by
 * side, then their mux (parallel-render.ts); else the one re-encoding command. Working files go beside the
 * output (the export's folder). `plan` is measured already unless its sound is made apart (`makesSoundApart`).
 */
async function commandsFor(plan: ExportPlan): Promise<Group[]> {
  const path = plan.output.path;
  if (fastPathEligible(plan)) {
    const files = { concatListPath: `${path}.ffconcat`, videoOnlyPath: `${path}.video.mp4` };
    const { concatList, copy } = fastPathCommands(plan, files);
    await writeFile(files.concatListPath, concatList, { flag: 'wx' });
    const soundPath = `${path}.sound.mp4`;
    return [
      { commands: [soundChain(plan, soundPath), copy] },
      { commands: [muxCommand(files.videoOnlyPath, soundPath, path)] },
    ];
  }
  if (rendersInSegments(plan)) {
    const { dir, reused, parallel, encodeOnly, soundOnly } = plan.segmented!;
    const listPath = `${path}.segments.ffconcat`;
    const kept = new Set(reused);
    // The sound is kept beside the segments, under its own key: a change to the picture alone reuses it.
    const sounding = soundKey(plan);
    const soundPath = join(dir, `${sounding}.mp4`);
    if (soundOnly) return [{ commands: [soundChain(plan, soundPath)] }];
    const mixes = !encodeOnly && !kept.has(sounding);
    const missing = new Set(planSegments(plan).flatMap(({ key }) => (kept.has(key) ? [] : [key]))).size;
    // The children that run at once: the encodes, and the sound beside them.
    const atOnce = Math.min(parallel, missing + (mixes ? 1 : 0));
    const files = {
      segmentPath: (segment: { key: string }) => join(dir, `${segment.key}.mp4`),
      listPath,
      soundPath,
    };
    const segmented = segmentedCommands(plan, files, {
      encoderThreads: encoderThreads(availableParallelism(), atOnce),
    });
    const encodes = segmented.encodes.filter((encode) => !kept.has(encode.segment.key));
    for (const encode of encodes) {
      for (const file of encode.files) await writeFile(file.path, file.contents, { flag: 'wx' });
    }
    const pictures = encodes.map((encode) => withoutProgress(encode.args));
    if (encodeOnly) return [{ commands: pictures, parallel }];
    await writeFile(listPath, segmented.concatList, { flag: 'wx' });
    // The sound goes first: measuring and mixing is the longest chain of one slot, and the segments fill the
    // other slots around it.
    const sound = soundChain(plan, soundPath);
    const first = mixes ? [sound, ...pictures] : pictures;
    return [{ commands: first, parallel }, { commands: [segmented.join] }];
  }
  if (rendersInHalves(plan)) {
    const { halves, mux } = halvesCommands(plan, {
      picturePath: `${path}.picture.mp4`,
      soundPath: `${path}.sound.mp4`,
    });
    return [{ commands: halves }, { commands: [mux] }];
  }
  return [{ commands: [exportCommand(plan)] }];
}

/** Whether a child reports its own progress (a chain's children are counted when the chain ends). */
const reportsProgress = (child: Child): boolean => typeof child !== 'function' && child.includes('-progress');

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
   * Children run at once, at most `parallel` at a time; the first to fail stops the others and is the group's
   * result (a sibling stopped for it would only say "aborted"). When none reports progress of its own (the
   * segments and the sound), each one's end moves the export's progress by its share.
   */
  const group = async ({ commands, parallel }: Group, from: number, to: number): Promise<RunResult> => {
    const stop = new AbortController();
    const signal = AbortSignal.any([controller.signal, stop.signal]);
    const counted = !commands.some(reportsProgress);
    let failed: RunResult | undefined;
    let next = 0;
    let ended = 0;
    const runner = async () => {
      while (next < commands.length && !failed && !controller.signal.aborted) {
        const child = commands[next++]!;
        const result =
          typeof child === 'function'
            ? await child((args, keepStderr) => step(withoutProgress(args), from, to, signal, keepStderr))
            : await step(child, from, to, signal);
        if (!result.ok && !failed) {
          failed = result;
          stop.abort();
        }
        const overall = from + ((to - from) * ++ended) / commands.length;
        if (counted && result.ok && overall > reported) {
          reported = overall;
          post({ type: 'progress', fraction: overall });
        }
      }
    };
    const runners = Math.max(1, Math.min(parallel ?? commands.length, commands.length));
    await Promise.all(Array.from({ length: runners }, runner));
    if (!failed && controller.signal.aborted)
      return { ok: false, reason: 'aborted', code: null, signal: null, stderrTail: '' };
    return failed ?? { ok: true };
  };

  try {
    let rendered = plan;
    let from = 0;
    // A sound made apart from the picture is measured in its own chain, beside the picture (commandsFor); an
    // encode-only render has no sound.
    if (needsMeasuring(plan) && !makesSoundApart(plan)) {
      const measuring = await step(measureCommand(plan), 0, MEASURE_SHARE, controller.signal, true);
      if (!measuring.ok) return measuring;
      const measured = withMeasurement(plan, measuring.stderr);
      if (!isPlan(measured)) return measured;
      rendered = measured;
      from = MEASURE_SHARE;
    }
    let result: RunResult = { ok: true };
    const groups = await commandsFor(rendered);
    for (const [i, run] of groups.entries()) {
      // A group followed by another never reads as done (a preview's halves before their mux); a lone child
      // that reports no progress (the fast path's copy) takes no share.
      const reports = run.commands.length > 1 || run.commands.some(reportsProgress);
      const to = i === groups.length - 1 ? 1 : reports ? from + (1 - from) * 0.95 : from;
      result = await group(run, from, to);
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
