// The ffmpeg commands of an export rendered in segments (segments.ts): one per picture segment (its picture
// alone, to the fixed codec parameters of segment-codec.ts), the sound mixed and encoded once, and the join —
// the segment files by the concat demuxer and stream copy, muxed with the sound, `+faststart`. Pure: argv and
// file contents.
//
// A segment reuses the whole render's builders rather than copying them. Each part is its clip's own chain
// (picture-graph.ts `clipChain`) over the clip's whole frame count — same input, same trim, same speed, same
// motion progress, the first clip's fade — and `trim=start_frame/end_frame` then keeps the part's frames, so
// they are the whole render's frames exactly. (Seeking the input to the part's start instead would anchor
// `fps` on another source frame than the whole render's at speeds ≠ 1: one frame off. The price is decoding
// a clip's frames before its part; a segment never takes frames after its part.) A transition is `xfade` over
// the two parts, built by transitions.ts `joinSegments` from a sub-plan of just those two parts, whose
// progress per frame matches the whole render's. Text is drawn by text-graph.ts with its own times: the
// segment's frames are first stamped with their times on the whole timeline (and its time base), so every
// `enable`/`alpha` expression sees the `t` it sees in the whole render.
import { createHash } from 'node:crypto';
import { NO_USER_METADATA, RENDER_GLOBALS } from './command.ts';
import { concatQuote } from './fast-path.ts';
import { ffmpegSeconds, inputArgs, ownInput } from './input-args.ts';
import { soundOnlyCommand } from './parallel-render.ts';
import { clipChain, clipFrames } from './picture-graph.ts';
import type { ExportPlan, ExportSource, PictureClip } from './plan.ts';
import { segmentCodecArgs } from './segment-codec.ts';
import {
  canonicalJson,
  joinedPixelFormat,
  planSegments,
  RENDERER_VERSION,
  textTimeBase,
  type PictureSegment,
  type SegmentKeyOptions,
} from './segments.ts';
import { textFiles, textFilters } from './text-graph.ts';
import { joinSegments } from './transitions.ts';

/** Label of a segment graph's single output. */
export const SEGMENT_OUT = 'seg';

/** A source without its sound: a segment opens only pictures (input-args.ts adds no sound input for it). */
function silent(source: ExportSource): ExportSource {
  const { audio: _audio, ...picture } = source;
  return picture;
}

/**
 * The sub-plan a segment's builders are given: its clips whole (one input each, in part order, no sound),
 * the text clips over it with their own times, written to `path` (its text files go beside it).
 */
export function segmentSubPlan(plan: ExportPlan, segment: PictureSegment, path: string): ExportPlan {
  return {
    picture: segment.parts.map((part) => {
      const clip = plan.picture[part.clip]!;
      return { ...clip, source: silent(clip.source) };
    }),
    sounds: [],
    texts: segment.texts.map((i) => plan.texts![i]!),
    output: { ...plan.output, path },
    filters: plan.filters,
  };
}

/** The files a segment's command reads besides its sources (its text lines), to be written first. */
export const segmentFiles = (
  plan: ExportPlan,
  segment: PictureSegment,
  path: string,
): { path: string; contents: string }[] => textFiles(segmentSubPlan(plan, segment, path));

/**
 * A transition's two parts as `joinSegments` sees a timeline of two clips of `frames` frames each, the
 * second coming in over the whole of the first: `xfade` from offset 0 over exactly those frames.
 */
function transitionPlan(plan: ExportPlan, segment: PictureSegment): Pick<ExportPlan, 'picture' | 'output'> {
  const { fps } = plan.output;
  const frames = segment.endFrame - segment.startFrame;
  const [out, into] = segment.parts.map((part) => plan.picture[part.clip]!) as [PictureClip, PictureClip];
  const length = frames / fps;
  return {
    picture: [
      { ...out, durationSec: length, transitionIn: undefined },
      { ...into, durationSec: length, transitionIn: { type: into.transitionIn!.type, durationSec: length } },
    ],
    output: plan.output,
  };
}

/**
 * The `-filter_complex` of one segment, ending in `[seg]`: each part's chain cut to its frames, a
 * transition's `xfade`, then the text on the whole timeline's clock, and timestamps from 0 again.
 */
