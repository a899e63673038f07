// The export's fast path (docs/editor.md, The fast path): when every picture clip is a whole video already in
// the output's format, its video is copied (concat demuxer, no decode, no encode) and only the sound is
// rendered.
//
// Why the concat demuxer is safe here although user media is hostile (docs/architecture.md, Dependencies):
// the rule is that ffmpeg must never auto-detect a playlist *inside a user's file* — an "mp4" that is really
// an HLS or ffconcat list would make it fetch URLs or read other local files. Here the list is a file we
// write ourselves, naming only our own staged files, each on one line we quote. The user's files are still
// opened under the same rules as every other input: `-protocol_whitelist file,pipe` (the concat demuxer hands
// its allow-lists down to every file it opens) and `-format_whitelist`, which limits those nested opens to
// the probed demuxer (`mov`) — the concat demuxer itself has no per-file `-f`, so without it a crafted file
// could still be probed as something else.
//
// Two ffmpeg steps, not one. A single command can take the concat list as one more input next to the sound's
// inputs, and is about 20% faster (no intermediate file), but ffmpeg shifts every input by its start time, and
// the concat input's start is that of the first file's *earliest* stream — its audio, which starts before zero
// by the encoder's priming (1024 samples for ffmpeg's AAC, 2112 for Apple's: 21 to 48 ms) — so the copied
// picture would come out that much later than its sound, more than a frame with a phone's files. Copied into
// a file of its own first, the picture starts at its first frame, and the mux maps it with the sound.
import { NO_USER_METADATA } from './command.ts';
import { ffmpegSeconds, ownInput } from './input-args.ts';
import { clipFrames } from './picture-graph.ts';
import type { ExportPlan } from './plan.ts';

/** The only video codec and pixel format the export writes (command.ts: libx264, yuv420p). */
const OUTPUT_CODEC = 'h264';
const OUTPUT_PIX_FMT = 'yuv420p';
/** How far a source's frame rate may be from the output's and still count as the same (29.97 is not 30). */
const FPS_TOLERANCE = 0.01;

/**
 * Why `plan` cannot take the fast path, one line per reason (`clip <i>: …`), for logs and tests; empty when it
 * can. Every picture clip must be a whole video (untrimmed, its duration the source's within half a frame) in
 * the output's codec, size, frame rate and pixel format, with its own audio.
 */
export function fastPathBlockers(plan: ExportPlan): string[] {
  const { width, height, fps } = plan.output;
  if (plan.picture.length === 0) return ['no picture clips'];
  const frames = clipFrames(plan);
  // Text is drawn into the picture: it must be encoded.
  const texts = (plan.texts ?? []).length;
  const overPicture = texts > 0 ? [`${texts} text clip${texts === 1 ? '' : 's'} over the picture`] : [];
  return [
    ...overPicture,
    ...plan.picture.flatMap((clip, i) => clipBlockers(clip, i, frames, { width, height, fps })),
  ];
}

/** Why one picture clip cannot be copied. */
function clipBlockers(
  clip: ExportPlan['picture'][number],
  i: number,
  frames: number[],
  { width, height, fps }: { width: number; height: number; fps: number },
): string[] {
  const { source } = clip;
  const why = (reason: string) => `clip ${i}: ${reason}`;
  if (source.kind !== 'video' || !source.video) return [why(`not a video (${source.kind})`)];
  const reasons: string[] = [];
  // Effects change the frames (a transition, motion, speed) or are asked of this clip (fades): re-encoded.
  if (clip.transitionIn) reasons.push(why(`transition ${clip.transitionIn.type}`));
  if (clip.motion !== undefined && clip.motion !== 'none') reasons.push(why(`motion ${clip.motion}`));
  if (clip.speed !== undefined && clip.speed !== 1) reasons.push(why(`speed ${clip.speed}`));
  if ((clip.fadeInSec ?? 0) > 0 || (clip.fadeOutSec ?? 0) > 0) reasons.push(why('fades'));
  // Only the probed container can be whitelisted for the concat demuxer's nested opens.
  if (source.demuxer !== 'mov') reasons.push(why(`demuxer ${source.demuxer}, not mov`));
  if (clip.trimStartSec !== 0) reasons.push(why(`trimmed at the start (${clip.trimStartSec} s)`));
  if (source.durationSec === null || Math.abs(clip.durationSec - source.durationSec) > 0.5 / fps) {
    reasons.push(why(`not the whole source (${clip.durationSec} s of ${source.durationSec ?? '?'} s)`));
  }
  if ((frames[i] ?? 0) <= 0) reasons.push(why('shorter than a frame'));
  const { video } = source;
  if (video.codec !== OUTPUT_CODEC) reasons.push(why(`codec ${video.codec}, not ${OUTPUT_CODEC}`));
  if (video.width !== width || video.height !== height) {
    reasons.push(why(`size ${video.width}x${video.height}, not ${width}x${height}`));
  }
  if (!(Math.abs(video.fps - fps) <= FPS_TOLERANCE)) reasons.push(why(`frame rate ${video.fps}, not ${fps}`));
  if (video.pixFmt !== OUTPUT_PIX_FMT)
    reasons.push(why(`pixel format ${video.pixFmt}, not ${OUTPUT_PIX_FMT}`));
  // A copied stream keeps its stored orientation, while the export drops every source's metadata (and with
  // it the rotation): such a clip would come out on its side.
  if ((video.rotation ?? 0) % 360 !== 0) reasons.push(why(`rotated ${video.rotation}°`));
  if (!source.audio) reasons.push(why('no audio of its own'));
  return reasons;
}

