import type { MessagePort } from 'node:worker_threads';
import type {
  ExportQuality,
  Motion,
  TextBackground,
  TextPosition,
  TextStyle,
  TransitionType,
} from '../../schemas/timeline-terms.ts';
import type { RunResult } from '../ffmpeg/runner.ts';
export type { RunResult } from '../ffmpeg/runner.ts';

// The export pool's work order: what a render is given (a timeline resolved by the service: clips in order,
// every time in seconds, every source probed and staged as a local file) and how it ends. Plain data, so it
// crosses into a Piscina worker as it is. The builders in workers/export turn an ExportPlan into ffmpeg
// arguments.

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
  /** `preview`: short side 360 px (already in width/height) and the fastest encoder settings. Default final. */
  quality?: ExportQuality;
}

/** One probed source file (user media is hostile: its demuxer comes from the probe, never auto-detection). */
export interface ExportSource {
  /** A local file (staged from the media store). */
  path: string;
  /**
   * What the file's bytes are, as the caller knows them (e.g. the stored media's id or content hash): the
   * segment cache's name for this source (segments.ts). Absent: the path stands in, which only says the same
   * file, not the same content. Scoping the cache per user is the caller's job.
   */
  contentId?: string;
  /** The demuxer ffmpeg must use (`-f`), chosen from the probe, never auto-detected. */
  demuxer: 'mov' | 'mp3' | 'wav' | 'aac' | 'png_pipe' | 'jpeg_pipe' | 'webp_pipe';
  kind: 'image' | 'video' | 'audio';
  /** Null for an image. */
  durationSec: number | null;
  /** Present when the file has a video stream (not for images). */
  video?: {
    codec: string;
    /** As stored (before rotation). */
    width: number;
    height: number;
    fps: number;
    pixFmt: string;
    /** Display rotation, 0/90/180/270 counter-clockwise (a phone's portrait video: stored landscape, 270). */
    rotation?: number;
  };
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
  /** Source seconds per timeline second (video sources; default 1): shows `durationSec × speed` of the source. */
  speed?: number;
  /** Image sources: a slow zoom or pan over the clip (default none). */
  motion?: Motion;
  /**
   * How this clip comes in over the end of the one before (it overlaps it by `durationSec`); on the first clip
   * a fade in from black that does not shorten the video. Absent: a cut.
   */
  transitionIn?: { type: TransitionType; durationSec: number };
  /** Fades of the clip's own sound, in seconds (default 0). */
  fadeInSec?: number;
  fadeOutSec?: number;
}

/** What a measuring pass of `loudnorm` reports of the mixed programme (its `print_format=json` fields). */
export interface MeasuredLoudness {
  integratedLufs: number;
  truePeakDbtp: number;
  rangeLu: number;
  thresholdLufs: number;
  offsetLu: number;
}

/** A text clip drawn over the picture (above every clip and transition), from `startSec` for `durationSec`. */
export interface TextOverlay {
  /** The words, with line breaks; written to a file for ffmpeg, never into filter syntax. */
  text: string;
  style: TextStyle;
  position: TextPosition;
  /** `#RRGGBB`. */
  color: string;
  background: TextBackground;
  startSec: number;
  durationSec: number;
  /** Opacity fades, already cut to half the clip. */
  fadeInSec: number;
  fadeOutSec: number;
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
  /** Fades in seconds (default 0). */
  fadeInSec?: number;
  fadeOutSec?: number;
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
  /**
   * The programme's loudness as a first pass measured it (EBU R128), for the second pass's normalisation;
   * absent before that pass has run.
   */
  measuredLoudness?: MeasuredLoudness;
  /** Text over the picture (default none). */
  texts?: TextOverlay[];
  output: OutputSpec;
  filters: FilterSupport;
  /**
   * Render the picture in segments (segments.ts) when the plan allows it: each segment's file is
   * `<dir>/<key>.mp4`; those of `reused` keys are there already (from the segment cache), the others are
   * encoded, at most `parallel` at once beside the sound. Absent: the whole-timeline render.
   */
  segmented?: SegmentedWork;
}

