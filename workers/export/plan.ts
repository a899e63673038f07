// What an export worker is given: a timeline resolved by the service (clips in order, every time in seconds,
// every source probed and staged as a local file). Plain data, so it crosses into a Piscina worker as it is.

/** The picture of the output, from the video's aspect ratio (short side 720 px) and the export's `fit`. */
export interface OutputSpec {
  width: number;
  height: number;
  /** Constant output frame rate. */
  fps: number;
  /** `fit` pads with black bars, `fill` scales and crops (spec 4.7). */
  fit: 'fit' | 'fill';
  /** Where the mp4 is written. */
  path: string;
}

/** One probed source file (CONTRACT §4.1: user media is hostile input; the demuxer comes from the probe). */
export interface ExportSource {
  /** A local file (staged from the media store). */
  path: string;
  /** The demuxer ffmpeg must use (`-f`), chosen from the probe, never auto-detected. */
  demuxer: 'mov' | 'mp3' | 'wav' | 'aac' | 'png_pipe' | 'jpeg_pipe' | 'webp_pipe';
  kind: 'image' | 'video' | 'audio';
  /** Null for an image. */
  durationSec: number | null;
  /** Present when the file has a video stream (not for images). */
  video?: { codec: string; width: number; height: number; fps: number; pixFmt: string };
  /** Present when the file has an audio stream. */
  audio?: { codec: string; sampleRate: number; channels: number };
}

/** A clip of the video track: shown in `idx` order, one after another. */
export interface PictureClip {
  source: ExportSource;
  /** Seconds skipped at the start of a video source (0 for images). */
  trimStartSec: number;
  /** Seconds shown (an image: its duration; a video: to its end unless set). */
  durationSec: number;
  /** Gain of the clip's own audio (0..2). */
  volume: number;
}

/** A clip of an audio track (a video source's audio counts). */
export interface SoundClip {
  source: ExportSource;
  track: 'voice' | 'sfx' | 'music';
  /** Where it starts on the timeline. */
  startSec: number;
  trimStartSec: number;
  durationSec: number;
  volume: number;
}

/** Filters the resolved ffmpeg may lack (the registry's fallback build is from 2018): the export degrades. */
export interface FilterSupport {
  /** EBU R128 normalisation to −14 LUFS; without it the mix is only limited. */
  loudnorm: boolean;
  /** Music ducked under voice; without it music plays at its volume. */
  sidechaincompress: boolean;
}

export interface ExportPlan {
  picture: PictureClip[];
  sounds: SoundClip[];
  output: OutputSpec;
  filters: FilterSupport;
}

/**
 * ffmpeg input numbering shared by every builder: one input per picture clip in order, then one per sound
 * clip (an image is looped for its own clip; a file used twice is opened twice, which keeps each clip's trim
 * independent and the graph free of `split`).
 */
export const pictureInput = (index: number): number => index;
export const soundInput = (plan: Pick<ExportPlan, 'picture'>, index: number): number =>
  plan.picture.length + index;

/** Where each picture clip starts on the timeline, and the whole duration (the sum of picture clips). */
export function pictureTimeline(plan: Pick<ExportPlan, 'picture'>): { starts: number[]; totalSec: number } {
  const starts: number[] = [];
  let at = 0;
  for (const clip of plan.picture) {
    starts.push(at);
    at += clip.durationSec;
  }
  return { starts, totalSec: at };
}
