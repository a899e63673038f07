// The ffmpeg arguments of an asset's pictures (docs/editor.md, Pictures of assets): its poster, its filmstrip
// and the peaks of its waveform. Pure: what to run, never running it (render.ts runs them).
//
// An asset's file is user media, hostile input (docs/editor.md, Sources are hostile input): every input is
// opened with the file and pipe protocols only and forced onto the demuxer its probe sniffed, as the export
// and the upload's probe open it, and given as `file:<path>` so that no name is taken for another protocol.
import { hostileInputArgs } from '../probe/probe.ts';
import type { SniffedContainer } from '../probe/sniff.ts';

/** A poster's longest side at most (a smaller picture keeps its size). */
export const POSTER_MAX_SIDE = 640;
/** Frames in a filmstrip, at most (a video with fewer frames gives one each). */
export const FILMSTRIP_FRAMES = 10;
/** The height of each filmstrip frame (and so of the sprite); its width follows the picture's aspect. */
export const FILMSTRIP_FRAME_HEIGHT = 90;
/** Waveform resolution for ordinary lengths... */
export const WAVEFORM_PEAKS_PER_SECOND = 50;
/** ...lowered for long sound so that one waveform holds at most this many peaks (an hour: 5 a second). */
export const WAVEFORM_MAX_PEAKS = 20_000;
/** The astats key whose per-slice value render.ts reads back (dBFS of the slice's largest absolute sample). */
export const PEAK_KEY = 'lavfi.astats.Overall.Peak_level';

/** No prompt, no stdin, no status line: the log on stderr carries only errors. */
const GLOBALS = ['-hide_banner', '-nostdin', '-y', '-nostats', '-v', 'error'];
/** A JPEG of middling quality (mjpeg's scale is 2..31, lower is better): pictures for a library, not prints. */
const JPEG_OUTPUT = ['-c:v', 'mjpeg', '-q:v', '5', '-f', 'image2', '-update', '1'];
/** The output's metadata comes from nowhere: a user's camera, GPS or title has no business in a thumbnail. */
const NO_METADATA = ['-map_metadata', '-1'];

/** The file to read, as the probe found it, and the stream it reads. */
export interface PictureInput {
  path: string;
  sniffed: SniffedContainer;
  /** ffprobe's index of the stream to read (a cover picture or a second stream is never taken by chance). */
  stream: number;
}

/** One input: the hostile-media options, an optional seek, then the file. */
function open(input: Pick<PictureInput, 'path' | 'sniffed'>, seekSec?: number): string[] {
  const seek = seekSec !== undefined && seekSec > 0 ? ['-ss', seconds(seekSec)] : [];
  return [...hostileInputArgs(input.sniffed), ...seek, '-i', `file:${input.path}`];
}

/** Seconds as ffmpeg's duration syntax reads them: plain decimals to the microsecond, never `1e-7`. */
function seconds(value: number): string {
  return String(Number(Math.max(0, value).toFixed(6)));
}

/** The poster's filters: fitted within `POSTER_MAX_SIDE` on its longest side, never enlarged, square pixels. */
const POSTER_FIT =
  `scale=w='min(${POSTER_MAX_SIDE},iw)':h='min(${POSTER_MAX_SIDE},ih)':` +
  'force_original_aspect_ratio=decrease,setsar=1';

/** The JPEG output of a picture labelled `label` in the graph: its one frame, to `output`. */
function jpegOutput(label: string, output: string): string[] {
  return ['-map', `[${label}]`, '-frames:v', '1', ...NO_METADATA, ...JPEG_OUTPUT, `file:${output}`];
}

/**
 * The poster: the first frame of a video, or the image, fitted within `POSTER_MAX_SIDE` on its longest side
 * and never enlarged, as one JPEG at `output`.
 */
export function posterArgs(input: PictureInput, output: string): string[] {
  const graph = `[0:${input.stream}]${POSTER_FIT}[poster]`;
  return [...GLOBALS, ...open(input), '-filter_complex', graph, ...jpegOutput('poster', output)];
}

/**
 * How many frames a filmstrip of a video shows: `FILMSTRIP_FRAMES`, or one per frame of a shorter video. With
 * no frame rate known, the full number.
 */
export function filmstripFrameCount(durationSec: number, fps: number | undefined): number {
  if (fps === undefined || !(fps > 0) || !(durationSec > 0)) return FILMSTRIP_FRAMES;
  return Math.max(1, Math.min(FILMSTRIP_FRAMES, Math.floor(durationSec * fps)));
}