export function segmentGraph(plan: ExportPlan, segment: PictureSegment, path: string): string {
  const { fps } = plan.output;
  const frames = clipFrames(plan);
  const chains = segment.parts.map((part, k) => {
    const clip = plan.picture[part.clip]!;
    const chain = [
      ...clipChain(plan, clip, frames[part.clip]!, part.clip === 0, part.fromFrame),
      `trim=start_frame=${part.fromFrame}:end_frame=${part.toFrame}`,
      'setpts=PTS-STARTPTS',
    ];
    return `[${k}:v]${chain.join(',')}[part${k}]`;
  });
  let joined = '[part0]';
  if (segment.kind === 'transition') {
    const count = segment.endFrame - segment.startFrame;
    const parts = [0, 1].map((k) => ({ label: `[part${k}]`, index: k, frames: count }));
    chains.push(...joinSegments(transitionPlan(plan, segment), parts, 'joined').chains);
    joined = '[joined]';
  }
  const texts = textFilters(segmentSubPlan(plan, segment, path));
  // The whole render's colour round trip through `xfade`'s 4:4:4, when it has one (segments.ts
  // `joinedPixelFormat`); a transition segment's own `xfade` has made it already.
  const format = joinedPixelFormat(plan) === 'yuv444p' ? ['format=yuv444p'] : [];
  const finish =
    texts.length === 0
      ? [...format, 'null']
      : [
          ...format,
          // On the frame grid, the segment's first frame numbered as on the whole timeline…
          `settb=1/${fps}`,
          `setpts=PTS-STARTPTS+${segment.startFrame}`,
          // …in the time base the whole render's text filters see (segments.ts `textTimeBase`).
          ...(textTimeBase(plan) === 'microsecond' ? ['settb=AVTB'] : []),
          ...texts,
          'setpts=PTS-STARTPTS',
        ];
  chains.push(`${joined}${finish.join(',')}[${SEGMENT_OUT}]`);
  return chains.join(';');
}

/**
 * The ffmpeg arguments that encode one segment's picture (no sound) to `path`, an mp4 with the segment
 * codec parameters and exactly the segment's frames. The files of `segmentFiles` must exist first.
 */
export function segmentCommand(
  plan: ExportPlan,
  segment: PictureSegment,
  path: string,
  encoderThreads?: number,
): string[] {
  return [
    ...RENDER_GLOBALS,
    ...inputArgs(segmentSubPlan(plan, segment, path)),
    ...['-filter_complex', segmentGraph(plan, segment, path), '-map', `[${SEGMENT_OUT}]`, '-an'],
    ...NO_USER_METADATA,
    ...segmentCodecArgs(plan),
    // Not a codec parameter of the key (segments.ts): x264's threads change its choices within the same
    // settings, never the frames it is given nor the stream's parameter sets.
    ...(encoderThreads !== undefined ? ['-threads', String(encoderThreads)] : []),
    ...['-frames:v', String(segment.endFrame - segment.startFrame)],
    ...['-f', 'mp4', `file:${path}`],
  ];
}

/**
 * The concat list of the segment files, in output order. As on the fast path (fast-path.ts `concatList`),
 * `inpoint 0` keeps each file's own timestamps and `duration` is its exact frame count over the rate, so
 * each file starts where the one before ended, on a frame.
 */
export function segmentConcatList(
  plan: Pick<ExportPlan, 'output'>,
  files: { segment: PictureSegment; path: string }[],
): string {
  const { fps } = plan.output;
  const entries = files.map(
    ({ segment, path }) =>
      `file ${concatQuote(path)}\ninpoint 0\nduration ${ffmpegSeconds((segment.endFrame - segment.startFrame) / fps)}\n`,
  );
  return `ffconcat version 1.0\n${entries.join('')}`;
}

/**
 * The join: the segments listed at `listPath` (only our own mp4 files: the concat demuxer may open `mov` and
 * nothing else) copied as they are, with the sound at `soundPath` copied too, into `plan.output.path`,
 * `+faststart`.
 */
export function joinCommand(plan: ExportPlan, files: { listPath: string; soundPath: string }): string[] {
  return [
    ...RENDER_GLOBALS,
    ...ownInput('concat', files.listPath, ['-safe', '0', '-format_whitelist', 'concat,mov']),
    ...ownInput('mov', files.soundPath),
    ...['-map', '0:v:0', '-map', '1:a:0', '-c', 'copy'],
    ...NO_USER_METADATA,
    ...['-movflags', '+faststart', '-f', 'mp4', `file:${plan.output.path}`],
  ];
}

