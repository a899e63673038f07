// The whole ffmpeg argv of a re-encoding export (without the binary): inputs, the picture and sound graphs,
// the encoders and the output.
import { ffmpegSeconds, inputArgs } from './input-args.ts';
import { PICTURE_OUT, pictureDurationSec, pictureGraph } from './picture-graph.ts';
import type { ExportPlan } from './plan.ts';
import { soundGraph } from './sound-graph.ts';
import { textFiles } from './text-graph.ts';

/**
 * How every export step starts: no prompt, no stdin (the runner owns it), and machine-readable progress on
 * stdout instead of the human status line on stderr, which then carries only the log. The filter graph runs on
 * one thread: its filters work on small frames, where slice threads cost more in hand-offs than they save
 * (measured on the effects bench timeline: a preview 5.1 → 4.0 s, a final render 13.1 → 12.0 s; the decoders
 * and x264 keep their own threads). ffmpeg has had the option since 3.4.
 */
export const RENDER_GLOBALS = [
  ...['-hide_banner', '-nostdin', '-y', '-nostats', '-progress', 'pipe:1'],
  ...['-filter_complex_threads', '1'],
];

/**
 * Metadata and chapters would otherwise be copied from the first input: a user's file (camera, GPS, a title)
 * has no business in another user's export.
 */
export const NO_USER_METADATA = ['-map_metadata', '-1', '-map_chapters', '-1'];

/**
 * The video encoder's settings: `final` as the export always had them; a preview the fastest x264 has, at a
 * quality that is still fine for looking at a change (docs/editor.md, Previews).
 */
export function videoEncoderArgs(plan: Pick<ExportPlan, 'output'>): string[] {
  const preview = plan.output.quality === 'preview';
  return [
    '-c:v',
    'libx264',
    '-preset',
    preview ? 'ultrafast' : 'veryfast',
    '-crf',
    preview ? '28' : '20',
    '-pix_fmt',
    'yuv420p',
    '-r',
    String(plan.output.fps),
  ];
}

/**
 * The files a re-encoding export reads besides its sources, to be written before ffmpeg runs: one per line
 * of text (text-graph.ts), beside the output in the export's own folder.
 */
export const exportFiles = (plan: ExportPlan): { path: string; contents: string }[] => textFiles(plan);

/**
 * The ffmpeg arguments that render `plan` to `plan.output.path`: the picture graph (video only, `[vout]`) and
 * the sound graph (`[aout]`, which reads each picture clip's own sound itself). `customSound` (tests of the
 * picture alone) replaces the sound graph with any fragment ending in `[aout]`. The files of `exportFiles`
 * must exist first.
 */
export function exportCommand(plan: ExportPlan, customSound?: string): string[] {
  const filterGraph = `${pictureGraph(plan)};${customSound ?? soundGraph(plan)}`;
  return [
    ...RENDER_GLOBALS,
    ...inputArgs(plan),
    '-filter_complex',
    filterGraph,
    '-map',
    `[${PICTURE_OUT}]`,
    '-map',
    '[aout]',
    ...NO_USER_METADATA,
    ...videoEncoderArgs(plan),
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