/** Where the frames of a filmstrip are taken: the middle of each of `frames` equal slices of the video. */
export function filmstripTimes(durationSec: number, frames: number): number[] {
  return Array.from({ length: frames }, (_, index) => (durationSec * (index + 0.5)) / frames);
}

/**
 * Videos up to this long are read once, from the start, for their filmstrip; longer ones are seeked frame by
 * frame. One pass costs the decoding of the video up to its last frame taken; a seek costs the decoding from the
 * keyframe before it, which in a short video (a few seconds of one GOP, as generators and phones write them) is
 * the whole start of the video again for every frame.
 */
export const FILMSTRIP_ONE_PASS_MAX_SEC = 120;

/** Each filmstrip frame: `FILMSTRIP_FRAME_HEIGHT` high, as wide as its display aspect makes it (even). */
const FILMSTRIP_SCALE = `scale=w='max(2,2*trunc(${FILMSTRIP_FRAME_HEIGHT}*dar/2))':h=${FILMSTRIP_FRAME_HEIGHT},setsar=1`;

/** A filmstrip: how long the video is and how many frames it shows. */
export interface FilmstripSpec {
  durationSec: number;
  frames: number;
}

function checkFrames(frames: number): void {
  if (!Number.isInteger(frames) || frames < 1) throw new Error('a filmstrip needs at least one frame');
}

/** The one-pass filmstrip's filters: picks frames by time and tiles them into one row. */
function filmstripPick({ durationSec, frames }: FilmstripSpec): string {
  checkFrames(frames);
  if (durationSec > FILMSTRIP_ONE_PASS_MAX_SEC)
    throw new Error('a long video is seeked, not read in one pass');
  // `selected_n` frames are taken so far: the next is the first at or after the middle of the next slice.
  const pick = `select='gte(t,(selected_n+0.5)*${seconds(durationSec / frames)})'`;
  return `${pick},${FILMSTRIP_SCALE},tile=${frames}x1`;
}

/**
 * The filmstrip: one JPEG sprite, a single row of `frames` frames, frame `i` the first at or after the middle
 * of the `i`-th of `frames` equal slices of the video (`filmstripTimes`), each `FILMSTRIP_FRAME_HEIGHT` high
 * and as wide as its display aspect makes it (square pixels, even widths, so a video stored with non-square
 * pixels is shown as it plays). A video up to `FILMSTRIP_ONE_PASS_MAX_SEC` is decoded once and its frames
 * picked by time (`select`) into a tile; a longer one is opened once per frame, each input seeked to its time
 * (`-ss` before `-i`: a jump to the keyframe before it, then decoding up to it), so an hour-long video costs a
 * few GOPs per frame, never a decode of the whole file.
 */
export function filmstripArgs(input: PictureInput, video: FilmstripSpec, output: string): string[] {
  const { durationSec, frames } = video;
  checkFrames(frames);
  if (durationSec <= FILMSTRIP_ONE_PASS_MAX_SEC) {
    const graph = `[0:${input.stream}]${filmstripPick(video)}[strip]`;
    return [...GLOBALS, ...open(input), '-filter_complex', graph, ...jpegOutput('strip', output)];
  }
  const times = filmstripTimes(durationSec, frames);
  const scaled = times.map((_, index) => `[${index}:${input.stream}]${FILMSTRIP_SCALE}[f${index}]`);
  const labels = times.map((_, index) => `[f${index}]`).join('');
  const row = frames === 1 ? '[f0]null[strip]' : `${labels}hstack=inputs=${frames}[strip]`;
  return [
    ...GLOBALS,
    ...times.flatMap((time) => open(input, time)),
    '-filter_complex',
    [...scaled, row].join(';'),
    ...jpegOutput('strip', output),
  ];
}

/** How a waveform slices its sound: whole samples per peak, so every peak covers exactly the same time. */
export interface WaveformSlicing {
  peaksPerSecond: number;
  samplesPerPeak: number;
}

/**
 * The slicing of a sound of `durationSec` at `sampleRate`: `WAVEFORM_PEAKS_PER_SECOND`, fewer for a sound long
 * enough to pass `WAVEFORM_MAX_PEAKS`, and always a divisor of the sample rate (11 025 Hz: 49 a second), so
 * that `peaks_per_second` is a whole number and every slice whole samples.
 */