/**
 * The cache key of an export's sound, kept beside its segments: sha256 (hex) of the sound-only command with
 * every source named by its content (`contentId`, else its path) instead of where it lies, and the loudness
 * measurement left out (the command measures it from the same inputs and graph). The command holds every
 * field that decides the sound — the clips' sources, trims, speeds, volumes and fades, the transitions'
 * cross-fades, the tracks, the picture's length, the loudness target, the encoder — and none that decides only
 * the picture (text, motion, size, fit), so an export after a change to the picture alone reuses the sound.
 */
export function soundKey(plan: ExportPlan, options: SegmentKeyOptions = {}): string {
  const sources = [...plan.picture.map((clip) => clip.source), ...plan.sounds.map((clip) => clip.source)];
  const names = new Map(sources.map((source) => [`file:${source.path}`, source.contentId ?? source.path]));
  const { measuredLoudness: _measured, ...unmeasured } = plan;
  const args = soundOnlyCommand(unmeasured, 'sound').map((arg) => {
    const content = names.get(arg);
    return content === undefined ? arg : { content };
  });
  const input = { renderer: RENDERER_VERSION, tool: options.toolVersion ?? null, sound: args };
  return createHash('sha256').update(canonicalJson(input)).digest('hex');
}

/** Where a segmented export's working files go (the caller's: a cache folder, the export's own folder). */
export interface SegmentedFiles {
  /** Where a segment's mp4 is (named by its key, so a cache can keep it). */
  segmentPath(segment: PictureSegment): string;
  /** The concat list (`SegmentedCommands.concatList`). */
  listPath: string;
  /** The sound, mixed and encoded once. */
  soundPath: string;
}

/** Everything a segmented export runs, for the caller to schedule (the encodes and the sound may run at once). */
export interface SegmentedCommands {
  /**
   * One encode per distinct segment file (two segments with the same key share one), each with the text files
   * to write before it runs; a cache skips those whose file it already has.
   */
  encodes: {
    segment: PictureSegment;
    path: string;
    files: { path: string; contents: string }[];
    args: string[];
  }[];
  /** The sound-only render (parallel-render.ts `soundOnlyCommand`). */
  sound: string[];
  /** Contents of the list to write at `listPath` before the join. */
  concatList: string;
  /** Runs once every encode and the sound have succeeded. */
  join: string[];
}

/**
 * x264's threads per segment encoder: the cores shared between the encoders that run at once, at least one.
 * One x264 per core beats fewer x264s with several threads each (on the 12-clip bench timeline, two encoders
 * of one thread each took 9.8 s where two of three threads each took 10.8 s): frame threads cost hand-offs, and
 * each encoder's filter graph runs on its own thread anyway. A lone segment (a re-export after one change)
 * gets every core.
 */
export const encoderThreads = (cores: number, atOnce: number): number =>
  Math.max(1, Math.floor(cores / Math.max(1, atOnce)));

/** How a segmented render is run: the keys' options, and x264's threads per encode (default x264's own). */
export interface SegmentedOptions extends SegmentKeyOptions {
  encoderThreads?: number;
}

/**
 * The commands of `plan` rendered in segments (check `canSegment` first: throws otherwise); the key options
 * go into the segments' keys (segments.ts).
 */
export function segmentedCommands(
  plan: ExportPlan,
  files: SegmentedFiles,
  options: SegmentedOptions = {},
): SegmentedCommands {
  const { encoderThreads, ...keyOptions } = options;
  const segments = planSegments(plan, keyOptions);
  const placed = segments.map((segment) => ({ segment, path: files.segmentPath(segment) }));
  const seen = new Set<string>();
  const encodes = placed.flatMap(({ segment, path }) => {
    if (seen.has(path)) return [];
    seen.add(path);
    return [
      {
        segment,
        path,
        files: segmentFiles(plan, segment, path),
        args: segmentCommand(plan, segment, path, encoderThreads),
      },
    ];
  });
  return {
    encodes,
    sound: soundOnlyCommand(plan, files.soundPath),
    concatList: segmentConcatList(plan, placed),
    join: joinCommand(plan, files),
  };
}
