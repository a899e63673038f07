// The editor's preview player (docs/dashboard.md "The timeline"): plays the video's timeline as it is,
// in the browser, without exporting — its picture on a canvas (preview-compositor.ts) and its sound on
// WebAudio (preview-mixer.ts), both from what preview-frame.ts and preview-sound.ts work out with the
// export's arithmetic, its loudness brought to the export's by preview-loudness.ts. The page owns the time and
// whether it plays; the player draws, plays and reports.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Asset, Clip, ExportFit } from '../api-types.ts';
import { placeClips } from './placements.ts';
import { PreviewCompositor } from './preview-compositor.ts';
import { frameAt, frameView, PREVIEW_FPS, previewSize, videoLengthSec } from './preview-frame.ts';
import { LoudnessFollower } from './preview-loudness.ts';
import { PreviewMixer } from './preview-mixer.ts';
import { soundSchedule } from './preview-sound.ts';
import './preview.css';

export interface PreviewPlayerProps {
  /** The video's clips (every track). */
  clips: readonly Clip[];
  assets: readonly Asset[];
  /** The video's aspect ratio, e.g. `16:9`. */
  aspectRatio: string;
  /** The playhead, in timeline seconds. */
  timeSec: number;
  /** Called as playback advances (once a frame) and when the slider moves. */
  onTime: (sec: number) => void;
  playing: boolean;
  onPlayingChange: (playing: boolean) => void;
  /** How pictures of another shape are placed, as the export panel's `Fit` says (`fit` when not given). */
  fit?: ExportFit;
}

/** A time as m:ss.t for the time read-out. */
function clock(sec: number): string {
  const tenths = Math.max(0, Math.round(sec * 10));
  const minutes = Math.floor(tenths / 600);
  const seconds = ((tenths % 600) / 10).toFixed(1).padStart(4, '0');
  return `${minutes}:${seconds}`;
}

/** A playhead the page moved by more than this (seconds) while playing restarts playback from there. */
const SEEK_WHILE_PLAYING_SEC = 1.5 / PREVIEW_FPS;
/** How far ahead of a cut the next clip's video is readied (seconds). */
const PREROLL_SEC = 0.5;
/** How many of its own reports the player remembers (about a second of frames). */
const OWN_REPORTS_KEPT = PREVIEW_FPS;

