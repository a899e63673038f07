// Plays the preview's sound schedule (preview-sound.ts) on WebAudio from a playhead: each entry an
// AudioBufferSourceNode through a GainNode that follows its envelope (preview-sound-graph.ts), all summed
// into one make-up gain (the loudness normalisation, preview-loudness.ts) and a limiter. Each asset is
// fetched from its own (same-origin) url and decoded once; an entry whose sound is still decoding joins as
// soon as it is ready, at the place the playhead has reached by then. A source that has no sound (a silent video) is left out.
// A clip at another speed keeps its pitch, as in the export: a buffer source cannot (its playbackRate
// resamples), so its sound plays from a media element (`preservesPitch`) routed through the same gain.
import { compressorMakeupGain, LIMITER } from './preview-limiter.ts';
import { bufferSourceNode, entryStart, envelopeNode, type MixClock } from './preview-sound-graph.ts';
import type { SoundEntry } from './preview-sound.ts';

/** A little lead so that the first sounds are not scheduled in the past. */
const START_LEAD_SEC = 0.05;

export class PreviewMixer {
  private context: AudioContext | null = null;
  /** Where every sound goes: the make-up gain, then the limiter before the speakers. */
  private master: GainNode | null = null;
  /** The make-up gain to apply (linear), kept for a context made later. */
  private makeup = 1;
  private readonly buffers = new Map<string, Promise<AudioBuffer | null>>();
  /** How to silence each sound of the current playback. */
  private stoppers: (() => void)[] = [];
  private session = 0;

  /** The decoded sound of `url` (shared by every clip of that asset), or null when it has none. */
  buffer(url: string): Promise<AudioBuffer | null> {
    let pending = this.buffers.get(url);
    if (!pending) {
      const context = this.audio();
      pending = fetch(url, { credentials: 'same-origin' })
        .then((answer) =>
          answer.ok ? answer.arrayBuffer() : Promise.reject(new Error(String(answer.status))),
        )
        .then((bytes) => context.decodeAudioData(bytes))
        .catch(() => null);
      this.buffers.set(url, pending);
    }
    return pending;
  }

  private audio(): AudioContext {
    if (!this.context) {
      this.context = new AudioContext();
      // The sum is brought to the export's loudness by one gain (setMakeupGain), then held under −1.5 dBFS.
      const limiter = this.context.createDynamicsCompressor();
      limiter.threshold.value = LIMITER.thresholdDb;
      limiter.knee.value = LIMITER.kneeDb;
      limiter.ratio.value = LIMITER.ratio;
      limiter.attack.value = LIMITER.attackSec;
      limiter.release.value = LIMITER.releaseSec;
      // The compressor's own make-up gain, undone (preview-limiter.ts).
      const undo = this.context.createGain();
      undo.gain.value = 1 / compressorMakeupGain(LIMITER.thresholdDb, LIMITER.ratio);
      limiter.connect(undo);
      undo.connect(this.context.destination);
      const makeup = this.context.createGain();
      makeup.gain.value = this.makeup;
      makeup.connect(limiter);
      this.master = makeup;
    }
    return this.context;
  }

  /**
   * Sets the gain that brings the mix to the export's loudness (linear; 1 leaves it as mixed). A change while
   * playing glides over about 50 ms rather than jumping.
   */
  setMakeupGain(gain: number): void {
    this.makeup = Number.isFinite(gain) && gain > 0 ? gain : 1;
    if (this.context && this.master)
      this.master.gain.setTargetAtTime(this.makeup, this.context.currentTime, 0.05);
  }

  /** The make-up gain in force (linear). */
  get makeupGain(): number {
    return this.makeup;
  }

  /**
   * Starts decoding the entries' sounds ahead of playing (the context starts suspended until Play), and
   * forgets the sounds of files no entry plays any more: decoded sound is large (a minute of stereo at 48 kHz
   * is 23 MB), so only the timeline's own are kept.
   */
  prepare(entries: readonly SoundEntry[]): void {
    const kept = new Set(entries.map((entry) => entry.url));
    for (const url of this.buffers.keys()) if (!kept.has(url)) this.buffers.delete(url);
    for (const entry of entries) void this.buffer(entry.url);
  }

  /**
   * Plays `entries` from the timeline second `fromSec` (stopping whatever played before). Answers how many
   * seconds from now `fromSec` is heard (a scheduling lead plus the output's latency): the picture's clock
   * starts that much later, so that picture and sound stay together.
   */
  play(entries: readonly SoundEntry[], fromSec: number): number {
    this.stop();
    const context = this.audio();
    void context.resume();
    const session = ++this.session;
    const stoppers: (() => void)[] = [];
    this.stoppers = stoppers;
    const clock: MixClock = { context, fromSec, contextStart: context.currentTime + START_LEAD_SEC };
    const timelineNow = () => fromSec + Math.max(0, context.currentTime - clock.contextStart);
    for (const entry of entries) {
      if (entry.endSec <= fromSec) continue;
      void this.buffer(entry.url).then((buffer) => {
        if (!buffer || this.session !== session) return;
        // Where the playhead is by the time the sound is ready (at once when it was decoded before).
        const start = entryStart(entry, buffer.duration, clock, timelineNow(), context.currentTime);
        if (!start) return;
        const gain = envelopeNode(clock, entry, start, this.master ?? context.destination);
        if (entry.rate === 1) {
          const source = bufferSourceNode(clock, entry, buffer, start, gain);
          stoppers.push(() => {
            source.stop();
            gain.disconnect();
          });
        } else {
          const stopStretched = this.stretched(
            entry,
            gain,
            start.offsetSec,
            start.when,
            entry.endSec - start.fromSec,
          );
          stoppers.push(() => {
            stopStretched();
            gain.disconnect();
          });
        }
      });
    }
    return START_LEAD_SEC + (context.outputLatency || context.baseLatency || 0);
  }

  /**
   * A sped-up (or slowed) clip's sound with its pitch kept: a media element at the clip's rate from `offset`,
   * started at the context time `when` for `timelineSec`, through `gain`. Answers how to stop it.
   */
  private stretched(
    entry: SoundEntry,
    gain: GainNode,
    offset: number,
    when: number,
    timelineSec: number,
  ): () => void {
    const context = this.audio();
    const element = new Audio();
    element.src = entry.url;
    element.preload = 'auto';
    element.preservesPitch = true;
    element.playbackRate = entry.rate;
    element.currentTime = offset;
    const source = context.createMediaElementSource(element);
    source.connect(gain);
    const startMs = Math.max(0, (when - context.currentTime) * 1000);
    const timers = [
      setTimeout(() => {
        element.playbackRate = entry.rate;
        void element.play().catch(() => undefined);
      }, startMs),
      setTimeout(() => element.pause(), startMs + timelineSec * 1000),
    ];
    return () => {
      timers.forEach(clearTimeout);
      element.pause();
      source.disconnect();
      element.removeAttribute('src');
    };
  }

  /** Stops every sound now. */
  stop(): void {
    this.session++;
    for (const stopper of this.stoppers) {
      try {
        stopper();
      } catch {
        // already stopped
      }
    }
    this.stoppers = [];
  }

  /** Stops and lets the context go (the page left the editor). */
  close(): void {
    this.stop();
    void this.context?.close();
    this.context = null;
    this.master = null;
    this.buffers.clear();
  }
}