/** True when the picture can be copied instead of re-encoded (`fastPathBlockers` is empty). Pure. */
export function fastPathEligible(plan: ExportPlan): boolean {
  return fastPathBlockers(plan).length === 0;
}

/**
 * A path as a quoted ffconcat token. Inside single quotes nothing is special but the quote itself, which is
 * closed, escaped and reopened (`'it'\''s'`). `file:` keeps a ':' in the name from reading as a protocol, as
 * for every other input. The list is read line by line, so a line break (or NUL) in a path could smuggle in a
 * directive: refused rather than escaped.
 */
export function concatQuote(path: string): string {
  if (/[\r\n\0]/.test(path)) throw new RangeError('a concat list path cannot contain a line break or NUL');
  return `'${`file:${path}`.replaceAll("'", "'\\''")}'`;
}

/**
 * The concat list of the plan's picture clips. `inpoint 0` keeps each file's own timestamps (otherwise the
 * demuxer subtracts the file's start, which is its audio's priming before zero, and the picture starts that
 * much late). `duration` is the clip's frame count on the re-encode path's grid (`clipFrames`), not the
 * container's: the next file starts there, so every cut is on a frame and the whole is as long as the
 * re-encode path's (`pictureDurationSec`) — where a container outlasts its video, the clip's last frame is
 * held, as the re-encode path clones it.
 */
export function concatList(plan: ExportPlan): string {
  const { fps } = plan.output;
  const frames = clipFrames(plan);
  const entries = plan.picture.map(
    (clip, i) =>
      `file ${concatQuote(clip.source.path)}\ninpoint 0\nduration ${ffmpegSeconds(frames[i]! / fps)}\n`,
  );
  return `ffconcat version 1.0\n${entries.join('')}`;
}

/** What the runner writes and runs for a fast-path export. */
export interface FastPathCommands {
  /** Contents of the list file, to be written at `concatListPath` before the copy runs. */
  concatList: string;
  /**
   * ffmpeg's arguments (without the binary) for the copy of the picture to `videoOnlyPath`. The sound is made
   * beside it (mixdown.ts), then the two are muxed (`muxCommand`). The copy reports no progress: it takes a
   * fraction of the time, and its `progress=end` would read as done.
   */
  copy: string[];
}

/** Where the runner keeps the fast path's two working files (its own, never a user's). */
export interface FastPathFiles {
  /** The concat list (`FastPathCommands.concatList`). */
  concatListPath: string;
  /** The copied picture without sound, read by the second step. */
  videoOnlyPath: string;
}

/**
 * The fast path of an eligible plan (check `fastPathEligible` first; throws otherwise): the list to write at
 * `files.concatListPath`, and the copy of the picture through the concat demuxer. Its sound is rendered as the
 * re-encode path's is (same inputs, same sound graph, same AAC settings), apart from it.
 */
export function fastPathCommands(plan: ExportPlan, files: FastPathFiles): FastPathCommands {
  const blockers = fastPathBlockers(plan);
  if (blockers.length > 0) throw new RangeError(`not eligible for the fast path: ${blockers.join('; ')}`);
  const demuxers = [...new Set(plan.picture.map((clip) => clip.source.demuxer))];
  const copy = [
    '-hide_banner',
    '-nostdin',
    '-y',
    '-nostats',
    // Absolute paths and `file:` are "unsafe" to the concat demuxer; the list is ours (see the top of the
    // file). The allow-lists pass down to the files it opens.
    ...ownInput('concat', files.concatListPath, [
      '-safe',
      '0',
      '-format_whitelist',
      ['concat', ...demuxers].join(','),
    ]),
    '-map',
    '0:v:0',
    '-c',
    'copy',
    ...NO_USER_METADATA,
    '-f',
    'mp4',
    `file:${files.videoOnlyPath}`,
  ];
  return { concatList: concatList(plan), copy };
}