export function PreviewPlayer(props: PreviewPlayerProps) {
  const { clips, assets, aspectRatio, timeSec, playing } = props;
  const fit = props.fit ?? 'fit';
  // The page hands new arrays on every render (each playing frame re-renders it): the timeline is worked out
  // again only when what it is made of changes, so that playback is not restarted for nothing.
  const timelineKey = JSON.stringify([clips, assets.map((a) => [a.id, a.kind, a.url, a.metadata])]);
  const placed = useMemo(() => placeClips(clips, assets), [timelineKey]);
  const schedule = useMemo(() => soundSchedule(placed), [placed]);
  const lengthSec = videoLengthSec(placed);
  const size = previewSize(aspectRatio);

  const canvasRef = useRef<HTMLCanvasElement>(null);
  const hostRef = useRef<HTMLDivElement>(null);
  const compositorRef = useRef<PreviewCompositor | null>(null);
  const mixerRef = useRef<PreviewMixer | null>(null);
  const loudnessRef = useRef<LoudnessFollower | null>(null);
  // The latest props for the animation loop and the media callbacks, which outlive a render.
  const latest = useRef(props);
  latest.current = props;
  const placedRef = useRef(placed);
  placedRef.current = placed;
  /** The last time the player reported (or was started from) while playing. */
  const reported = useRef(timeSec);
  // The times it reported lately: the page's playhead comes back as one of them, a few frames late when the
  // machine is busy, and that is no seek (restarting then would jump the clock back and stutter).
  const ownReports = useRef<number[]>([]);
  const report = (sec: number) => {
    reported.current = sec;
    ownReports.current.push(sec);
    if (ownReports.current.length > OWN_REPORTS_KEPT) ownReports.current.shift();
    latest.current.onTime(sec);
  };
  const [restarts, setRestarts] = useState(0);

  const drawAt = (sec: number, running: boolean) =>
    compositorRef.current?.draw(frameView(placedRef.current, sec), running);

  useEffect(() => {
    const canvas = canvasRef.current;
    const host = hostRef.current;
    if (!canvas || !host) return;
    const compositor = new PreviewCompositor(canvas, host, () => {
      // A picture loaded or a seek landed: show it (the loop redraws by itself while playing).
      if (!latest.current.playing) drawAt(latest.current.timeSec, false);
    });
    const mixer = new PreviewMixer();
    const loudness = new LoudnessFollower(mixer);
    compositorRef.current = compositor;
    mixerRef.current = mixer;
    loudnessRef.current = loudness;
    return () => {
      loudness.dispose();
      compositor.dispose();
      mixer.close();
      compositorRef.current = null;
      mixerRef.current = null;
      loudnessRef.current = null;
    };
    // Made once per mounted canvas.
  }, []);

  useEffect(() => {
    compositorRef.current?.prepare(assets);
    mixerRef.current?.prepare(schedule);
  }, [timelineKey]);

  // The mix's loudness, measured again (in the background) whenever what it is made of changes.
  useEffect(() => loudnessRef.current?.follow(schedule, lengthSec), [schedule, lengthSec]);

  // Paused: the frame under the playhead, again whenever it, the timeline or the placement changes.
  useEffect(() => {
    if (compositorRef.current) compositorRef.current.fit = fit;
    if (playing) return;
    reported.current = timeSec;
    drawAt(timeSec, false);
    // (drawAt reads the timeline from a ref, hence `placed` here.)
  }, [timeSec, placed, playing, size.width, size.height, fit]);

  // A seek by the page while playing (the slider, the ruler) restarts the clock and the sound from there.
  useEffect(() => {
    if (
      playing &&
      !ownReports.current.includes(timeSec) &&
      Math.abs(timeSec - reported.current) > SEEK_WHILE_PLAYING_SEC
    )
      setRestarts((n) => n + 1);
  }, [timeSec, playing]);

  // Playing: a clock from the playhead; each animation frame draws, and each new 30 fps frame is reported.
  useEffect(() => {
    const compositor = compositorRef.current;
    const mixer = mixerRef.current;
    if (!playing || !compositor || !mixer) return;
    const end = videoLengthSec(placedRef.current);
    if (end <= 0) {
      latest.current.onPlayingChange(false);
      return;
    }
    // Play at the end starts again from the beginning.
    const from = latest.current.timeSec >= end - 1 / PREVIEW_FPS ? 0 : Math.max(0, latest.current.timeSec);
    reported.current = from;
    if (from !== latest.current.timeSec) report(from);
    const leadMs = mixer.play(schedule, from) * 1000;
    const startedAt = performance.now() + leadMs;
    let frameRequest = 0;
    const tick = () => {
      // Paused already (this effect's clean-up runs after the paint that shows it): report nothing more.
      if (!latest.current.playing) return;
      const now = from + Math.max(0, performance.now() - startedAt) / 1000;
      if (now >= end) {
        report(end);
        latest.current.onPlayingChange(false);
        return;
      }
      drawAt(now, true);
      compositor.preroll(frameView(placedRef.current, Math.min(end, now + PREROLL_SEC)));
      if (frameAt(now) !== frameAt(reported.current)) report(now);
      frameRequest = requestAnimationFrame(tick);
    };
    frameRequest = requestAnimationFrame(tick);
    return () => {
      cancelAnimationFrame(frameRequest);
      mixer.stop();
      compositor.pauseAll();
    };
    // Runs again on Play, a seek while playing, or a new timeline.
  }, [playing, restarts, placed, schedule]);

  const toggle = () => {
    // Silent at once on Pause, not a frame later when the page has re-rendered.
    if (playing) {
      mixerRef.current?.stop();
      compositorRef.current?.pauseAll();
    }
    props.onPlayingChange(!playing);
  };

  return (
    <section
      aria-label="Preview"
      class="preview-player"
      tabIndex={-1}
      onKeyDown={(event) => {
        // Space plays and pauses; on the button itself the browser's own click already does.
        if (event.key === ' ' && !(event.target instanceof HTMLButtonElement)) {
          event.preventDefault();
          toggle();
        }
        // The arrow keys step one frame (the slider steps by itself).
        if (
          (event.key === 'ArrowLeft' || event.key === 'ArrowRight') &&
          !(event.target instanceof HTMLInputElement)
        ) {
          event.preventDefault();
          const frame = frameAt(timeSec) + (event.key === 'ArrowRight' ? 1 : -1);
          props.onTime(Math.min(lengthSec, Math.max(0, frame / PREVIEW_FPS)));
        }
      }}
    >
      <canvas
        ref={canvasRef}
        class="preview-canvas"
        width={size.width}
        height={size.height}
        role="img"
        aria-label="Preview picture"
        onClick={(event) => (event.currentTarget.parentElement as HTMLElement | null)?.focus()}
      />
      <div class="preview-controls">
        <button type="button" class="preview-play" onClick={toggle} disabled={lengthSec <= 0}>
          {playing ? 'Pause' : 'Play'}
        </button>
        <input
          type="range"
          class="preview-playhead"
          aria-label="Playhead"
          min={0}
          max={lengthSec}
          step={1 / PREVIEW_FPS}
          value={Math.min(timeSec, lengthSec)}
          onInput={(event) => props.onTime(Number(event.currentTarget.value))}
        />
        <span class="preview-time hint">
          {clock(timeSec)} / {clock(lengthSec)}
        </span>
      </div>
      <div ref={hostRef} class="preview-sources" aria-hidden="true" />
    </section>
  );
}
