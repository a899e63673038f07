// A preview's render in two halves at once (docs/editor.md, Previews): ffmpeg runs a filter graph on one
// thread, so one command that draws the picture and mixes the sound leaves a core idle while the preview's
// cheap x264 waits on the graph. The picture (to a file without sound) and the sound (to a file without
// picture) are rendered by two children side by side, then muxed by stream copy. On the effects bench
// timeline the picture alone takes 3.5 s and the sound 1.2 s, where the one command took 4.0 s.
import { NO_USER_METADATA, RENDER_GLOBALS, soundAndFileArgs, videoEncoderArgs } from './command.ts';
import { ffmpegSeconds, inputArgs, ownInput } from './input-args.ts';
import { PICTURE_OUT, pictureDurationSec, pictureGraph } from './picture-graph.ts';
import type { ExportPlan } from './plan.ts';
import { soundGraph } from './sound-graph.ts';

/** Where the two halves go before the mux (the runner's own files, beside the output). */
export interface HalfFiles {
  picturePath: string;
  soundPath: string;
}

/**
 * The commands of a render in halves: `halves` run at once, then `mux` once both succeeded (it reports the
 * last of the progress).
 */
export interface HalvesCommands {
  /** The picture (reports `-progress`: it is the longer half), then the sound (silent on stdout). */
  halves: [string[], string[]];
  mux: string[];
}

/** Whether `plan` renders in halves: a preview; a final export's x264 already keeps every core busy. */
export const rendersInHalves = (plan: ExportPlan): boolean => plan.output.quality === 'preview';

/** The globals of a step that reports no progress (its stdout would only be read as the export's). */
export const QUIET_GLOBALS = RENDER_GLOBALS.filter(
  (arg, i, all) => arg !== '-progress' && all[i - 1] !== '-progress',
);

/**
 * The sound of `plan` alone, mixed by the export's sound graph and encoded as the export encodes it (AAC,
 * the picture's exact length), to `soundPath`, for a mux by stream copy. It opens every input of the plan,
 * so the graph's input numbering holds; ffmpeg decodes only the streams the graph reads. Reports no progress.
 */
export function soundOnlyCommand(plan: ExportPlan, soundPath: string): string[] {
  return [
    ...QUIET_GLOBALS,
    ...inputArgs(plan),
    ...['-filter_complex', soundGraph(plan), '-map', '[aout]', '-vn'],
    ...NO_USER_METADATA,
    ...soundAndFileArgs({ ...plan, output: { ...plan.output, path: soundPath } }),
  ];
}

/**
 * The three commands of a render in halves. Both halves open every input of the plan (so the graphs' input
 * numbering holds); ffmpeg decodes only the streams a graph reads.
 */
export function halvesCommands(plan: ExportPlan, files: HalfFiles): HalvesCommands {
  const seconds = ffmpegSeconds(pictureDurationSec(plan));
  const picture = [
    ...RENDER_GLOBALS,
    ...inputArgs(plan),
    ...['-filter_complex', pictureGraph(plan), '-map', `[${PICTURE_OUT}]`, '-an'],
    ...NO_USER_METADATA,
    ...videoEncoderArgs(plan),
    ...['-t', seconds, '-f', 'mp4', `file:${files.picturePath}`],
  ];
  const sound = soundOnlyCommand(plan, files.soundPath);
  return { halves: [picture, sound], mux: muxCommand(files.picturePath, files.soundPath, plan.output.path) };
}

/** A picture-only mp4 and a sound-only mp4 into one at `path`, both copied, `+faststart`. Reports progress. */
export function muxCommand(picturePath: string, soundPath: string, path: string): string[] {
  return [
    ...RENDER_GLOBALS,
    ...ownInput('mov', picturePath),
    ...ownInput('mov', soundPath),
    ...['-map', '0:v:0', '-map', '1:a:0', '-c', 'copy'],
    ...NO_USER_METADATA,
    ...['-movflags', '+faststart', '-f', 'mp4', `file:${path}`],
  ];
}
