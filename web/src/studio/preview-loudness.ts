// The preview's loudness normalisation (docs/dashboard.md, the preview player). The export measures its mix's
// integrated loudness in a first pass and brings it to −14 LUFS with one gain (workers/export/loudness.ts);
// the preview does the same beside its live mixer: it renders the sound schedule's mix offline, through the
// same nodes the mixer plays (preview-sound-graph.ts), measures it (loudness.ts) and hands the mixer one
// make-up gain, put before its limiter. The render runs at 24 kHz stereo, 30 s at a time (a few MB each, the
// page answering between pieces; the rendering itself is the browser's, off the page's thread), and again,
// debounced, whenever the schedule changes; until it has answered — or if it cannot — the mix plays with the
// gain it had (at first, none).
import { LoudnessMeter, makeupGainDb } from './loudness.ts';
import { bufferSourceNode, entryStart, envelopeNode, type MixClock } from './preview-sound-graph.ts';
import type { SoundEntry } from './preview-sound.ts';

/** The measuring render's sample rate: the K-weighting and the speech and music bands fit well under 12 kHz. */
export const MEASURE_SAMPLE_RATE = 24_000;
/** The length of each offline render, in seconds. */
const PIECE_SEC = 30;
/** A schedule is measured once it has stayed the same this long (a drag changes it many times a second). */
const SETTLE_MS = 400;

/**
 * The integrated loudness (LUFS) of `entries` mixed over `lengthSec`, rendered offline a piece at a time;
 * −Infinity for silence. `sound(url)` gives an entry's decoded sound (the mixer's, decoded once for both);
 * `current()` turning false stops it between pieces, answering undefined. A sped-up entry is rendered from a
 * buffer at its rate: its pitch moves, its level hardly.
 */
export async function measureMix(
  entries: readonly SoundEntry[],
  lengthSec: number,
  sound: (url: string) => Promise<AudioBuffer | null>,
  current: () => boolean,
): Promise<number | undefined> {
  const urls = [...new Set(entries.map((entry) => entry.url))];
  const decoded = new Map(await Promise.all(urls.map(async (url) => [url, await sound(url)] as const)));
  // Nothing with sound: silence, without rendering it.
  if (![...decoded.values()].some(Boolean)) return -Infinity;
  const meter = new LoudnessMeter(MEASURE_SAMPLE_RATE, 2);
  const totalFrames = Math.ceil(lengthSec * MEASURE_SAMPLE_RATE);
  const pieceFrames = PIECE_SEC * MEASURE_SAMPLE_RATE;
  for (let first = 0; first < totalFrames; first += pieceFrames) {
    if (!current()) return undefined;
    const frames = Math.min(pieceFrames, totalFrames - first);
    const fromSec = first / MEASURE_SAMPLE_RATE;
    const toSec = (first + frames) / MEASURE_SAMPLE_RATE;
    const context = new OfflineAudioContext(2, frames, MEASURE_SAMPLE_RATE);
    const clock: MixClock = { context, fromSec, contextStart: 0 };
    for (const entry of entries) {
      const buffer = decoded.get(entry.url);
      if (!buffer || entry.endSec <= fromSec || entry.startSec >= toSec) continue;
      const start = entryStart(entry, buffer.duration, clock);
      if (!start) continue;
      bufferSourceNode(clock, entry, buffer, start, envelopeNode(clock, entry, start, context.destination));
    }
    const mixed = await context.startRendering();
    meter.add([mixed.getChannelData(0), mixed.getChannelData(1)]);
  }
  return meter.integrated();
}

/** What the follower needs of the mixer: its decoded sounds, and where the gain goes. */
export interface MakeupTarget {
  buffer(url: string): Promise<AudioBuffer | null>;
  setMakeupGain(gain: number): void;
}

/** Keeps the mixer's make-up gain on the loudness of the latest schedule. */
export class LoudnessFollower {
  private generation = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The last measurement (LUFS), for a look from the outside; undefined until one has finished. */
  measuredLufs: number | undefined;

  constructor(private readonly target: MakeupTarget) {}

  /** Measures `entries` over `lengthSec` once they have settled, and sets the gain from it. */
  follow(entries: readonly SoundEntry[], lengthSec: number): void {
    const generation = ++this.generation;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.measure(entries, lengthSec, generation), SETTLE_MS);
  }

  private async measure(
    entries: readonly SoundEntry[],
    lengthSec: number,
    generation: number,
  ): Promise<void> {
    const current = () => generation === this.generation;
    let lufs: number | undefined;
    try {
      lufs = await measureMix(entries, lengthSec, (url) => this.target.buffer(url), current);
    } catch {
      // No offline rendering here (or it failed): the mix plays as mixed.
      if (current()) this.target.setMakeupGain(1);
      return;
    }
    if (lufs === undefined || !current()) return;
    this.measuredLufs = lufs;
    this.target.setMakeupGain(10 ** (makeupGainDb(lufs) / 20));
  }

  /** Stops following (the player is unmounted). */
  dispose(): void {
    this.generation++;
    clearTimeout(this.timer);
  }
}