export function waveformSlicing(durationSec: number, sampleRate: number): WaveformSlicing {
  if (!Number.isInteger(sampleRate) || sampleRate <= 0) throw new Error(`bad sample rate ${sampleRate}`);
  const cap = durationSec > 0 ? Math.floor(WAVEFORM_MAX_PEAKS / durationSec) : WAVEFORM_PEAKS_PER_SECOND;
  let peaksPerSecond = Math.max(1, Math.min(WAVEFORM_PEAKS_PER_SECOND, cap, sampleRate));
  while (sampleRate % peaksPerSecond !== 0) peaksPerSecond -= 1;
  return { peaksPerSecond, samplesPerPeak: sampleRate / peaksPerSecond };
}

/** A path ffmpeg's filter syntax can carry quoted as it is: nothing that option or graph parsing would read. */
export const PLAIN_PATH = /^[A-Za-z0-9/_.-]+$/;

/** Where a waveform's peaks go and how they are measured. */
export interface WaveformSpec {
  slicing: WaveformSlicing;
  /** A scratch path of ours; one with characters the filter syntax would read is refused. */
  peaksFile: string;
  /** When the ffmpeg's astats can measure the peak level alone (astats-options.ts). */
  peakAlone?: boolean;
}

function waveformFilters({ slicing, peaksFile, peakAlone }: WaveformSpec): string {
  if (!PLAIN_PATH.test(peaksFile)) throw new Error(`the peaks file needs a plain path: ${peaksFile}`);
  const measure = peakAlone ? ':measure_perchannel=none:measure_overall=Peak_level' : '';
  return [
    `asetnsamples=n=${slicing.samplesPerPeak}:p=0`,
    `astats=metadata=1:reset=1${measure}`,
    `ametadata=mode=print:key=${PEAK_KEY}:file='${peaksFile}'`,
  ].join(',');
}

/** The sound's output: its filtered samples go nowhere, the peaks file is what was wanted. */
const DISCARDED_SOUND = ['-map', '[wave]', '-f', 'null', '-'];

/**
 * The peaks of the sound: the stream decoded at its own rate and channels, cut into slices of
 * `samplesPerPeak` samples (the last may be shorter), and for each slice astats' peak level — the largest
 * absolute sample of any channel, in dBFS — written as a line of `peaksFile` (read by peaks.ts). Nothing is
 * resampled or mixed down, so a peak is the file's own largest sample, not an estimate of it.
 */
export function waveformArgs(input: PictureInput, waveform: WaveformSpec): string[] {
  const graph = `[0:${input.stream}]${waveformFilters(waveform)}[wave]`;
  return [...GLOBALS, ...open(input), '-filter_complex', graph, ...DISCARDED_SOUND];
}

/** Every picture one read of a file can make: each with the stream it is made from and where it goes. */
export interface OnePassSpec {
  poster?: { stream: number; output: string };
  /** Only a video up to `FILMSTRIP_ONE_PASS_MAX_SEC`. */
  filmstrip?: FilmstripSpec & { stream: number; output: string };
  waveform?: WaveformSpec & { stream: number };
}

/**
 * The pictures of `spec` from one read of the file: one child, one demuxer, one decoder per stream, its
 * frames split between the poster and the filmstrip. Starting ffmpeg costs about as much as a short video's
 * pictures, so a video's come this way; each output is the one its own arguments above would write.
 */
export function onePassArgs(input: Omit<PictureInput, 'stream'>, spec: OnePassSpec): string[] {
  const { poster, filmstrip, waveform } = spec;
  const graph: string[] = [];
  const outputs: string[] = [];
  if (poster && filmstrip && poster.stream === filmstrip.stream) {
    graph.push(`[0:${poster.stream}]split=2[for_poster][for_strip]`);
  }
  const from = (stream: number, split: string) =>
    poster && filmstrip && poster.stream === filmstrip.stream ? `[${split}]` : `[0:${stream}]`;
  if (poster) {
    graph.push(`${from(poster.stream, 'for_poster')}${POSTER_FIT}[poster]`);
    outputs.push(...jpegOutput('poster', poster.output));
  }
  if (filmstrip) {
    graph.push(`${from(filmstrip.stream, 'for_strip')}${filmstripPick(filmstrip)}[strip]`);
    outputs.push(...jpegOutput('strip', filmstrip.output));
  }
  if (waveform) {
    graph.push(`[0:${waveform.stream}]${waveformFilters(waveform)}[wave]`);
    outputs.push(...DISCARDED_SOUND);
  }
  if (outputs.length === 0) throw new Error('one pass of nothing');
  return [...GLOBALS, ...open(input), '-filter_complex', graph.join(';'), ...outputs];
}