/** Where a segmented render's segments are, which of them are there already, and how many encode at once. */
export interface SegmentedWork {
  dir: string;
  reused: string[];
  parallel: number;
  /**
   * Encode the segments not in `reused` and nothing else: no loudness pass, no sound, no join (a cluster
   * node encoding segments for an export another node joins; docs/operator.md, The segment cache).
   */
  encodeOnly?: boolean;
  /**
   * Mix and encode the sound into its key's file in `dir` and nothing else: no segment, no join (the node that
   * joins a cluster's segments makes its sound while the other nodes encode them; docs/operator.md, The segment
   * cache).
   */
  soundOnly?: boolean;
}

/** The task a pool worker runs (workers/export/worker.ts): plain data plus the port, which the pool transfers. */
export interface ExportTask {
  plan: ExportPlan;
  ffmpegPath: string;
  timeoutMs: number;
  niceness: number;
  port: MessagePort;
}

/** Worker → pool. `exit` comes once the child has exited and been reaped: its pid is no longer ours to kill. */
export type ExportWorkerMessage =
  { type: 'pid'; pid: number } | { type: 'exit'; pid: number } | { type: 'progress'; fraction: number };

/** Pool → worker. */
export type ExportPoolMessage = { type: 'abort' };

export interface ExportRunOptions {
  timeoutMs: number;
  /** Aborting kills the child; the run then resolves `aborted` once it is gone. */
  signal?: AbortSignal;
  /** Share of the output written, 0..1, only ever increasing. */
  onProgress?(fraction: number): void;
  /** A child's pid when it starts (`alive`) and when it is gone (`!alive`), for the service to record. */
  onPid?(pid: number, alive: boolean): void;
}

/** Renders export plans off the event loop (port; the Piscina adapter in src/export/pool.ts). */
export interface ExportPool {
  /**
   * Renders `plan`. Resolves with how ffmpeg ended (a closed pool's runs end `aborted`); rejects only when the
   * worker thread itself failed, after its child has been killed.
   */
  run(plan: ExportPlan, options: ExportRunOptions): Promise<RunResult>;
  /** Kills every running child and stops the threads. */
  close(): Promise<void>;
}

/**
 * The export children this service started, recorded where a restarted service finds them: no ffmpeg outlives
 * its export, or a restart of the service (docs/architecture.md, The export pipeline). Adapter:
 * src/export/child-records.ts.
 */
export interface ExportChildren {
  /** Records a running child; durable when it returns (the service may be killed the next instant). */
  started(pid: number): void;
  /** Forgets a child that has exited. */
  ended(pid: number): void;
  /**
   * SIGKILLs every recorded child whose recording process is gone (a crashed or killed service) and that is
   * still the same process (not a reused pid), then forgets it. Answers the pids killed.
   */
  killLeftovers(): Promise<number[]>;
}

/**
 * One export's private folder (adapter: src/export/workspace.ts): sources copied out of the media
 * store and probed there, the output written there and stored from there. Errors are the export's
 * (docs/errors.md, Export errors): `source_fetch_failed` (502), `corrupt_source` (422),
 * `storage_unconfigured` (503).
 */
export interface ExportWorkspace {
  /** Where the encoder writes the mp4. */
  readonly outputPath: string;
  /** Copies a stored file here and probes it (once per media id). */
  stage(mediaId: string): Promise<ExportSource>;
  /** Probes the rendered output. */
  probeOutput(): Promise<ExportSource>;
  /** Stores the output under `mediaId` as `video/mp4`. */
  storeOutput(mediaId: string): Promise<void>;
  /** Removes the folder and everything in it. */
  remove(): Promise<void>;
}

export interface ExportWorkspaces {
  open(exportId: string): Promise<ExportWorkspace>;
  /** Removes folders left by exports of a crashed process (at start-up, before any export runs). */
  removeLeftovers(): Promise<void>;
}
