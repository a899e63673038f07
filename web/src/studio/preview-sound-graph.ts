// The WebAudio nodes of one entry of the preview's sound schedule (preview-sound.ts), for the live mixer
// (preview-mixer.ts) and the offline render that measures the mix's loudness (preview-loudness.ts) alike, so
// that what is measured is what plays: where in its source the entry is first heard, a GainNode that follows
// its envelope, and a buffer source of its decoded sound.
import { envelopeGain, type SoundEntry } from './preview-sound.ts';

/** Where the timeline meets a context's clock: at the context second `contextStart` the timeline is at `fromSec`. */
export interface MixClock {
  context: BaseAudioContext;
  fromSec: number;
  contextStart: number;
}

/** Where an entry starts to be heard. */
export interface EntryStart {
  /** The timeline second first heard. */
  fromSec: number;
  /** The context second it is heard at. */
  when: number;
  /** The source second heard then. */
  offsetSec: number;
}

/** The context second a timeline second is heard at. */
export const contextTime = (clock: MixClock, sec: number): number =>
  clock.contextStart + (sec - clock.fromSec);

/**
 * Where `entry` starts on `clock`: at its own start, the clock's, or `laterSec` (a timeline second reached while
 * its sound was decoding), whichever is last, never before the context second `notBefore`. Undefined when
 * nothing of it is left to hear, or its source ends before.
 */
export function entryStart(
  entry: SoundEntry,
  durationSec: number,
  clock: MixClock,
  laterSec = clock.fromSec,
  notBefore = 0,
): EntryStart | undefined {
  const fromSec = Math.max(entry.startSec, laterSec, clock.fromSec);
  if (fromSec >= entry.endSec) return undefined;
  const offsetSec = entry.sourceStartSec + (fromSec - entry.startSec) * entry.rate;
  if (offsetSec >= durationSec) return undefined;
  return { fromSec, when: Math.max(notBefore, contextTime(clock, fromSec)), offsetSec };
}

/** A GainNode following `entry`'s envelope from `start` on, into `destination`. */
export function envelopeNode(
  clock: MixClock,
  entry: SoundEntry,
  start: EntryStart,
  destination: AudioNode,
): GainNode {
  const gain = clock.context.createGain();
  gain.gain.setValueAtTime(envelopeGain(entry, start.fromSec), start.when);
  for (const point of entry.envelope) {
    if (point.sec > start.fromSec)
      gain.gain.linearRampToValueAtTime(point.gain, contextTime(clock, point.sec));
  }
  gain.connect(destination);
  return gain;
}

/**
 * `buffer` played from `start` to the entry's end through `gain`, at the entry's rate (resampled, so a rate
 * other than 1 moves the pitch: the live mixer plays those from a media element instead).
 */
export function bufferSourceNode(
  clock: MixClock,
  entry: SoundEntry,
  buffer: AudioBuffer,
  start: EntryStart,
  gain: AudioNode,
): AudioBufferSourceNode {
  const source = clock.context.createBufferSource();
  source.buffer = buffer;
  if (entry.rate !== 1) source.playbackRate.value = entry.rate;
  source.connect(gain);
  source.start(start.when, start.offsetSec, (entry.endSec - start.fromSec) * entry.rate);
  return source;
}
