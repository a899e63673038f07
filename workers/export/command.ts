// The whole ffmpeg argv of a re-encoding export (without the binary): inputs, the picture and sound graphs,
// the encoders and the output.
import { ffmpegSeconds, inputArgs } from './input-args.ts';
import { pictureDurationSec, pictureGraph } from './picture-graph.ts';
import type { ExportPlan } from './plan.ts';
import { soundGraph } from './sound-graph.ts';

/**
 * How every export step starts: no prompt, no stdin (the runner owns it), and machine-readable progress on
 * stdout instead of the human status line on stderr, which then carries only the log.
 */
export const RENDER_GLOBALS = ['-hide_banner', '-nostdin', '-y', '-nostats', '-progress', 'pipe:1'];

/**
 * Metadata and chapters would otherwise be copied from the first input: a user's file (camera, GPS, a title)
 * has no business in another user's export.
 */
export const NO_USER_METADATA = ['-map_metadata', '-1', '-map_chapters', '-1'];

/**
 * The ffmpeg arguments that render `plan` to `plan.output.path`: the picture graph with the sound graph, each
 * clip's frames and own sound joined in one concat. `customSound` (tests of the picture alone) replaces the sound
 * graph with any fragment ending in `[aout]`; the picture's concat then carries no sound.
 */
export function exportCommand(plan: ExportPlan, customSound?: string): string[] {
  const filterGraph =
    customSound === undefined
      ? `${pictureGraph(plan, true)};${soundGraph(plan, 'with-picture')}`
      : `${pictureGraph(plan)};${customSound}`;
  const { fps } = plan.output;
  return [
    ...RENDER_GLOBALS,
    ...inputArgs(plan),
    '-filter_complex',
    filterGraph,
    '-map',
    '[vout]',
    '-map',
    '[aout]',
    ...NO_USER_METADATA,
    '-c:v',
    'libx264',
    '-preset',
    'veryfast',
    '-crf',
    '20',
    '-pix_fmt',
    'yuv420p',
    '-r',
    String(fps),
    ...soundAndFileArgs(plan),
  ];
}

/**
 * The end of every export's argv, re-encoded or copied: AAC 48 kHz stereo, `+faststart`, the frame-exact
 * length and the mp4 file.
 */
export function soundAndFileArgs(plan: ExportPlan): string[] {
  const { path } = plan.output;
  return [
    '-c:a',
    'aac',
    '-ar',
    '48000',
    '-ac',
    '2',
    '-b:a',
    '192k',
    '-movflags',
    '+faststart',
    // The picture's frame-exact length (Σ clip durations on the frame grid) bounds the sound too: the graph
    // may end later (a trailing music clip) but the file ends with its last frame.
    '-t',
    ffmpegSeconds(pictureDurationSec(plan)),
    // The muxer is named rather than guessed from the extension, so a staging name without `.mp4` still
    // gives an mp4; `file:` keeps a ':' in the path from reading as a protocol.
    '-f',
    'mp4',
    `file:${path}`,
  ];
}
