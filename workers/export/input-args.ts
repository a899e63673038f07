// The `-i` arguments of an export, in the shared input numbering of plan.ts (picture clips, then sound clips,
// then the picture clips' own sound).
//
// User media is hostile (docs/editor.md, Sources are hostile input): every input is opened with the file/pipe
// protocols only and with the demuxer the probe chose, so a ".mp4" that is really an HLS or concat playlist
// is read as a broken mp4 instead of making ffmpeg open URLs or other local files. The path is given as
// `file:<path>` so that a name containing ':' can never be taken for another protocol.
//
// Trims are input options (`-ss`/`-t` before `-i`): ffmpeg then seeks to the keyframe before the cut and, since
// we decode and re-encode, drops the decoded frames before it (`-accurate_seek`, on by default). That is exact
// to the source frame and only decodes one GOP too many, where a `trim` filter would decode the whole source
// up to the cut. The timestamps of a seeked input start at 0, so the graphs need no offset per clip.
import { hasOwnSound, type ExportPlan, type ExportSource, type PictureClip } from './plan.ts';

/** Seconds as ffmpeg's duration syntax accepts them: plain decimals to the microsecond, never `1e-7`. */
export function ffmpegSeconds(seconds: number): string {
  return String(Number(Math.max(0, seconds).toFixed(6)));
}

/** Options shared by every input: the protocol allow-list and the probed demuxer, then the file itself. */
function open(source: ExportSource, options: string[]): string[] {
  return ['-protocol_whitelist', 'file,pipe', ...options, '-f', source.demuxer, '-i', `file:${source.path}`];
}

/** Seek and length of a trimmed input; no `-ss` at 0, which would only cost a seek. */
function window(trimStartSec: number, durationSec: number): string[] {
  return [
    ...(trimStartSec > 0 ? ['-ss', ffmpegSeconds(trimStartSec)] : []),
    '-t',
    ffmpegSeconds(durationSec),
  ];
}

/**
 * Decoder options of a preview's video inputs: h264's in-loop deblocking filter skipped (a quarter of its
 * decoding time; the small picture hides what it smooths). Never for `final`.
 */
export const PREVIEW_DECODE = ['-skip_loop_filter:v', 'all'];

/**
 * Source seconds a picture clip reads: its duration at its speed (a clip at speed s shows `durationSec × s`
 * seconds of its source from the trim).
 */
export const sourceSeconds = (clip: PictureClip): number =>
  clip.durationSec * (clip.speed !== undefined && clip.speed > 0 ? clip.speed : 1);

/** Every `-i` of the plan with its input options, picture clips first, then sound clips (plan.ts numbering). */
export function inputArgs(plan: ExportPlan): string[] {
  const decode = plan.output.quality === 'preview' ? PREVIEW_DECODE : [];
  const picture = plan.picture.flatMap((clip) =>
    clip.source.kind === 'image'
      ? // A still is read as its single frame, never looped (`-loop 1` decodes the file again for every output
        // frame: minutes for a large image); the picture graph repeats the scaled frame for the clip's length.
        open(clip.source, [])
      : open(clip.source, [...decode, ...window(clip.trimStartSec, sourceSeconds(clip))]),
  );
  const sound = plan.sounds.flatMap((clip) => open(clip.source, window(clip.trimStartSec, clip.durationSec)));
  // Each picture clip's own sound, from its file opened again without its video (plan.ts `pictureSoundInput`).
  const ownSound = plan.picture
    .filter(hasOwnSound)
    .flatMap((clip) => open(clip.source, ['-vn', ...window(clip.trimStartSec, sourceSeconds(clip))]));
  return [...picture, ...sound, ...ownSound];
}

/** How many inputs `inputArgs` opens (a command's own inputs are numbered from there). */
export const inputCount = (plan: ExportPlan): number =>
  plan.picture.length + plan.sounds.length + plan.picture.filter(hasOwnSound).length;

/**
 * Opens one of our own files (a concat list, a segment, a rendered half) as every input is opened: file and
 * pipe protocols only, the demuxer named.
 */
export const ownInput = (demuxer: string, path: string, options: string[] = []): string[] => [
  '-protocol_whitelist',
  'file,pipe',
  ...options,
  '-f',
  demuxer,
  '-i',
  `file:${path}`,
];
